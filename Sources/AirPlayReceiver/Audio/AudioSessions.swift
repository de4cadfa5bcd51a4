import AirPlayCrypto
import AirPlayMedia
import AirPlayWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Who sent a request: the control connection it came on.
public struct ConnectionContext: Sendable {
    /// Identifies the connection while it is open.
    public var id: ObjectIdentifier
    /// Our address on it (UDP ports for RAOP are bound on the same address).
    public var local: SocketAddress?
    /// The peer's address.
    public var remote: SocketAddress?
    /// Closes the connection (a sender that is taken over loses its RTSP session too).
    public var close: @Sendable () -> Void

    /// A context from its parts.
    public init(id: ObjectIdentifier, local: SocketAddress?, remote: SocketAddress?, close: @escaping @Sendable () -> Void) {
        self.id = id
        self.local = local
        self.remote = remote
        self.close = close
    }
}

/// Policy for an `ANNOUNCE` from a sender while another sender streams.
public enum AudioTakeover: String, Hashable, Sendable {
    /// The new sender takes over; the old one's sockets and connection are closed.
    case replace
    /// The new sender gets 453 while the current one streams.
    case refuse
}

/// RAOP over RTSP on the control port: one audio session at a time, its UDP ports, its playout
/// and its now-playing state. The exchanges are written down in `Protocol/raop.md`.
public final class AudioSessions: Sendable {
    /// Makes the output a new session plays to.
    public typealias OutputFactory = @Sendable () throws -> any PCMOutput

    /// RTSP methods handled here.
    public static let methods: Set<String> = [
        "OPTIONS", "ANNOUNCE", "SETUP", "RECORD", "FLUSH", "TEARDOWN", "SET_PARAMETER", "GET_PARAMETER", "PAUSE",
    ]

    final class Session: @unchecked Sendable {
        let connection: ConnectionContext
        let number: Int
        let stream: RAOPStreamDescription
        /// Set for encrypted streams (`et=1`).
        let decryptor: RAOPPacketDecryptor?
        /// Set for compressed streams (ALAC, AAC): decodes off the event loops.
        let decoding: RAOPDecodeQueue?
        /// The sender's clock, from its sync packets and its answers to our timing requests.
        let timeline: SenderTimeline
        /// Touched from the RTSP connection, the UDP channels and the watchdog: all under one lock.
        struct Mutable {
            var playout: AudioPlayout?
            var senderControl: SocketAddress?
            var senderTiming: SocketAddress?
            var expectedSequence: UInt16?
            var lastActivity = ProcessInfo.processInfo.systemUptime
            var volume: Double = 0
            /// Set by FLUSH (a pause); the next audio packet means playing again.
            var paused = false
            /// Packets asked for again (0x55), and retransmissions received (0x56).
            var requested = 0
            var retransmitted = 0
            /// Datagrams dropped before the playout, by reason: never silent.
            var dropped: [String: Int] = [:]
        }
        let state = NIOLockedValueBox(Mutable())
        var playout: AudioPlayout? { state.withLockedValue { $0.playout } }
        var lastActivity: Double {
            get { state.withLockedValue { $0.lastActivity } }
            set { state.withLockedValue { $0.lastActivity = newValue } }
        }
        var volume: Double {
            get { state.withLockedValue { $0.volume } }
            set { state.withLockedValue { $0.volume = newValue } }
        }
        /// The sender's address: UDP datagrams from anywhere else are ignored.
        let senderHost: [UInt8]?
        /// The UDP channels by role; registration finishes after the SETUP reply, so it is locked.
        let udp = NIOLockedValueBox<(channels: [UDPRole: any Channel], ended: Bool, setUp: Bool)>(([:], false, false))

        init(connection: ConnectionContext, number: Int, stream: RAOPStreamDescription, decryptor: RAOPPacketDecryptor?,
             decoding: RAOPDecodeQueue?) {
            self.connection = connection
            self.number = number
            self.stream = stream
            self.decryptor = decryptor
            self.decoding = decoding
            timeline = SenderTimeline(sampleRate: stream.sampleRate)
            senderHost = connection.remote.map(AudioSessions.hostBytes)
        }

        /// What the session measured.
        var figures: StreamFigures {
            let (requested, retransmitted, dropped) = state.withLockedValue { ($0.requested, $0.retransmitted, $0.dropped) }
            return StreamFigures(session: number, codec: AudioSessions.codecName(stream.codec),
                                 playout: playout?.statistics ?? AudioPlayout.Statistics(), clock: timeline.figures,
                                 requested: requested, retransmitted: retransmitted, dropped: dropped)
        }

        /// Counts a datagram dropped before the playout; says whether to log it (the first ten
        /// of each reason, then every thousandth).
        func drop(_ reason: String) -> Bool {
            state.withLockedValue { state in
                let count = (state.dropped[reason] ?? 0) + 1
                state.dropped[reason] = count
                return count <= 10 || count % 1000 == 0
            }
        }
    }

    /// What one session's stream measured: for the per-session log line, `/now-playing` and benchmarks.
    public struct StreamFigures: Hashable, Sendable {
        /// The session number.
        public var session: Int
        /// L16, ALAC, AAC or AAC-ELD.
        public var codec: String
        /// Packets, frames and sync error of the playout.
        public var playout: AudioPlayout.Statistics
        /// What is known of the sender's clock.
        public var clock: SenderTimeline.Figures
        /// Packets asked for again with resend requests.
        public var requested = 0
        /// Retransmitted packets received.
        public var retransmitted = 0
        /// Datagrams dropped before reaching the playout, by reason (wrong sender, not RAOP,
        /// undecodable, decoder backlog…).
        public var dropped: [String: Int] = [:]
        /// True once the session has ended (the figures are then the last session's).
        public var ended = false
    }

    private let group: any EventLoopGroup
    private let identity: RAOPIdentity?
    private let authenticator: DigestAuthenticator?
    private let deviceID: [UInt8]
    private let makeOutput: OutputFactory
    private let decoders: any RAOPDecoderFactory
    private let takeover: AudioTakeover
    private let sessionTimeout: Double
    /// Test-only fault injection: this share of first-time audio packets is dropped on arrival.
    let faultDropPercent: Int
    private let logger: Logger
    /// The now-playing state of the box.
    public let nowPlaying: NowPlaying
    private let current = NIOLockedValueBox<Session?>(nil)
    private let lastFigures = NIOLockedValueBox<StreamFigures?>(nil)
    private let counter = NIOLockedValueBox(Int.random(in: 1...1_000_000))

    /// Audio sessions playing to outputs made by `makeOutput`.
    public init(group: any EventLoopGroup, deviceID: DeviceID, password: String? = nil, makeOutput: @escaping OutputFactory,
                decoders: any RAOPDecoderFactory, takeover: AudioTakeover, sessionTimeout: Double = 30, nowPlaying: NowPlaying, faultDropPercent: Int = 0,
                logger: Logger) {
        self.faultDropPercent = faultDropPercent
        self.group = group
        authenticator = password.flatMap { $0.isEmpty ? nil : DigestAuthenticator(password: $0) }
        self.deviceID = deviceID.bytes
        do {
            identity = try RAOPIdentity()
        } catch {
            logger.error("RAOP RSA key unavailable: encrypted streams and Apple-Challenge cannot be answered", metadata: ["error": "\(error)"])
            identity = nil
        }
        self.makeOutput = makeOutput
        self.decoders = decoders
        self.takeover = takeover
        self.sessionTimeout = sessionTimeout
        self.nowPlaying = nowPlaying
        self.logger = logger
        startWatchdog()
    }

    /// Answers one RTSP request (or `POST /feedback`); any request carrying `Apple-Challenge`
    /// gets its `Apple-Response`.
    public func respond(to request: AirPlayRequest, connection: ConnectionContext) -> AirPlayResponse {
        var response = answer(request, connection: connection)
        if let challenge = request.headers["Apple-Challenge"], let identity {
            do {
                let signed = try identity.appleResponse(challengeBase64: challenge,
                                                        localAddress: Self.addressBytes(connection.local), deviceID: deviceID)
                response.headers.add(name: "Apple-Response", value: signed)
            } catch {
                logger.notice("Apple-Challenge not answered", metadata: ["reason": "\(error)"])
            }
        }
        return response
    }

    static func codecName(_ codec: RAOPStreamDescription.Codec) -> String {
        switch codec {
        case .pcm: "L16"
        case .alac: "ALAC"
        case .aacLC: "AAC"
        case .aacELD: "AAC-ELD"
        }
    }

    /// Our address on the connection as 4 (IPv4, also IPv4-mapped IPv6) or 16 bytes.
    static func addressBytes(_ address: SocketAddress?) -> [UInt8] { address?.ipAddress.map(IPAddressBytes.of) ?? [] }

    private func answer(_ request: AirPlayRequest, connection: ConnectionContext) -> AirPlayResponse {
        // OPTIONS stays open so senders can check the receiver and learn that a password is needed;
        // everything that changes state needs the password. A refused request changes nothing.
        if let authenticator, request.method != "OPTIONS",
           let refusal = authenticator.check(request, connection: connection.id) {
            logger.notice("audio request without the right password", metadata: ["request.method": "\(request.method)"])
            return refusal
        }
        let session = current.withLockedValue { $0 }
        if let session, session.connection.id == connection.id { session.lastActivity = ProcessInfo.processInfo.systemUptime }
        switch request.method {
        case "OPTIONS":
            return AirPlayResponse(status: 200, headers: ["Public": (Self.methods.sorted() + ["POST", "GET"]).joined(separator: ", ")])
        case "ANNOUNCE": return announce(request, connection)
        case "SETUP": return setup(request, connection)
        case "RECORD":
            guard own(connection) != nil else { return Self.noSession }
            nowPlaying.setRate(1)
            // The playout buffers 0.5 s (22050 frames at 44.1 kHz) before the first frame plays.
            return AirPlayResponse(status: 200, headers: ["Audio-Latency": "22050"])
        case "PAUSE":
            guard own(connection) != nil else { return Self.noSession }
            nowPlaying.setRate(0)
            return AirPlayResponse(status: 200)
        case "FLUSH":
            guard let session = own(connection) else { return Self.noSession }
            // RTP-Info names the first frame after the flush; anything older is stale.
            let rtpTime = request.headers["RTP-Info"].flatMap { RTSPTransport(parsing: "x;" + $0)["rtptime"] }.flatMap { UInt32($0) }
            session.playout?.flush(before: rtpTime)
            session.state.withLockedValue {
                $0.expectedSequence = nil
                $0.paused = true
            }
            nowPlaying.setRate(0)
            return AirPlayResponse(status: 200)
        case "TEARDOWN":
            guard let session = own(connection) else { return AirPlayResponse(status: 200) }
            end(session, reason: "TEARDOWN")
            return AirPlayResponse(status: 200)
        case "SET_PARAMETER": return setParameter(request, connection)
        case "GET_PARAMETER": return getParameter(request, connection)
        case "POST" where request.path == "/feedback":
            return AirPlayResponse(status: 200)
        default:
            return ControlRouter.textResponse(status: 405, "\(request.method) is not an RTSP method of RAOP")
        }
    }

    /// The control connection closed: its session, if any, ends.
    public func connectionClosed(_ id: ObjectIdentifier) {
        authenticator?.connectionClosed(id)
        if let session = current.withLockedValue({ $0 }), session.connection.id == id {
            end(session, reason: "the sender closed its connection")
        }
    }

    /// Ends the session (shutdown).
    public func stopAll() {
        if let session = current.withLockedValue({ $0 }) { end(session, reason: "shutdown") }
    }

    /// The figures of the current session, or else of the last one.
    public var streamFigures: StreamFigures? {
        current.withLockedValue { $0 }?.figures ?? lastFigures.withLockedValue { $0 }
    }

    // MARK: RTSP

    private static let noSession = ControlRouter.textResponse(status: 454, "no RAOP session on this connection; ANNOUNCE and SETUP first")

    private func own(_ connection: ConnectionContext) -> Session? {
        current.withLockedValue { $0?.connection.id == connection.id ? $0 : nil }
    }

    private func announce(_ request: AirPlayRequest, _ connection: ConnectionContext) -> AirPlayResponse {
        guard request.headers["Content-Type"]?.lowercased().hasPrefix("application/sdp") == true else {
            return ControlRouter.textResponse(status: 415, "ANNOUNCE needs an application/sdp body")
        }
        let stream: RAOPStreamDescription
        do {
            stream = try RAOPStreamDescription(sdp: String(buffer: request.body))
        } catch {
            return ControlRouter.textResponse(status: 400, "SDP: \(error)")
        }
        if stream.codec == .aacLC || stream.codec == .aacELD, stream.aacConfig == nil {
            return ControlRouter.textResponse(status: 400, "mpeg4-generic needs config=<AudioSpecificConfig hex> in its fmtp")
        }
        do {
            try decoders.validate(stream)
        } catch {
            return ControlRouter.textResponse(status: 415, "\(Self.codecName(stream.codec)) stream not playable: \(error)")
        }
        var decryptor: RAOPPacketDecryptor?
        if let wrapped = stream.rsaAESKey {
            guard let identity, let iv = stream.aesIV else {
                return ControlRouter.textResponse(status: 415, "encrypted stream without an aesiv, or no RSA key here")
            }
            do {
                decryptor = try RAOPPacketDecryptor(key: try identity.unwrapStreamKey(wrapped), iv: iv)
            } catch {
                return ControlRouter.textResponse(status: 400, "rsaaeskey: \(error)")
            }
        }
        guard stream.sampleRate == 44100, stream.channels == 2 else {
            return ControlRouter.textResponse(status: 415, "only 44100 Hz stereo is played")
        }
        let number = counter.withLockedValue { $0 += 1; return $0 }
        let decoding = stream.codec == .pcm ? nil : RAOPDecodeQueue(session: number, stream: stream, factory: decoders)
        let session = Session(connection: connection, number: number, stream: stream, decryptor: decryptor, decoding: decoding)
        let outcome = current.withLockedValue { value -> (refused: Bool, previous: Session?) in
            if let active = value, active.connection.id != connection.id, takeover == .refuse {
                return (true, nil)
            }
            defer { value = session }
            return (false, value)
        }
        if outcome.refused {
            return ControlRouter.textResponse(status: 453, "another sender is streaming to this receiver")
        }
        if let previous = outcome.previous {
            logger.info("audio session taken over", metadata: ["session": "\(previous.number)"])
            teardown(previous)
            if previous.connection.id != connection.id { previous.connection.close() }
        }
        nowPlaying.begin(sender: connection.remote.map { ControlServer.describe($0) } ?? "unknown")
        logger.info("audio announced", metadata: ["session": "\(session.number)", "codec": "\(Self.codecName(stream.codec))",
                                                  "rate": "\(stream.sampleRate)",
                                                  "encrypted": "\(decryptor != nil)"])
        return AirPlayResponse(status: 200)
    }

    private func setup(_ request: AirPlayRequest, _ connection: ConnectionContext) -> AirPlayResponse {
        guard let session = own(connection) else { return Self.noSession }
        let first = session.udp.withLockedValue { value -> Bool in
            defer { value.setUp = true }
            return !value.setUp
        }
        guard first else { return ControlRouter.textResponse(status: 455, "SETUP was already done") }
        let transport = RTSPTransport(parsing: request.headers["Transport"] ?? "")
        let output: any PCMOutput
        do {
            output = try makeOutput()
        } catch {
            end(session, reason: "audio output unavailable")
            return ControlRouter.textResponse(status: 500, "audio output unavailable: \(error)")
        }
        let playout = AudioPlayout(output: output, timeline: session.timeline, sampleRate: session.stream.sampleRate,
                                   channels: session.stream.channels, framesPerPacket: session.stream.framesPerPacket)
        session.state.withLockedValue { state in
            playout.setVolume(decibels: state.volume)
            state.playout = playout
            if let remote = connection.remote {
                state.senderControl = transport.port("control_port").flatMap { try? Self.address(remote, port: Int($0)) }
                state.senderTiming = transport.port("timing_port").flatMap { try? Self.address(remote, port: Int($0)) }
            }
        }
        let host = connection.local?.ipAddress ?? "0.0.0.0"
        var ports: [Int] = []
        do {
            for role in [UDPRole.audio, .control, .timing] {
                let (descriptor, port) = try Self.bindUDP(host: host)
                ports.append(port)
                let handler = RAOPDatagramHandler(role: role, session: session, owner: self)
                // The socket is bound, so its port can go in the reply now; NIO adopts it meanwhile,
                // and datagrams that arrive first wait in the socket.
                DatagramBootstrap(group: group)
                    // NIO reads 2 KiB datagrams by default; ALAC packets of 4096 frames are larger.
                    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65536))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                    }
                    .withBoundSocket(descriptor)
                    .whenComplete { result in
                        guard case .success(let channel) = result else { return }
                        let keep = session.udp.withLockedValue { value -> Bool in
                            if value.ended { return false }
                            value.channels[role] = channel
                            return true
                        }
                        if !keep { channel.close(promise: nil) }
                        if keep, role == .timing { self.startTimingRequests(session: session, channel: channel) }
                    }
            }
        } catch {
            // A failed SETUP ends the session, so neither a retry nor another sender is blocked.
            end(session, reason: "UDP ports unavailable")
            return ControlRouter.textResponse(status: 500, "cannot open UDP ports: \(error)")
        }
        let reply = RTSPTransport(spec: "RTP/AVP/UDP", parameters: [
            ("unicast", ""), ("mode", "record"), ("server_port", "\(ports[0])"), ("control_port", "\(ports[1])"),
            ("timing_port", "\(ports[2])"),
        ])
        logger.info("audio setup", metadata: ["session": "\(session.number)", "ports": "\(ports.map(String.init).joined(separator: ","))"])
        return AirPlayResponse(status: 200, headers: [
            "Transport": reply.headerValue, "Session": "\(session.number)", "Audio-Jack-Status": "connected; type=analog",
        ])
    }

    private func setParameter(_ request: AirPlayRequest, _ connection: ConnectionContext) -> AirPlayResponse {
        guard let session = own(connection) else { return Self.noSession }
        let type = request.headers["Content-Type"]?.lowercased() ?? "text/parameters"
        let body = Array(request.body.readableBytesView)
        if type.hasPrefix("text/parameters") {
            for line in String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else { continue }
                switch parts[0].lowercased() {
                case "volume":
                    guard let decibels = Double(parts[1]), decibels.isFinite, decibels <= 0,
                          decibels >= -30 || decibels == -144 else {
                        return ControlRouter.textResponse(status: 400, "volume must be -30...0 dB or -144 (mute)")
                    }
                    session.volume = decibels
                    session.playout?.setVolume(decibels: decibels)
                    nowPlaying.setVolume(decibels: decibels)
                    logger.info("audio volume", metadata: ["session": "\(session.number)", "volume.dB": "\(decibels)"])
                case "progress":
                    let times = parts[1].split(separator: "/").compactMap { UInt32($0) }
                    guard times.count == 3 else { return ControlRouter.textResponse(status: 400, "progress must be start/current/end") }
                    nowPlaying.setProgress(start: times[0], current: times[1], end: times[2], sampleRate: Double(session.stream.sampleRate))
                default:
                    return ControlRouter.textResponse(status: 451, "unknown parameter \(parts[0].prefix(40))")
                }
            }
            return AirPlayResponse(status: 200)
        }
        if type.hasPrefix("application/x-dmap-tagged") {
            do {
                let item = try DMAP.parseItem(body)
                nowPlaying.setText(title: item.title, artist: item.artist, album: item.album, genre: item.genre)
                logger.info("audio metadata", metadata: ["session": "\(session.number)", "title": "\(item.title ?? "")",
                                                         "artist": "\(item.artist ?? "")"])
            } catch {
                // Senders treat any error here as fatal to the stream (pyatv 0.18 even miscounts
                // non-ASCII lengths): keep the audio going, keep the bad metadata out.
                logger.notice("audio metadata ignored", metadata: ["session": "\(session.number)", "reason": "\(error.description)"])
            }
            return AirPlayResponse(status: 200)
        }
        if type.hasPrefix("image/jpeg") || type.hasPrefix("image/png") {
            nowPlaying.setArtwork(type: type.hasPrefix("image/png") ? "image/png" : "image/jpeg", bytes: body)
            return AirPlayResponse(status: 200)
        }
        if type.hasPrefix("image/none") {
            nowPlaying.setArtwork(type: nil, bytes: [])
            return AirPlayResponse(status: 200)
        }
        return ControlRouter.textResponse(status: 415, "SET_PARAMETER does not take \(type)")
    }

    private func getParameter(_ request: AirPlayRequest, _ connection: ConnectionContext) -> AirPlayResponse {
        guard let volume = own(connection)?.volume else { return Self.noSession }
        var text = ""
        for name in String(buffer: request.body).split(whereSeparator: \.isNewline) {
            let key = name.trimmingCharacters(in: .whitespaces)
            guard key == "volume" else { return ControlRouter.textResponse(status: 451, "unknown parameter \(key.prefix(40))") }
            text += String(format: "volume: %.6f\r\n", volume)
        }
        return AirPlayResponse(status: 200, headers: ["Content-Type": "text/parameters"], body: ByteBuffer(string: text))
    }

    // MARK: Session life

    private func end(_ session: Session, reason: String) {
        let removed = current.withLockedValue { value -> Bool in
            guard value === session else { return false }
            value = nil
            return true
        }
        teardown(session)
        if removed {
            nowPlaying.end()
            var figures = session.figures
            figures.ended = true
            lastFigures.withLockedValue { $0 = figures }
            let sync = figures.playout.syncError
            logger.info("audio session ended", metadata: [
                "session": "\(session.number)", "reason": "\(reason)", "received": "\(figures.playout.received)",
                "lost": "\(figures.playout.lost)", "requested": "\(figures.requested)",
                "retransmitted": "\(figures.retransmitted)", "clock": "\(figures.clock.senderClock ? "sender" : "arrival")",
                "sync.mean.ms": "\(Self.milliseconds(sync.mean))", "sync.p95.ms": "\(Self.milliseconds(sync.percentile(0.95)))",
                "sync.max.ms": "\(Self.milliseconds(sync.worst))", "drift.ppm": "\(Self.rounded(figures.clock.driftPPM))",
                "frames.inserted": "\(figures.playout.framesInserted)", "frames.removed": "\(figures.playout.framesRemoved)",
                "dropped": "\(figures.dropped.values.reduce(0, +))",
            ])
            for (reason, count) in figures.dropped.sorted(by: { $0.key < $1.key }) {
                logger.notice("audio datagrams dropped", metadata: ["session": "\(session.number)", "reason": "\(reason)",
                                                                   "count": "\(count)"])
            }
        }
    }

    private func teardown(_ session: Session) {
        let channels = session.udp.withLockedValue { value -> [any Channel] in
            defer { value.channels = [:]; value.ended = true }
            return Array(value.channels.values)
        }
        for channel in channels { channel.close(promise: nil) }
        // Stopping joins the playout thread and may stop a GStreamer pipeline: not on an event loop.
        if let playout = session.playout { DispatchQueue.global().async { playout.stop() } }
    }

    static func milliseconds(_ seconds: Double) -> Double { rounded(seconds * 1000) }
    static func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    /// Asks the sender for its clock: three requests at once (the best of them sets the offset
    /// before the first frame is due), then one every 2 s for the drift, until the channel closes.
    private func startTimingRequests(session: Session, channel: any Channel) {
        guard let destination = session.state.withLockedValue({ $0.senderTiming }) else { return }
        let send = { @Sendable in
            let bytes = SenderTimeline.request()
            var buffer = channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: buffer), promise: nil)
        }
        for delay in [0, 30, 60] {
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) { if channel.isActive { send() } }
        }
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(2), delay: .seconds(2)) { _ in send() }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }

    /// Ends a session that neither RTSP nor RTP has touched for `sessionTimeout` seconds.
    private func startWatchdog() {
        group.next().scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [weak self] task in
            guard let self else { task.cancel(); return }
            guard let session = self.current.withLockedValue({ $0 }) else { return }
            if ProcessInfo.processInfo.systemUptime - session.lastActivity > self.sessionTimeout {
                self.end(session, reason: "no RTSP or RTP for \(Int(self.sessionTimeout)) s")
                session.connection.close()
            }
        }
    }

    // MARK: UDP

    enum UDPRole: Hashable { case audio, control, timing }

    /// Binds a UDP socket on `host`, port 0, synchronously (the port goes into the SETUP reply).
    static func bindUDP(host: String) throws -> (NIOBSDSocket.Handle, Int) {
        let address = try SocketAddress(ipAddress: host, port: 0)
        let family = address.protocol == .inet6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        let status = address.withSockAddr { bind(descriptor, $0, socklen_t($1)) }
        guard status == 0 else {
            Glibc.close(descriptor)
            throw IOError(errnoCode: errno, reason: "bind")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        let port = withUnsafePointer(to: &storage) { pointer -> Int in
            family == AF_INET6
                ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return (descriptor, port)
    }

    /// `::ffff:a.b.c.d` as `a.b.c.d`, so IPv4 peers of dual-stack sockets compare equal.
    static func plainIP(_ address: String) -> String {
        address.hasPrefix("::ffff:") && address.contains(".") ? String(address.dropFirst(7)) : address
    }

    /// The host part of an address as 4 bytes (IPv4, also IPv4-mapped IPv6) or 16 (IPv6), read
    /// straight from the socket address: no text on the per-packet path.
    static func hostBytes(_ address: SocketAddress) -> [UInt8] {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            return bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) ? Array(bytes.suffix(4)) : bytes
        default:
            return []
        }
    }

    static func address(_ remote: SocketAddress, port: Int) throws -> SocketAddress {
        var address = remote
        address.port = port
        return address
    }

    /// An audio packet arrived: decode, ask for what is missing, hand to the playout.
    fileprivate func audioPacket(_ packet: RAOPAudioPacket, session: Session, channel: any Channel, retransmitted: Bool) {
        session.lastActivity = ProcessInfo.processInfo.systemUptime
        guard let playout = session.playout else {
            dropped(session, "audio before SETUP finished", sequence: packet.sequence)
            return
        }
        let payload = session.decryptor.map { $0.decrypt(packet.payload) } ?? packet.payload
        if session.state.withLockedValue({ state -> Bool in
            defer { state.paused = false }
            return state.paused
        }) {
            nowPlaying.setRate(1)
        }
        if retransmitted { session.state.withLockedValue { $0.retransmitted += 1 } }
        if !retransmitted {
            let gap = session.state.withLockedValue { state -> (first: UInt16, count: UInt16)? in
                var missing: (first: UInt16, count: UInt16)?
                if let expected = state.expectedSequence, packet.sequence != expected, !packet.marker {
                    let count = packet.sequence &- expected
                    if count < 512 {
                        missing = (expected, count)
                        state.requested += Int(count)
                    }
                }
                if state.expectedSequence == nil || Int16(bitPattern: packet.sequence &- (state.expectedSequence ?? 0)) >= 0 {
                    state.expectedSequence = packet.sequence &+ 1
                }
                return missing
            }
            if let gap { requestResend(first: gap.first, count: gap.count, session: session, channel: channel) }
        }
        guard let decoding = session.decoding else {
            playout.receive(timestamp: packet.timestamp, samples: RAOPDecodeQueue.bigEndianL16(payload))
            return
        }
        let timestamp = packet.timestamp, sequence = packet.sequence
        let queued = decoding.decode(payload) { [self] result in
            switch result {
            case .success(let samples): playout.receive(timestamp: timestamp, samples: samples)
            case .failure(let error): dropped(session, "\(error)", sequence: sequence)
            }
        }
        if !queued { dropped(session, "decoder backlog", sequence: sequence) }
    }

    /// Counts a dropped datagram and logs it at debug (rate-limited per reason).
    fileprivate func dropped(_ session: Session, _ reason: String, sequence: UInt16? = nil) {
        guard session.drop(reason) else { return }
        logger.debug("audio datagram dropped", metadata: [
            "session": "\(session.number)", "reason": "\(reason)", "sequence": "\(sequence.map(String.init) ?? "-")",
        ])
    }

    /// Sends a resend request (0x55) for `count` packets from `first` to the sender's control port.
    private func requestResend(first: UInt16, count: UInt16, session: Session, channel: any Channel) {
        guard let destination = session.state.withLockedValue({ $0.senderControl }),
              let control = session.udp.withLockedValue({ $0.channels[.control] }) else { return }
        let bytes: [UInt8] = [0x80, 0xD5, 0x00, 0x01, UInt8(first >> 8), UInt8(first & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)]
        var buffer = control.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        control.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: buffer), promise: nil)
    }
}

/// Receives one UDP port's datagrams for a session.
final class RAOPDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let role: AudioSessions.UDPRole
    private weak var session: AudioSessions.Session?
    private weak var owner: AudioSessions?

    init(role: AudioSessions.UDPRole, session: AudioSessions.Session, owner: AudioSessions) {
        self.role = role
        self.session = session
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let session, let owner else { return }
        // Only the sender whose RTSP session this is may feed it, from any of its ports.
        guard AudioSessions.hostBytes(envelope.remoteAddress) == session.senderHost else {
            owner.dropped(session, "datagram from another host (\(role))")
            return
        }
        guard let packet = RAOPPacket.parse(Array(envelope.data.readableBytesView)) else {
            owner.dropped(session, "not a RAOP packet (\(role), \(envelope.data.readableBytes) bytes)")
            return
        }
        switch (role, packet) {
        case (.audio, .audio(let audio)):
            // Spread over the sequence numbers (Knuth's multiplicative hash), the same every run.
            if owner.faultDropPercent > 0, Int((UInt32(audio.sequence) &* 2_654_435_761) >> 16) % 100 < owner.faultDropPercent { return }
            owner.audioPacket(audio, session: session, channel: context.channel, retransmitted: false)
        case (.control, .retransmitted(let audio)):
            owner.audioPacket(audio, session: session, channel: context.channel, retransmitted: true)
        case (.control, .sync(let sync)):
            session.lastActivity = ProcessInfo.processInfo.systemUptime
            session.timeline.addSync(sync)
        case (.timing, .timingReply(let reply)):
            session.timeline.addTimingReply(reply)
        case (.timing, .timingRequest(let request)):
            // Answer a sender's timing request with our clock.
            let now = NTPClock.now()
            let reply = RAOPTiming(origin: request.transmit, receive: now, transmit: NTPClock.now()).bytes(reply: true)
            var buffer = context.channel.allocator.buffer(capacity: reply.count)
            buffer.writeBytes(reply)
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
        default:
            owner.dropped(session, "unexpected packet on the \(role) port")
        }
    }
}

/// The wall clock as NTP 32.32 fixed point (seconds since 1900).
enum NTPClock {
    static func now() -> UInt64 { NTPTime.timestamp(NTPTime.wallClock()) }
}
