import AirPlayCrypto
import AirPlayMedia
import AirPlayNowPlaying
import AirPlayTiming
import AirPlayWire
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import LinuxIO

/// Policy for an `ANNOUNCE` from a sender while another sender streams.
public enum AudioTakeover: String, Hashable, Sendable {
    /// The new sender takes over; the old one's sockets and connection are closed.
    case replace
    /// The new sender gets 453 while the current one streams.
    case refuse
}

/// RAOP over RTSP on the control port: carries out what `AudioSessionStateMachine` decides
/// (replies, UDP ports, playout, resend requests, now-playing) and feeds it requests, packets
/// and time. The exchanges are written down in `Protocol/raop.md`.
public final class AudioSessions: Sendable {
    /// Makes the output a new session plays to, for audio in the given format.
    public typealias OutputFactory = @Sendable (PCMFormat) throws -> any PCMOutput

    /// RTSP methods handled here.
    public static let methods = AudioSessionStateMachine.methods
    /// `POST` paths handled here (`/feedback`, and AirPlay 2's `/command` and `/audioMode`).
    public static let postPaths = AudioSessionStateMachine.postPaths

    /// What one session's stream measured: for the per-session log line, `/now-playing` and benchmarks.
    public struct StreamFigures: Hashable, Sendable {
        /// The session number.
        public var session: Int
        /// L16, ALAC, AAC or AAC-ELD.
        public var codec: String
        /// Packets, frames and sync error of the playout.
        public var playout: AudioPlayout.Statistics
        /// What is known of the sender's NTP clock (RAOP and AirPlay 2 realtime on NTP).
        public var clock: SenderTimeline.Figures
        /// What places frames now: `ptp` (anchors on the PTP clock), `sender` (NTP syncs) or `arrival`.
        public var clockSource = "arrival"
        /// What placed most of the frames played so far, in the same terms: the session's clock.
        public var timedMostlyBy = "arrival"
        /// Packets asked for again with resend requests.
        public var requested = 0
        /// Requests repeated because the resend did not come either.
        public var requestedAgain = 0
        /// Retransmitted packets received.
        public var retransmitted = 0
        /// Datagrams dropped before reaching the playout, by reason (wrong sender, not RAOP,
        /// undecodable, decoder backlog…).
        public var dropped: [String: Int] = [:]
        /// The same datagrams by kind, as a diagnosis tells them apart.
        public var drops: [DatagramDrop: Int] = [:]
        /// True once the session has ended (the figures are then the last session's).
        public var ended = false
    }

    let group: any EventLoopGroup
    /// The AirPort key, parsed at the first request that needs it: OpenSSL's providers stay
    /// unloaded (about 2 MiB) on a box that is only waiting.
    private var identity: RAOPIdentity? {
        switch RAOPIdentity.shared {
        case .success(let identity): return identity
        case .failure(let error):
            logger.error("RAOP RSA key unavailable: encrypted streams and Apple-Challenge cannot be answered", metadata: ["error": "\(error)"])
            return nil
        }
    }
    private let authenticator: DigestAuthenticator?
    private let deviceID: [UInt8]
    private let makeOutput: OutputFactory
    /// How each playout follows a drifting clock (`audio_drift_correction`).
    private let driftCorrection: DriftCorrection
    /// The card's mixer, when the sender's volume goes there instead of into the samples.
    let hardwareVolume: (any HardwareVolume)?
    let decoders: any RAOPDecoderFactory
    /// Test-only fault injection: this share of first-time audio packets is dropped on arrival.
    let faultDropPercent: Int
    /// Test-only: a realtime stream's SETUP is refused with 400, as Sonos refuses AirPlay 2's
    /// native streams (the sender then plays over AirPlay 1).
    let faultRefuseRealtimeStreams: Bool
    /// The PTP follower: PTP sessions and buffered streams are served only with it.
    let ptp: (any PTPClock)?
    let logger: Logger
    /// The now-playing state of the box.
    public let nowPlaying: NowPlaying
    let machine: NIOLockedValueBox<AudioSessionStateMachine>
    /// The time the session machine is given (a manual clock in tests).
    private let clock: any MonotonicClock
    let sessions = NIOLockedValueBox<[Int: RAOPSessionResources]>([:])
    /// AirPlay 2 sessions' event channels, by session number.
    let eventChannels = NIOLockedValueBox<[Int: AirPlay2EventChannel]>([:])
    /// Remote-control-only sessions' event channels and data streams, by control connection:
    /// they hold no audio session, and end with their connection or its TEARDOWN.
    let connectionChannels = NIOLockedValueBox<[ObjectIdentifier: ConnectionChannels]>([:])
    let lastFigures = NIOLockedValueBox<StreamFigures?>(nil)
    /// The last sessions as they ended (`SessionHistory`).
    let history = NIOLockedValueBox(SessionHistory())

    /// Audio sessions playing to outputs made by `makeOutput`, decoding with `decoders`, following
    /// drifting clocks as `driftCorrection` says, the volume on `hardwareVolume` when there is one.
    public init(group: any EventLoopGroup, deviceID: DeviceID, password: String? = nil, makeOutput: @escaping OutputFactory,
                decoders: any RAOPDecoderFactory, takeover: AudioTakeover, sessionTimeout: Double = 30, nowPlaying: NowPlaying,
                faultDropPercent: Int = 0, faultRefuseRealtimeStreams: Bool = false, clock: any MonotonicClock = SystemClock(),
                ptp: (any PTPClock)? = nil, driftCorrection: DriftCorrection = .stuff,
                hardwareVolume: (any HardwareVolume)? = nil, logger: Logger) {
        self.ptp = ptp
        self.driftCorrection = driftCorrection
        self.hardwareVolume = hardwareVolume
        self.clock = clock
        self.faultDropPercent = faultDropPercent
        self.faultRefuseRealtimeStreams = faultRefuseRealtimeStreams
        self.group = group
        authenticator = password.flatMap { $0.isEmpty ? nil : DigestAuthenticator(password: $0) }
        self.deviceID = deviceID.bytes
        self.makeOutput = makeOutput
        self.decoders = decoders
        machine = NIOLockedValueBox(AudioSessionStateMachine(
            configuration: .init(takeover: takeover, sessionTimeout: sessionTimeout), firstNumber: Int.random(in: 1...1_000_000)))
        self.nowPlaying = nowPlaying
        self.logger = logger
        startWatchdog()
    }

    func now() -> Double { clock.now() }

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

    private func answer(_ request: AirPlayRequest, connection: ConnectionContext) -> AirPlayResponse {
        // OPTIONS stays open so senders can check the receiver and learn that a password is needed;
        // everything that changes state needs the password. A refused request changes nothing.
        if let authenticator, request.method != "OPTIONS",
           let refusal = authenticator.check(request, connection: connection.id) {
            logger.notice("audio request without the right password", metadata: ["request.method": "\(request.method)"])
            return refusal
        }
        // The event keys, and the right to send audio at all, come from the connection's pairing.
        if request.method == "SETUP", AirPlay2Setup.hasPlistBody(request), connection.pairingSecret == nil {
            return .text(status: 470, "AirPlay 2 SETUP needs an encrypted connection: pair-verify or transient pair-setup first")
        }
        let decoded: AudioRequest
        do {
            decoded = try AudioRequest(decoding: request, ptp: ptp != nil)
        } catch {
            logger.notice("audio request refused", metadata: ["request.method": "\(request.method)", "reason": "\(error)"])
            return error.response
        }
        let actions: [AudioSessionStateMachine.Action]
        var prepared: PreparedStream?
        switch decoded {
        case .setupSession(let session): return setupSession(session, connection: connection)
        case .setupStream(let stream, let description): return setupStream(stream, description, request: request, connection: connection)
        case .setupRemoteControl(let session): return openRemoteControl(session, connection: connection)
        case .setupDataStream(let stream): return openDataStream(stream, connection: connection)
        case .announce(let stream):
            switch prepare(stream) {
            case .refused(let refusal): return refusal
            case .playable(let stream): prepared = stream
            }
            prepared?.sender = Self.sender(of: request, connection: connection)
            let host = connection.remote.map(RAOPPorts.hostBytes)
            actions = machine.withLockedValue { $0.receive(decoded, on: connection.id, senderHost: host, now: self.now()) }
        case .other(let request):
            if let answer = remoteControlRequest(request, on: connection.id) { return answer }
            actions = machine.withLockedValue { $0.receive(decoded, on: connection.id, now: self.now(), wallClock: Date()) }
        }
        return perform(actions, connection: connection, prepared: prepared) ?? AirPlayResponse.text(status: 500, "no reply")
    }

    /// The control connection closed: its session, if any, ends.
    public func connectionClosed(_ id: ObjectIdentifier) {
        authenticator?.connectionClosed(id)
        endRemoteControl(on: id)
        perform(machine.withLockedValue { $0.connectionClosed(id) })
    }

    /// Whether the connection owns the audio session (its quiet RTSP connection must stay open).
    public func ownsSession(_ id: ObjectIdentifier) -> Bool {
        machine.withLockedValue { $0.current?.connection == id }
    }

    /// Ends the session (shutdown).
    public func stopAll() {
        perform(machine.withLockedValue { $0.shutdown() })
    }

    /// The figures of the current session, or else of the last one.
    public var streamFigures: StreamFigures? {
        let current = machine.withLockedValue { $0.current }
        if let current, let resources = sessions.withLockedValue({ $0[current.number] }) { return resources.figures() }
        return lastFigures.withLockedValue { $0 }
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

    // MARK: ANNOUNCE

    /// A stream this box can play, with the key to decrypt it.
    struct PreparedStream {
        var description: RAOPStreamDescription
        var cipher: AudioPacketCipher?
        /// AirPlay 2 buffered (type 103): TCP data, played on rate anchors.
        var buffered = false
        /// AirPlay 2 realtime (type 96) in a PTP session: timed by 0xD7 anchors on the PTP clock.
        var ptpRealtime = false
        /// Who sends it, as now-playing shows it.
        var sender: NowPlayingSender?
    }

    /// The sender as its request headers describe it: its name (`X-Apple-Client-Name`), user
    /// agent, and the `DACP-ID`/`Active-Remote` pair its remote-control service answers to.
    static func sender(of request: AirPlayRequest, connection: ConnectionContext, name: String? = nil) -> NowPlayingSender {
        func header(_ name: String) -> String? {
            request.headers[name].map { String($0.prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let address = connection.remote?.ipAddress.map(Self.unmapped)
        return NowPlayingSender(kind: .audio, name: name ?? header("X-Apple-Client-Name") ?? address ?? "unknown",
                                clientName: name ?? header("X-Apple-Client-Name"), address: address,
                                serverAddress: connection.local?.ipAddress.map(Self.unmapped), userAgent: header("User-Agent"),
                                dacpID: header("DACP-ID"), activeRemote: header("Active-Remote"))
    }

    /// An IPv4 address as IPv4 (`::ffff:127.0.0.1` is `127.0.0.1`): the dual-stack socket
    /// reports IPv4 peers that way, and readers expect the address the sender has.
    static func unmapped(_ address: String) -> String {
        address.lowercased().hasPrefix("::ffff:") && address.contains(".") ? String(address.dropFirst(7)) : address
    }

    /// A playable stream, or the 4xx that refuses it.
    enum StreamPreparation {
        case playable(PreparedStream)
        case refused(AirPlayResponse)
    }

    /// Checks that an announced stream can be decrypted and decoded here; a refusal is the 4xx
    /// to send, and changes nothing.
    private func prepare(_ stream: RAOPStreamDescription) -> StreamPreparation {
        do {
            try decoders.validate(stream)
        } catch {
            return .refused(.text(status: 415, "\(Self.codecName(stream.codec)) stream not playable: \(error)"))
        }
        var cipher: AudioPacketCipher?
        if let wrapped = stream.rsaAESKey {
            guard let identity, let iv = stream.aesIV else {
                return .refused(.text(status: 415, "encrypted stream without an aesiv, or no RSA key here"))
            }
            do {
                cipher = .aes(try RAOPPacketDecryptor(key: try identity.unwrapStreamKey(wrapped), iv: iv))
            } catch {
                return .refused(.text(status: 400, "rsaaeskey: \(error)"))
            }
        }
        return .playable(PreparedStream(description: stream, cipher: cipher))
    }

    // MARK: Carrying out actions

    /// Carries out the machine's actions in order; returns the reply, if one was among them.
    @discardableResult
    func perform(_ actions: [AudioSessionStateMachine.Action], connection: ConnectionContext? = nil,
                         prepared: PreparedStream? = nil) -> AirPlayResponse? {
        var reply: AirPlayResponse?
        var ended: [ObjectIdentifier: ConnectionContext] = [:]
        for action in actions {
            switch action {
            case .reply(let response):
                reply = response
            case .beginSession(let number, _):
                guard let connection, let prepared else { continue }
                begin(number, connection: connection, prepared: prepared)
            case .openPorts(let number, let controlPort, let timingPort):
                reply = perform(openPorts(number, controlPort: controlPort, timingPort: timingPort))
            case .endSession(let session, let reason):
                if let connection = end(session, reason: reason) { ended[connection.id] = connection }
            case .endStreams(let session, let reason):
                _ = endStreams(session, reason: reason)
            case .openEventPort(let number):
                guard let connection else { continue }
                reply = perform(openEventPort(number, connection: connection))
            case .closeConnection(let id):
                ended[id]?.close()
            case .flush(let number, let before, let resumeSequence):
                guard let resources = sessions.withLockedValue({ $0[number] }) else { continue }
                resources.packets.withLockedValue { $0.flush(resumingAt: resumeSequence) }
                // What follows the flush is placed by the sender's next sync or anchor, not the last.
                resources.timeline.flush()
                if !resources.buffered { resources.anchored?.forget() }
                resources.playout?.flush(before: before)
            case .setVolume(let number, let decibels):
                applyVolume(decibels, session: number)
            case .nowPlaying(let event):
                apply(event)
            case .notice(let text):
                logger.notice("\(text)")
            case .anchor(let number, let anchor):
                applyAnchor(anchor, session: number)
            case .flushBuffered(let number, let flush):
                applyFlush(flush, session: number)
            case .timingPeers(let addresses):
                ptp?.setPeers(addresses)
                logger.info("PTP timing peers", metadata: ["peers": "\(addresses.joined(separator: ","))"])
            }
        }
        return reply
    }

    private func apply(_ event: NowPlayingEvent) {
        // The surfaces first: the log line can wait a moment, a metadata reader should not.
        nowPlaying.post(event)
        if case .metadata(let fields, _) = event {
            let title = fields.first { $0.tag == "minm" }.map { String(decoding: $0.value, as: UTF8.self) } ?? ""
            logger.info("audio metadata", metadata: ["title": "\(title)", "fields": "\(fields.count)"])
        }
    }

    private func begin(_ number: Int, connection: ConnectionContext, prepared: PreparedStream) {
        let stream = prepared.description
        let decoding: RAOPPacketDecoding
        if stream.codec == .pcm {
            decoding = .bigEndianPCM(bytesPerSample: stream.pcmFormat.bytesPerSample)
        } else if decoders.decodesWithoutWaiting(stream), let decoder = try? decoders.makeDecoder(for: stream) {
            decoding = .inline(InlineDecoder(decoder))
        } else {
            decoding = .queued(RAOPDecodeQueue(session: number, stream: stream, factory: decoders))
        }
        let anchored = prepared.buffered || prepared.ptpRealtime ? ptp.map {
            AnchoredTimeline(clock: $0, sampleRate: stream.sampleRate, holdLimit: prepared.buffered ? nil : Self.firstAnchorWait)
        } : nil
        let resources = RAOPSessionResources(number: number, connection: connection, stream: stream,
                                             cipher: prepared.cipher, decoding: decoding, anchored: anchored, buffered: prepared.buffered,
                                             began: now())
        sessions.withLockedValue { $0[number] = resources }
        let sender = prepared.sender ?? NowPlayingSender(kind: .audio, name: connection.remote?.ipAddress ?? "unknown")
        nowPlaying.post(.began(sender, format: "\(stream.pcmFormat)"))
        logger.info("audio announced", metadata: ["session": "\(number)", "codec": "\(Self.codecName(stream.codec))",
                                                  "format": "\(stream.pcmFormat)", "encrypted": "\(prepared.cipher != nil)",
                                                  "buffered": "\(prepared.buffered)"])
    }

    /// How long a realtime PTP stream waits for its first 0xD7 anchor (and a PTP clock to map it)
    /// before it plays from arrival: OwnTone sends one with its first packets, seconds ahead.
    static let firstAnchorWait = 2.0

    /// Makes the playout and binds the three UDP ports; the machine turns the outcome into SETUP's reply.
    private func openPorts(_ number: Int, controlPort: UInt16?, timingPort: UInt16?) -> [AudioSessionStateMachine.Action] {
        guard let resources = sessions.withLockedValue({ $0[number] }) else {
            return machine.withLockedValue { $0.portsFailed(session: number, reason: "the session is gone") }
        }
        // Built on the playout's thread: a GStreamer sink must not be built on this event loop.
        let makeOutput = self.makeOutput, format = resources.stream.pcmFormat
        let output = DeferredPCMOutput(make: { try makeOutput(format) }, failed: { [weak self] reason in
            guard let self else { return }
            self.logger.error("audio output failed", metadata: ["session": "\(number)", "reason": "\(reason)"])
            self.perform(self.machine.withLockedValue { $0.outputFailed(session: number, reason: reason) })
        })
        let stream = resources.stream
        let playout = AudioPlayout(output: output, timeline: resources.playoutTimeline, format: format,
                                   framesPerPacket: stream.framesPerPacket, correction: driftCorrection)
        if resources.buffered { return openBufferedPorts(resources, playout: playout) }
        let remote = resources.connection.remote
        resources.state.withLockedValue { state in
            state.playout = playout
            if let remote {
                state.senderControl = controlPort.map { RAOPPorts.address(remote, port: $0) }
                state.senderTiming = timingPort.map { RAOPPorts.address(remote, port: $0) }
            }
        }
        let local = resources.connection.local
        var ports: [Int] = []
        do {
            for role in RAOPPortRole.allCases {
                let (descriptor, port) = try RAOPPorts.bindUDP(local: local)
                ports.append(port)
                if role == .audio {
                    // Audio is read by the playout's own thread; the control and timing ports
                    // (a few datagrams a second) stay on the event loop.
                    playout.attach(UDPDatagramSocket(
                        descriptor: descriptor, expectedHost: resources.senderHost,
                        handle: { [weak self, weak resources] datagram, fromSender in
                            guard let self, let resources else { return }
                            self.audioDatagram(datagram, fromSender: fromSender, session: resources)
                        },
                        truncated: { [weak self, weak resources] in
                            guard let self, let resources else { return }
                            self.dropped(resources, .malformed, "datagram larger than \(UDPDatagramSocket.slotSize) bytes (audio)")
                        }))
                    continue
                }
                let handler = RAOPDatagramHandler(role: role, session: resources, owner: self)
                RAOPPorts.adopt(descriptor, group: group, handler: handler) { channel in
                    if resources.adopt(channel, as: role, descriptor: descriptor), role == .timing {
                        self.startTimingRequests(resources, channel: channel, descriptor: descriptor)
                    }
                }
            }
        } catch {
            return machine.withLockedValue { $0.portsFailed(session: number, reason: "cannot open UDP ports: \(error)") }
        }
        logger.info("audio setup", metadata: ["session": "\(number)", "ports": "\(ports.map(String.init).joined(separator: ","))"])
        return machine.withLockedValue { $0.portsOpened(session: number, audio: ports[0], control: ports[1], timing: ports[2]) }
    }

    /// Ends a session: its event channel (AirPlay 2) and its stream; returns its control
    /// connection (for closing it).
    private func end(_ session: AudioSessionStateMachine.Session, reason: String) -> ConnectionContext? {
        let events = eventChannels.withLockedValue { $0.removeValue(forKey: session.number) }
        events?.close()
        return endStreams(session, reason: reason)?.connection ?? events?.connection
    }

    /// How long a stream its sender tore down while playing goes on playing what it holds: the
    /// 11025 frames flags 7 add. pyatv pads its stream with one latency of silence as it reckons
    /// it (1.5 s, without them) and then sends TEARDOWN: its last quarter second is still here.
    static let teardownTail = Double(RAOPSync.fixedLatencyFrames) / 44100

    /// Tears the session's stream resources down and logs its figures; returns them.
    private func endStreams(_ session: AudioSessionStateMachine.Session, reason: String) -> RAOPSessionResources? {
        guard let resources = sessions.withLockedValue({ $0.removeValue(forKey: session.number) }) else { return nil }
        let tornDownPlaying = reason.hasPrefix("TEARDOWN") && !session.paused && !resources.buffered
        nowPlaying.post(.ended)
        var figures = resources.figures()
        figures.ended = true
        noteEnded(session, resources: resources, reason: reason, figures: figures)
        guard tornDownPlaying else {
            resources.tearDown()
            logEnd(session, reason: reason, figures: figures)
            return resources
        }
        // The figures are logged once the tail has played (they count its frames too).
        resources.tearDown(tail: Self.teardownTail) { [weak self] in
            guard let self else { return }
            var figures = resources.figures()
            figures.ended = true
            self.lastFigures.withLockedValue { $0 = figures }
            self.logEnd(session, reason: reason, figures: figures)
        }
        return resources
    }

    // MARK: Packets and time

    /// A datagram on the audio port, read in place by the session's `UDPDatagramSocket`.
    func audioDatagram(_ datagram: UnsafeRawBufferPointer, fromSender: Bool, session resources: RAOPSessionResources) {
        // Only the sender whose RTSP session this is may feed it, from any of its ports
        // (PulseAudio and PipeWire send audio from an ephemeral one).
        guard fromSender else { return dropped(resources, .strayHost, "datagram from another host (audio)") }
        guard let header = RAOPAudioPacket.header(of: datagram) else {
            return dropped(resources, .malformed, RAOPPacket.parse(Array(datagram)) == nil
                           ? "not a RAOP packet (audio, \(datagram.count) bytes)" : "unexpected packet on the audio port")
        }
        // Spread over the sequence numbers (Knuth's multiplicative hash), the same every run.
        if faultDropPercent > 0, Int((UInt32(header.sequence) &* 2_654_435_761) >> 16) % 100 < faultDropPercent { return }
        audioPacket(sequence: header.sequence, timestamp: header.timestamp, marker: header.marker, ssrc: header.ssrc,
                    payload: UnsafeRawBufferPointer(rebasing: datagram[RAOPAudioPacket.headerSize...]),
                    session: resources, retransmitted: false)
    }

    /// An audio packet arrived (a retransmission, on the control port).
    func audioPacket(_ packet: RAOPAudioPacket, session resources: RAOPSessionResources, retransmitted: Bool) {
        packet.payload.withUnsafeBytes { payload in
            audioPacket(sequence: packet.sequence, timestamp: packet.timestamp, marker: packet.marker, ssrc: packet.ssrc,
                        payload: payload, session: resources, retransmitted: retransmitted)
        }
    }

    /// Asks for what is missing, then decodes the payload and hands it to the playout. Only
    /// the session's own packet lock is taken; the control machine only on the rare resume.
    private func audioPacket(sequence: UInt16, timestamp: UInt32, marker: Bool, ssrc: UInt32, payload encrypted: UnsafeRawBufferPointer,
                             session resources: RAOPSessionResources, retransmitted: Bool) {
        let (arrival, flushes) = resources.packets.withLockedValue {
            ($0.arrived(sequence: sequence, marker: marker, retransmitted: retransmitted, now: self.now()), $0.flushes)
        }
        for request in arrival.resends { requestResend(request, resources: resources) }
        if arrival.resumed { perform(machine.withLockedValue { $0.streamResumed(session: resources.number, flushes: flushes) }) }
        guard let playout = resources.playout else {
            dropped(resources, .beforeSetup, "audio before SETUP finished", sequence: sequence)
            return
        }
        // A sender whose syncs said this packet was due before it came is not timing it.
        if !retransmitted, resources.anchored == nil { resources.timeline.audioArrived(rtp: timestamp) }
        guard let cipher = resources.cipher else {
            if case .bigEndianPCM = resources.decoding {
                // Clear PCM: straight from the receive buffer to samples.
                playout.receive(timestamp: timestamp, samples: resources.decoding.pcmSamples(encrypted))
            } else {
                decode(Array(encrypted), timestamp: timestamp, sequence: sequence, playout: playout, session: resources)
            }
            return
        }
        guard let payload = cipher.open(encrypted, timestamp: timestamp, ssrc: ssrc) else {
            return dropped(resources, .unauthenticated, "audio packet does not authenticate (AirPlay 2 shk)", sequence: sequence)
        }
        decode(payload, timestamp: timestamp, sequence: sequence, playout: playout, session: resources)
    }

    func decode(_ payload: [UInt8], timestamp: UInt32, sequence: UInt16, playout: AudioPlayout,
                        session resources: RAOPSessionResources) {
        let queue: RAOPDecodeQueue
        switch resources.decoding {
        case .bigEndianPCM(let width):
            playout.receive(timestamp: timestamp, samples: RAOPPacketDecoding.bigEndianSamples(payload, width: width))
            return
        case .inline(let decoder):
            switch decoder.decode(payload) {
            case .success(let samples): playout.receive(timestamp: timestamp, samples: samples)
            case .failure(let error): dropped(resources, .undecodable, "\(error)", sequence: sequence)
            }
            return
        case .queued(let decodeQueue):
            queue = decodeQueue
        }
        let queued = queue.decode(payload) { [self] result in
            switch result {
            case .success(let samples): playout.receive(timestamp: timestamp, samples: samples)
            case .failure(let error): dropped(resources, .undecodable, "\(error)", sequence: sequence)
            }
        }
        if !queued { dropped(resources, .decoderBacklog, "decoder backlog", sequence: sequence) }
    }

    /// A sync or timing packet, or buffered data: the sender is alive.
    func senderAlive(_ resources: RAOPSessionResources) {
        let now = now()
        resources.packets.withLockedValue { $0.heard(now: now) }
    }

    /// Counts a dropped datagram and logs it at debug (rate-limited per reason).
    func dropped(_ resources: RAOPSessionResources, _ kind: DatagramDrop, _ reason: String, sequence: UInt16? = nil) {
        guard resources.drop(kind, reason) else { return }
        logger.debug("audio datagram dropped", metadata: [
            "session": "\(resources.number)", "reason": "\(reason)", "sequence": "\(sequence.map(String.init) ?? "-")",
        ])
    }

    /// Sends a resend request (0x55) to the sender's control port.
    private func requestResend(_ request: RAOPResendRequest, resources: RAOPSessionResources) {
        let (destination, control, descriptor) = resources.state.withLockedValue {
            ($0.senderControl, $0.channels[.control], $0.descriptors[.control])
        }
        guard let destination, let control, let descriptor else { return }
        RAOPPorts.send(request.bytes, on: control, descriptor: descriptor, to: destination)
    }

    /// Gives the time ten times a second: resends lost on the way are asked for again in time
    /// to play, and a vanished sender's session ends.
    private func startWatchdog() {
        group.next().scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { [weak self] task in
            guard let self else { task.cancel(); return }
            let now = self.now()
            let number = self.machine.withLockedValue { $0.current?.number }
            let resources = number.flatMap { number in self.sessions.withLockedValue { $0[number] } }
            let (due, heard) = resources?.packets.withLockedValue { ($0.tick(now: now), $0.lastHeard) } ?? ([], nil)
            if let resources { for request in due { self.requestResend(request, resources: resources) } }
            self.perform(self.machine.withLockedValue { $0.tick(now: now, streamHeard: heard) })
            self.checkClocks(now: now)
        }
    }
}
