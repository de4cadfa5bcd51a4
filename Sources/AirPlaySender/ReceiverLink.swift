import AirPlayCrypto
import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import LinuxIO

/// What a receiver says it takes, from its `_raop._tcp` TXT record (or assumed for a receiver
/// given as HOST:PORT: what every AirPlay 1 speaker takes).
public struct RAOPReceiverTraits: Hashable, Sendable {
    /// `cn`: 0 PCM, 1 ALAC, 2 AAC, 3 AAC-ELD.
    public var codecs: Set<Int>
    /// `et`: 0 clear, 1 RSA.
    public var encryptions: Set<Int>
    /// `md`: 0 text, 1 artwork, 2 progress.
    public var metadata: Set<Int>
    /// The device id (`deviceid`, or the hex before `@` in the service name), for the Apple-Response check.
    public var deviceID: [UInt8]?
    /// True when the traits came from a TXT record.
    public var advertised: Bool

    /// Traits from a TXT record.
    public init(txt: TXTRecord, deviceID: [UInt8]?) {
        func numbers(_ key: String, _ fallback: Set<Int>) -> Set<Int> {
            guard let text = txt[key] else { return fallback }
            return Set(text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        }
        codecs = numbers("cn", [0, 1])
        encryptions = numbers("et", [0])
        metadata = numbers("md", [])
        self.deviceID = deviceID
        advertised = true
    }

    /// What a receiver of unknown traits gets: ALAC (PCM if it refuses), RSA when it proves the
    /// AirPort key, and every kind of metadata (a speaker that does not want it just says so).
    public init() {
        codecs = [0, 1]
        encryptions = [0, 1]
        metadata = [0, 1, 2]
        deviceID = nil
        advertised = false
    }
}

/// The sender's link to one receiver: its RTSP session, a UDP socket for audio, sync, resend
/// requests and timing, the stream's codec and key, and the backlog that answers resend requests.
///
/// `@unchecked Sendable`: the mutable state is set by `setUp` before streaming starts and then
/// only read, except `packets` (its sealing counter), which only the streamer's thread touches;
/// the backlog and the counters the UDP handler shares are locked boxes.
public final class ReceiverLink: @unchecked Sendable {
    /// The codec of the stream to this receiver.
    public enum Codec: String, Sendable {
        /// Apple Lossless, compressed by `ALACEncoder`.
        case alac = "ALAC"
        /// 16-bit big-endian PCM.
        case pcm = "L16"
    }

    /// The receiver's display name.
    public let name: String
    /// The RTSP client.
    public let client: RAOPClient
    let traits: RAOPReceiverTraits
    let crypto: RAOPSenderCrypto?
    /// True when the session is set up the AirPlay 2 way (plist SETUPs, ChaCha20-Poly1305 audio).
    public let airPlay2: Bool
    /// True when the receiver gets buffered audio (type 103, on PTP); else realtime.
    public let buffered: Bool
    /// What the receiver says it does: its record's `ft`, or its `GET /info` answer's `features`.
    public let features: FeatureSet
    /// Its `GET /info` answer, when it was asked and said something.
    public let info: ReceiverInfo?
    /// Set when its setup failed because it refused AirPlay 2's native realtime stream
    /// (`SenderSetupMachine.refusedNativeStreams`): it may play AirPlay 1 instead.
    public internal(set) var refusedNativeStreams = false
    /// The codec chosen at ANNOUNCE.
    public internal(set) var codec: Codec = .pcm
    /// Set when the stream is encrypted.
    public internal(set) var encryptor: RAOPPacketEncryptor?
    /// True, false, or nil (no Apple-Response) after OPTIONS.
    public internal(set) var identityVerified: Bool?
    var channel: (any Channel)?
    var audioAddress: SocketAddress?
    /// Audio goes out from the streamer's thread on a socket of its own (no event-loop hop).
    var audioSocket: ConnectedUDPSocket?
    var controlAddress: SocketAddress?
    var timingAddress: SocketAddress?
    /// How the audio packets are made (touched only by the streamer's thread once set up).
    var packets = AudioPacketWriter()
    /// AirPlay 2: what seals each audio packet (`shk`).
    var streamCipher: AirPlay2AudioCipher? {
        get { packets.cipher }
        set { packets.cipher = newValue }
    }
    /// AirPlay 2: the stream's SSRC.
    var streamSSRC: UInt32 {
        get { packets.ssrc }
        set { packets.ssrc = newValue }
    }
    /// AirPlay 2: the session (its event channel).
    var session: AirPlay2SenderSession?
    /// Where the receiver's remote commands on the AirPlay 2 event channel go.
    public let remoteCommands = RemoteCommandInbox()
    /// Buffered AirPlay 2 (type 103): the TCP data connection the audio goes on.
    var dataConnection: BufferedDataConnection?
    /// Realtime AirPlay 2 on PTP: our grandmaster, set before `setUp`. The session is then
    /// timed by it, and 0xD7 anchors on it replace sync packets (`sendAnchor(heard:at:first:)`).
    public var ptpClock: PTPGrandmaster?
    /// The receiver insists on being the PTP master (a standalone HomePod on OS 27, or
    /// `--timing follow`): `ptpClock` follows its clock rather than serving it ours.
    public var followsReceiverClock = false
    /// The clock identity of the receiver's own clock, once followed: its anchors name it.
    public internal(set) var receiverTimeline: UInt64?
    private let backlog = NIOLockedValueBox(ResendBacklog())
    /// Packets resent on request.
    public let resent = NIOLockedValueBox(0)
    /// Round trips of our timing requests to the receiver, in seconds (receivers that answer them).
    public let roundTrips = NIOLockedValueBox<[Double]>([])
    /// The running session's requests, from the end of the setup (made on first use, when
    /// the setup has said how now-playing reaches the receiver).
    private let running = NIOLockedValueBox<SenderSessionMachine?>(nil)
    /// What MediaRemote now-playing has told the receiver (`ReceiverLink+NowPlaying`).
    let mediaRemote = NIOLockedValueBox(MediaRemoteNowPlayingMessages())

    /// A link over an open control connection; `airPlay2` sets the session up the AirPlay 2 way
    /// (the connection must be encrypted by a pairing first).
    public init(name: String, connection: ReceiverConnection, traits: RAOPReceiverTraits, identity: RAOPClientIdentity,
                password: String?, crypto: RAOPSenderCrypto?, airPlay2: Bool = false, buffered: Bool = false,
                features: FeatureSet = [], info: ReceiverInfo? = nil) {
        self.name = name
        self.buffered = buffered
        self.features = features
        self.info = info
        self.traits = traits
        self.crypto = crypto
        self.airPlay2 = airPlay2
        client = RAOPClient(connection: connection, identity: identity, password: password)
    }

    /// True when the receiver runs on this host: the connection's two ends share an address
    /// (the kernel answers a local destination from that address itself).
    public var isOnThisHost: Bool {
        guard let remote = client.connection.remoteIP else { return false }
        return remote == client.connection.localAddress?.ipAddress || remote.hasPrefix("127.") || remote == "::1"
    }

    /// Whether the receiver wants a kind of metadata (`md`): 0 text, 1 artwork, 2 progress.
    public func wants(_ kind: Int) -> Bool { traits.metadata.contains(kind) }

    /// Our address on the control connection, any port, its scope kept (an IPv6 link-local one
    /// needs it): every datagram of the link leaves from it, as the receiver takes them only
    /// from the address its RTSP connection came from.
    private var ourAddress: SocketAddress? { client.connection.localAddress?.withPort(0) }

    /// Binds the link's one UDP port (sync, resend requests and answers, timing both ways).
    func openUDPPort() async throws(SenderError) {
        let local = ourAddress ?? (try? SocketAddress(ipAddress: "0.0.0.0", port: 0))
        do {
            guard let local else { throw SenderError(.connectionLost, "no local address") }
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2048))
                .channelInitializer { [backlog, resent, roundTrips, receiverIP = client.connection.remoteIP] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            RAOPSenderDatagramHandler(backlog: backlog, resent: resent, roundTrips: roundTrips, receiverIP: receiverIP))
                    }
                }
                .bind(to: local).get()
        } catch {
            throw SenderError(.connectionLost, "cannot open a UDP port: \(error)")
        }
    }

    /// Where audio, sync and timing requests go, on the receiver's host.
    func aim(audioPort: Int, controlPort: Int, timingPort: Int?) {
        let connection = client.connection
        audioAddress = connection.remote(port: audioPort)
        audioSocket = audioAddress.flatMap { ConnectedUDPSocket(to: $0, from: ourAddress) }
        controlAddress = connection.remote(port: controlPort)
        timingAddress = timingPort.flatMap { connection.remote(port: $0) }
    }

    /// The ANNOUNCE body for a codec, with the stream key wrapped for the receiver when `encryptor` is given.
    func sdp(_ codec: Codec, encryptor: RAOPPacketEncryptor?) throws(SenderError) -> String {
        var key: (wrapped: [UInt8], iv: [UInt8])?
        if let encryptor, let crypto {
            do { key = (try crypto.wrap(streamKey: encryptor.key), encryptor.iv) } catch { throw SenderError(.badInput, "\(error)") }
        }
        return Self.sdp(codec, origin: client.connection.localAddress?.ipAddress ?? "127.0.0.1",
                        connection: client.connection.remoteIP ?? client.connection.host, key: key)
    }

    /// The ANNOUNCE body this sender writes: 44.1 kHz stereo, 352 frames a packet, our ALAC
    /// `fmtp`, and the wrapped AES key and IV of an encrypted stream.
    package static func sdp(_ codec: Codec, origin: String, connection: String, key: (wrapped: [UInt8], iv: [UInt8])?) -> String {
        let stream = RAOPStreamDescription(codec: codec == .alac ? .alac(fmtp: ALACEncoder.fmtp.split(separator: " ").compactMap { Int($0) }) : .pcm,
                                           sampleRate: Int(RAOPStreamer.sampleRate), channels: 2, framesPerPacket: ALACEncoder.framesPerPacket)
        var announcement = stream.announcement(origin: origin, connection: connection)
        if let key {
            announcement.rsaAESKey = key.wrapped
            announcement.aesIV = key.iv
        }
        return announcement.encoded
    }

    /// `RECORD` from an RTP point (the start, and every resume after a pause).
    public func record(sequence: UInt16, rtpTime: UInt32) async throws(SenderError) {
        try await perform(.record(RTPInfo(sequence: sequence, rtpTime: rtpTime)))
    }

    /// `FLUSH` up to an RTP point (a pause): the receiver drops what it holds before it.
    public func flush(sequence: UInt16, rtpTime: UInt32) async throws(SenderError) {
        try await perform(.flush(RTPInfo(sequence: sequence, rtpTime: rtpTime)))
    }

    /// The volume in AirPlay dB (-30…0, -144 mutes).
    public func setVolume(decibels: Double) async throws(SenderError) {
        try await perform(.setVolume(decibels: decibels))
    }

    /// Text metadata, artwork and progress (in frames at `sampleRate`), each only when the
    /// receiver's `md` lists it, or as MediaRemote now-playing to a receiver that reads it. A
    /// receiver that refuses one keeps playing: metadata is never worth ending a stream for.
    public func sendMetadata(_ item: DMAP.Item?, artwork: (type: String, bytes: [UInt8])?, progress: (UInt32, UInt32, UInt32)?,
                             rtpTime: UInt32, sampleRate: Double = RAOPStreamer.sampleRate) async {
        let metadata = SenderSessionMachine.Metadata(
            item: item, artwork: artwork.map { SenderSessionMachine.Artwork(type: $0.type, bytes: $0.bytes) },
            progress: progress.map { SenderSessionMachine.Progress(start: $0.0, current: $0.1, end: $0.2) }, rtpTime: rtpTime)
        try? await perform(.metadata(metadata), sampleRate: sampleRate)
    }

    /// Keeps the session alive: `POST /feedback`, or where that is not answered, the volume again.
    public func keepAlive(volumeDecibels: Double) async throws(SenderError) {
        try await perform(.keepAlive(decibels: volumeDecibels))
    }

    /// Carries a running-session command out (`SenderSessionMachine`): its requests in order,
    /// each reply read by the machine; a refusal of a required one throws. After TEARDOWN a
    /// command sends nothing and returns.
    func perform(_ command: SenderSessionMachine.Command, sampleRate: Double = RAOPStreamer.sampleRate) async throws(SenderError) {
        let route: SenderSessionMachine.NowPlayingRoute = readsMediaRemoteNowPlaying ? .mediaRemote : .dmap(traits.metadata)
        var pending = running.withLockedValue { machine in
            if machine == nil { machine = SenderSessionMachine(nowPlaying: route) }
            return machine!.command(command)
        }[...]
        // A command is a request or two (a refused keep-alive, then the volume): the bound only
        // stops a machine that would never end.
        for _ in 0..<8 {
            guard let action = pending.popFirst() else { return }
            switch action {
            case .send(let request, let required):
                let response: AirPlayResponse
                do {
                    response = try await client.exchange(request)
                } catch {
                    // A refusal the client threw (a 401 it could not answer) is still an answer
                    // the machine may fall back from (`/feedback`); else the client's words stand.
                    if case .refused(let status) = error.kind {
                        let next = running.withLockedValue { $0?.replied(AirPlayResponse(status: status), to: request, required: required) ?? [] }
                        if case .send? = next.first {
                            pending += next
                            continue
                        }
                    }
                    if required { throw error }
                    continue
                }
                pending += running.withLockedValue { $0?.replied(response, to: request, required: required) ?? [] }
            case .sendMediaRemoteNowPlaying(let metadata):
                await sendMediaRemoteNowPlaying(metadata.item, artwork: metadata.artwork.map { ($0.type, $0.bytes) },
                                                progress: metadata.progress.map { ($0.start, $0.current, $0.end) },
                                                sampleRate: sampleRate, playing: true)
            case .failed(let error):
                throw error
            }
        }
    }

    /// Sends one audio packet (encrypting its payload when the stream is encrypted) and keeps it
    /// for resend requests.
    public func sendAudio(sequence: UInt16, timestamp: UInt32, marker: Bool, payload: [UInt8]) {
        guard let packet = packets.realtime(sequence: sequence, timestamp: timestamp, marker: marker, payload: payload) else { return }
        backlog.withLockedValue { $0.store(packet, sequence: sequence) }
        if let audioSocket {
            audioSocket.send(packet)
        } else if let audioAddress {
            send(packet, to: audioAddress)
        }
    }

    /// Sends a sync packet to the control port.
    public func sendSync(_ sync: RAOPSync) {
        if let controlAddress { send(sync.bytes, to: controlAddress) }
    }

    /// Realtime on PTP: tells the receiver that frame `heard` sounds at `networkTime`
    /// (nanoseconds on our grandmaster's clock), with a 0xD7 anchor on the control port.
    func sendAnchor(heard: UInt32, at networkTime: Int64, first: Bool) {
        guard let controlAddress, let ptpClock else { return }
        var anchor = RAOPPTPAnchor(heard: heard, at: UInt64(max(0, networkTime)), clockIdentity: receiverTimeline ?? ptpClock.identity.clockIdentity)
        anchor.isFirst = first
        send(anchor.bytes, to: controlAddress)
    }

    /// Timing requests sent so far (by the streamer's thread).
    private let timingRequestsSent = NIOLockedValueBox(0)
    /// Timing requests a receiver may leave unanswered before it is asked no more. In RAOP the
    /// receiver times the sender, not the other way round: airplayd answers ours, shairport-sync
    /// 3.3.8 logs each as an unknown packet type, so one that answers neither of the first two hears
    /// no more of them.
    static let unansweredTimingRequests = 2

    /// Asks the receiver for its clock (receivers that answer show their round trip); nothing
    /// once it has left the first `unansweredTimingRequests` unanswered.
    public func sendTimingRequest() {
        guard let timingAddress, ptpClock == nil else { return }
        let sent = timingRequestsSent.withLockedValue { count in
            count += 1
            return count
        }
        guard sent <= Self.unansweredTimingRequests || !roundTrips.withLockedValue(\.isEmpty) else { return }
        send(RAOPTiming(origin: 0, receive: 0, transmit: RAOPClock.ntp(atUptime: RAOPClock.now())).bytes(reply: false),
             to: timingAddress)
    }

    private func send(_ bytes: [UInt8], to address: SocketAddress) {
        guard let channel else { return }
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
    }

    /// TEARDOWN and close the UDP socket.
    public func tearDown() async {
        try? await perform(.tearDown)
        await session?.close()
        dataConnection?.close()
        audioSocket?.close()
        try? await channel?.close()
    }
}

/// Our clock as receivers see it: NTP 32.32 (seconds since 1900), the wall clock read once and
/// then advanced by the monotonic clock (`SystemClock`, the one every part of the project
/// reads), so it never steps while we stream.
public enum RAOPClock {
    /// The monotonic clock the sender runs on.
    public static let monotonic: any MonotonicClock = SystemClock()
    private static let base = (uptime: monotonic.now(), wall: NTPTime.wallClock())

    /// The monotonic time now, in seconds.
    public static func now() -> Double { monotonic.now() }

    /// Our NTP clock at a monotonic time.
    public static func ntp(atUptime uptime: Double) -> UInt64 { NTPTime.timestamp(base.wall + (uptime - base.uptime)) }

    /// The monotonic time of an NTP time of ours.
    static func uptime(ofNTP ntp: UInt64) -> Double { NTPTime.seconds(ntp) - base.wall + base.uptime }
}

/// Answers resend requests (0x55) from the backlog with retransmissions (0x56), timing requests
/// (0x52) with our clock, and records the round trip of timing replies (0x53) to our requests.
final class RAOPSenderDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    private let backlog: NIOLockedValueBox<ResendBacklog>
    private let resent: NIOLockedValueBox<Int>
    private let roundTrips: NIOLockedValueBox<[Double]>
    private let receiverIP: String?

    init(backlog: NIOLockedValueBox<ResendBacklog>, resent: NIOLockedValueBox<Int>, roundTrips: NIOLockedValueBox<[Double]>,
         receiverIP: String?) {
        self.receiverIP = receiverIP
        self.backlog = backlog
        self.resent = resent
        self.roundTrips = roundTrips
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = Array(envelope.data.readableBytesView)
        switch RAOPPacket.parse(bytes) {
        case .timingRequest(let timing):
            let reply = RAOPTiming.reply(to: timing) { RAOPClock.ntp(atUptime: RAOPClock.now()) }
            write(reply.bytes(reply: true), to: envelope.remoteAddress, context: context)
        case .timingReply(let timing):
            let arrival = RAOPClock.ntp(atUptime: RAOPClock.now())
            if let exchange = timing.exchange(arrival: arrival), exchange.roundTrip < 5 {
                roundTrips.withLockedValue { $0 = ($0 + [exchange.roundTrip]).suffix(64) }
            }
        case .resendRequest(let request):
            // Only the receiver may ask for retransmissions: anyone else could use us as an amplifier.
            guard envelope.remoteAddress.ipAddress == receiverIP else { return }
            let kept = backlog.withLockedValue { $0.packets(from: request.first, count: request.count) }
            for (sequence, packet) in kept {
                write(RAOPPacket.retransmission(of: packet, sequence: sequence), to: envelope.remoteAddress, context: context)
            }
            resent.withLockedValue { $0 += kept.count }
        default:
            break
        }
    }

    private func write(_ bytes: [UInt8], to address: SocketAddress, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: address, data: buffer)), promise: nil)
    }
}
