import AirPlayWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Streams PCM to a RAOP receiver: RTSP set-up on a `ReceiverConnection`, L16 RTP packets of
/// 352 frames paced by a monotonic clock, a sync packet every second, resend requests answered
/// from a backlog of the last 1024 packets, TEARDOWN at the end.
public final class RAOPStreamer: @unchecked Sendable {
    /// Frames per packet, as iTunes-class senders use.
    public static let framesPerPacket = 352
    /// The latency announced in sync packets: receivers play a frame this long after we send it.
    public static let latencyFrames: UInt32 = 66150  // 1.5 s at 44.1 kHz
    private static let backlogSize = 1024

    private let connection: ReceiverConnection
    private let path = "rtsp://\(UUID().uuidString.prefix(8))/\(UInt32.random(in: 1...UInt32.max))"
    private var cseq = 0
    private var session: String?
    private var channel: (any Channel)?
    private var serverAudio: SocketAddress?
    private var serverControl: SocketAddress?
    private let backlog = NIOLockedValueBox<[UInt16: [UInt8]]>([:])
    /// Packets resent on request, for the summary.
    public let resent = NIOLockedValueBox(0)

    /// A streamer over an RTSP connection to the receiver.
    public init(connection: ReceiverConnection) { self.connection = connection }

    private func rtsp(_ method: String, headers: MessageHeaders = [:], body: [UInt8] = []) async throws(SenderError) -> AirPlayResponse {
        cseq += 1
        var all = headers
        all.add(name: "CSeq", value: String(cseq))
        all.add(name: "User-Agent", value: "airplay/1.0 (swift-airplay)")
        if let session { all.add(name: "Session", value: session) }
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        let response = try await connection.send(AirPlayRequest(method: method, target: path, version: .rtsp10, headers: all, body: buffer))
        guard (200..<300).contains(response.status) else {
            throw SenderError(.refused(status: response.status),
                              "\(method) answered \(response.status): \(String(buffer: response.body).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return response
    }

    /// ANNOUNCE (L16), SETUP (our control and timing ports), RECORD, and the volume in dB.
    public func start(volumeDecibels: Double) async throws(SenderError) {
        let local = connection.localAddress?.ipAddress ?? "127.0.0.1"
        let sdp = "v=0\r\no=iTunes 1 0 IN IP4 \(local)\r\ns=iTunes\r\nc=IN IP4 \(connection.host)\r\nt=0 0\r\n"
            + "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/44100/2\r\n"
        _ = try await rtsp("ANNOUNCE", headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8))
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2048))
                .channelInitializer { [backlog, resent] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ResendResponder(backlog: backlog, resent: resent))
                    }
                }
                .bind(host: local, port: 0).get()
        } catch {
            throw SenderError(.connectionLost, "cannot open a UDP port: \(error)")
        }
        self.channel = channel
        let port = channel.localAddress?.port ?? 0
        let setup = try await rtsp("SETUP", headers: [
            "Transport": "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=\(port);timing_port=\(port)",
        ])
        let transport = RTSPTransport(parsing: setup.headers["Transport"] ?? "")
        guard let audioPort = transport.port("server_port"), let controlPort = transport.port("control_port"),
              let session = setup.headers["Session"] else {
            throw SenderError(.refused(status: setup.status), "the SETUP reply lacks server_port, control_port or Session")
        }
        self.session = session
        serverAudio = try? SocketAddress(ipAddress: connection.host, port: Int(audioPort))
        serverControl = try? SocketAddress(ipAddress: connection.host, port: Int(controlPort))
        _ = try await rtsp("RECORD", headers: ["Range": "npt=0-", "RTP-Info": "seq=0;rtptime=0"])
        _ = try await rtsp("SET_PARAMETER", headers: ["Content-Type": "text/parameters"],
                           body: Array(String(format: "volume: %.6f\r\n", volumeDecibels).utf8))
    }

    /// Sends everything `read` returns, in real time; returns the frames sent.
    public func stream(read: () -> [Int16]) throws(SenderError) -> Int {
        guard let channel, let serverAudio, let serverControl else { throw SenderError(.connectionLost, "not set up") }
        let start = ProcessInfo.processInfo.systemUptime
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var lastSync = -1.0
        while true {
            let samples = read()
            guard !samples.isEmpty else { break }
            var payload = [UInt8](repeating: 0, count: samples.count * 2)
            for (index, sample) in samples.enumerated() {
                payload[2 * index] = UInt8(truncatingIfNeeded: UInt16(bitPattern: sample) >> 8)
                payload[2 * index + 1] = UInt8(truncatingIfNeeded: UInt16(bitPattern: sample))
            }
            let packet = RAOPAudioPacket(sequence: sequence, timestamp: timestamp, marker: sequence == 0, payload: payload).bytes
            backlog.withLockedValue { backlog in
                backlog[sequence] = packet
                backlog[sequence &- UInt16(Self.backlogSize)] = nil
            }
            let elapsed = ProcessInfo.processInfo.systemUptime - start
            if elapsed - lastSync >= 1 {
                lastSync = elapsed
                send(Self.sync(sending: timestamp, at: Self.ntp(atUptime: start + Double(timestamp) / 44100), first: sequence == 0),
                     to: serverControl, on: channel)
            }
            send(packet, to: serverAudio, on: channel)
            let frames = samples.count / 2
            sequence &+= 1
            timestamp &+= UInt32(frames)
            // Monotonic pacing: packet n leaves at start + n·352/44100, so no drift accumulates.
            let due = start + Double(timestamp) / 44100
            let wait = due - ProcessInfo.processInfo.systemUptime
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
        }
        return Int(timestamp)
    }

    /// TEARDOWN and close the UDP port.
    public func stop() async {
        _ = try? await rtsp("TEARDOWN")
        try? await channel?.close()
    }

    private func send(_ bytes: [UInt8], to address: SocketAddress, on channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
    }

    /// Our clock for receivers, as NTP 32.32 fixed point (seconds since 1900): the wall clock read
    /// once, then advanced by the monotonic clock, so it never steps while we stream.
    static func ntpNow() -> UInt64 { ntp(atUptime: ProcessInfo.processInfo.systemUptime) }

    private static let clockBase: (uptime: Double, wall: Double) = {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (ProcessInfo.processInfo.systemUptime, Double(time.tv_sec) + 2_208_988_800 + Double(time.tv_nsec) / 1e9)
    }()

    /// Our NTP clock at a monotonic time.
    static func ntp(atUptime uptime: Double) -> UInt64 {
        let seconds = clockBase.wall + (uptime - clockBase.uptime)
        let whole = seconds.rounded(.down)
        return UInt64(whole) << 32 | UInt64((seconds - whole) * 4_294_967_296)
    }

    /// A sync packet: the RTP time that plays at `time` (what is sent then, minus the latency),
    /// `time` on our clock (receivers map it through our timing replies), and the next RTP time.
    /// `time` is when `sending` is scheduled to leave, not when it did: sync packets then agree
    /// with each other to the sample.
    static func sync(sending: UInt32, at time: UInt64, first: Bool) -> [UInt8] {
        RAOPSync(rtpTimeNowMinusLatency: sending &- latencyFrames, ntpTime: time, rtpTimeNext: sending, isFirst: first).bytes
    }
}

/// Answers resend requests (0x55) from the backlog with retransmissions (0x56), and timing
/// requests (0x52) with our clock.
final class ResendResponder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    private let backlog: NIOLockedValueBox<[UInt16: [UInt8]]>
    private let resent: NIOLockedValueBox<Int>

    init(backlog: NIOLockedValueBox<[UInt16: [UInt8]]>, resent: NIOLockedValueBox<Int>) {
        self.backlog = backlog
        self.resent = resent
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = Array(envelope.data.readableBytesView)
        if bytes.count >= 32, bytes[1] & 0x7F == 0x52, let request = RAOPPacket.parse(bytes), case .timingRequest(let timing) = request {
            // Receivers set their clocks from our answers: origin = their transmit time, then ours.
            let now = RAOPStreamer.ntpNow()
            let reply = RAOPTiming(origin: timing.transmit, receive: now, transmit: RAOPStreamer.ntpNow()).bytes(reply: true)
            var buffer = context.channel.allocator.buffer(capacity: reply.count)
            buffer.writeBytes(reply)
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
            return
        }
        guard bytes.count >= 8, bytes[1] & 0x7F == 0x55 else { return }
        let first = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
        let count = min(UInt16(bytes[6]) << 8 | UInt16(bytes[7]), 1024)
        for offset in 0..<count {
            guard let packet = backlog.withLockedValue({ $0[first &+ offset] }) else { continue }
            var buffer = context.channel.allocator.buffer(capacity: packet.count + 4)
            buffer.writeBytes([0x80, 0xD6, 0x00, 0x01] + packet)
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
            resent.withLockedValue { $0 += 1 }
        }
    }
}
