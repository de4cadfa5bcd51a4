import AirPlayNowPlaying
import AirPlayWire
import FoundationEssentials
import NIOCore

/// The RAOP session logic of the receiver as a value: RTSP requests, UDP packet arrivals,
/// closed connections and the passing of time go in; what to do comes out as `Action`s. No
/// sockets, no clocks, no locks: `AudioSessions` carries the actions out, and tests drive the
/// whole protocol (Protocol/raop.md) through it without a network.
///
/// The box plays one sender at a time. An ANNOUNCE from another connection takes over (or is
/// refused with 453, by configuration); SETUP opens the UDP ports once; RECORD starts the clock;
/// FLUSH pauses and drops what was queued; TEARDOWN, a closed connection or `sessionTimeout`
/// seconds without RTSP or RTP end the session.
public struct AudioSessionStateMachine: Sendable {
    /// Identifies a control connection.
    public typealias ConnectionID = ObjectIdentifier

    /// The policy and limits the machine applies.
    public struct Configuration: Sendable {
        /// Whether a second sender replaces the first or is refused.
        public var takeover: AudioTakeover
        /// Seconds without RTSP or RTP after which a session ends.
        public var sessionTimeout: Double
        /// The latency announced in RECORD's reply, in frames (the playout's buffer).
        public var latencyFrames = 22050

        /// A configuration.
        public init(takeover: AudioTakeover, sessionTimeout: Double) {
            self.takeover = takeover
            self.sessionTimeout = sessionTimeout
        }
    }

    /// Which protocol set the session up.
    public enum Kind: Hashable, Sendable {
        /// AirPlay 1: ANNOUNCE with SDP, SETUP with a Transport header.
        case raop
        /// AirPlay 2: SETUP with a plist, twice (the session, then its streams), on an
        /// encrypted connection.
        case airPlay2
    }

    /// Where a session is.
    public enum Phase: Hashable, Sendable {
        /// ANNOUNCE was accepted; SETUP is next.
        case announced
        /// AirPlay 2 SETUP phase 1 asked for the event port; the reply waits for it.
        case openingEventPort
        /// AirPlay 2 SETUP phase 1 was answered; SETUP with `streams` is next (or RECORD and
        /// `/play` for video).
        case sessionSetUp
        /// SETUP asked for UDP ports; the reply waits for them.
        case openingPorts
        /// Ports are open; audio may come (RECORD normally first).
        case ready
        /// RECORD was received.
        case recording
    }

    /// The one session the box plays.
    public struct Session: Hashable, Sendable {
        /// The session number (the RTSP `Session` header).
        public var number: Int
        /// The control connection it belongs to.
        public var connection: ConnectionID
        /// What ANNOUNCE (or AirPlay 2's SETUP with streams) described; nil until then.
        public var stream: RAOPStreamDescription?
        /// The protocol that set it up.
        public var kind: Kind = .raop
        /// AirPlay 2: the sender's NTP port from SETUP phase 1 (RAOP gives it in SETUP's Transport).
        public var senderTimingPort: UInt16?
        /// AirPlay 2: the sender's device name from SETUP phase 1 (`name`), for now-playing.
        public var senderName: String?
        /// The sender's host address, when known: its requests elsewhere (a video it plays) keep
        /// the session alive (`senderActive`).
        public var senderHost: [UInt8]?
        /// Where it is.
        public var phase: Phase
        /// The last RTSP request or UDP packet, on the caller's clock.
        public var lastActivity: Double
        /// The volume in dB (-144 is mute).
        public var volume: Double = 0
        /// Set by FLUSH (and a buffered stream's rate 0): paused until the sender plays again.
        public var paused = false
        /// FLUSHes taken since the stream's SETUP: the stream's packets count theirs alike
        /// (`AudioPacketPipeline.flushes`), so a resume from before the last FLUSH is told apart.
        public var flushes = 0
        /// RECORD was received. Apple's senders, OwnTone and libraop send it before AirPlay 2's
        /// stream SETUP, whose new stream then starts out playing, as in the other order.
        public var recorded = false
        /// AirPlay 2: the stream is buffered (type 103, over TCP, anchored on PTP).
        public var buffered = false
        /// The remote commands the sender said it takes (`updateMRSupportedCommands`), if it
        /// said: an AirPlay 2 sender may say so between its two SETUPs.
        public var senderCommands: Set<Int>?
        /// AirPlay 2: the session is timed by PTP (phase 1's `timingProtocol`).
        public var usesPTP = false
        /// AirPlay 2, feature bit 50: what the sender's MediaRemote now-playing messages said,
        /// merged (`updateMRNowPlayingInfo`), and its last playback state.
        public var mediaRemote: MediaRemoteNowPlayingInfo?
        /// The last `updateMRPlaybackState`.
        public var mediaRemoteState: MediaRemotePlaybackState?
    }

    /// What the caller must do.
    public enum Action: Hashable, Sendable {
        /// Answer the request that caused this.
        case reply(AirPlayResponse)
        /// A session begins: build its decryptor, decoder queue and clock; tell now-playing who plays.
        case beginSession(number: Int, connection: ConnectionID)
        /// Bind the session's three UDP ports, then call `portsOpened` or `portsFailed`.
        case openPorts(session: Int, senderControlPort: UInt16?, senderTimingPort: UInt16?)
        /// Stop the session's playout, close its ports, log its figures (the session as it ended).
        case endSession(Session, reason: String)
        /// Close a control connection (a sender taken over or timed out).
        case closeConnection(ConnectionID)
        /// Drop what the playout holds before this RTP time (all of it when nil); the stream's
        /// packets start a new run, and the sender plays again from `resumeSequence` (RTP-Info's
        /// `seq`; packets still in flight from before it do not count).
        case flush(session: Int, before: UInt32?, resumeSequence: UInt16?)
        /// Apply a volume to the playout.
        case setVolume(session: Int, decibels: Double)
        /// Update the box's now-playing state.
        case nowPlaying(NowPlayingEvent)
        /// Log a notice about the session (metadata that was ignored, and why).
        case notice(String)
        /// AirPlay 2: listen for the session's event channel, then call `eventPortOpened` or
        /// `eventPortFailed`.
        case openEventPort(session: Int)
        /// AirPlay 2 TEARDOWN of the streams only: stop the playout and close the UDP ports; the
        /// session and its event channel stay.
        case endStreams(Session, reason: String)
        /// Buffered stream: play (or pause) on this anchor.
        case anchor(session: Int, RateAnchor)
        /// Buffered stream: drop what the flush names.
        case flushBuffered(session: Int, BufferedFlush)
        /// PTP: follow only masters at these addresses (the session's timing peers).
        case timingPeers([String])
    }

    /// RTSP methods this machine answers.
    public static let methods: Set<String> = [
        "OPTIONS", "ANNOUNCE", "SETUP", "RECORD", "FLUSH", "TEARDOWN", "SET_PARAMETER", "GET_PARAMETER", "PAUSE", "SETPEERS", "SETPEERSX",
        "SETRATEANCHORTIME", "FLUSHBUFFERED", "SETMAGICCOOKIE",
    ]

    /// `POST` paths on the control connection that belong to audio sessions.
    public static let postPaths: Set<String> = ["/feedback", "/command", "/audioMode"]

    let configuration: Configuration
    /// The session playing, if any.
    public internal(set) var current: Session?
    var nextNumber: Int

    /// A machine with no session; numbers start after `firstNumber`.
    public init(configuration: Configuration, firstNumber: Int) {
        self.configuration = configuration
        nextNumber = firstNumber
    }

    static let noSession = AirPlayResponse.text(status: 454, "no RAOP session on this connection; ANNOUNCE and SETUP first")

    func owned(by connection: ConnectionID) -> Session? {
        current?.connection == connection ? current : nil
    }

    // MARK: RTSP

    /// Every RTSP request but ANNOUNCE (whose stream is checked outside, see `announce`).
    /// `wallClock` is the box's calendar time, to carry a MediaRemote elapsed time forward from
    /// the sender's timestamp; without it, elapsed times are taken as of their arrival.
    public mutating func receive(_ request: AirPlayRequest, on connection: ConnectionID, now: Double, wallClock: Date? = nil) -> [Action] {
        if current?.connection == connection { current?.lastActivity = now }
        switch request.method {
        case "OPTIONS":
            return [.reply(AirPlayResponse(status: 200, headers: ["Public": (Self.methods.sorted() + ["POST", "GET"]).joined(separator: ", ")]))]
        case "POST" where request.path == "/feedback":
            return [.reply(feedback(on: connection))]
        case "POST" where request.path == "/command" || request.path == "/audioMode":
            return airPlay2Notice(request, on: connection, wallClock: wallClock)
        case "SETPEERS", "SETPEERSX":
            return timingPeers(request)
        case "SETRATEANCHORTIME":
            return rateAnchor(request, on: connection)
        case "FLUSHBUFFERED":
            return flushBuffered(request, on: connection)
        case "SETUP":
            return setup(request, on: connection)
        case "RECORD":
            guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
            if session.phase == .ready { session.phase = .recording }
            session.recorded = true
            current = session
            return [.nowPlaying(.streamStarted),
                    .reply(AirPlayResponse(status: 200, headers: ["Audio-Latency": "\(configuration.latencyFrames)"]))]
        case "PAUSE":
            guard owned(by: connection) != nil else { return [.reply(Self.noSession)] }
            return [.nowPlaying(.rate(0)), .reply(AirPlayResponse(status: 200))]
        case "FLUSH":
            guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
            // RTP-Info names the first frame after the flush; anything older is stale.
            let rtpTime = Self.rtpTime(request)
            let resumeSequence = request.headers[RTPInfo.headerName].flatMap { RTPInfo(parsing: $0).sequence }
            session.paused = true
            session.flushes += 1
            current = session
            return [.flush(session: session.number, before: rtpTime, resumeSequence: resumeSequence), .nowPlaying(.flushed),
                    .reply(AirPlayResponse(status: 200))]
        case "TEARDOWN":
            guard let session = owned(by: connection) else { return [.reply(AirPlayResponse(status: 200))] }
            if session.kind == .airPlay2, Self.namesStreams(request) { return teardownStreams(session) }
            current = nil
            return [.endSession(session, reason: "TEARDOWN"), .reply(AirPlayResponse(status: 200))]
        case "SET_PARAMETER":
            return setParameter(request, on: connection)
        case "GET_PARAMETER":
            return getParameter(request, on: connection)
        case "ANNOUNCE":
            return [.reply(.text(status: 500, "ANNOUNCE goes through announce(_:on:now:)"))]
        case "SETMAGICCOOKIE":
            // iOS 17 on: a plist about the sender's audio, sent whether or not a stream runs;
            // nothing in it is needed here (shairport-sync 5 and airplay2-receiver answer 200 too).
            return [.reply(AirPlayResponse(status: 200))]
        default:
            return [.reply(.text(status: 405, "\(request.method.prefix(40)) is not an RTSP method of RAOP"))]
        }
    }

    /// An ANNOUNCE whose stream was parsed and found playable: a new session, taking over (or
    /// refused) when another connection plays.
    public mutating func announce(_ stream: RAOPStreamDescription, on connection: ConnectionID, senderHost: [UInt8]? = nil,
                                  now: Double) -> [Action] {
        var actions: [Action] = []
        if let refusal = takeOver(for: connection, by: "ANNOUNCE", into: &actions) { return [refusal] }
        nextNumber += 1
        current = Session(number: nextNumber, connection: connection, stream: stream, phase: .announced, lastActivity: now)
        current?.senderHost = senderHost
        actions += [.beginSession(number: nextNumber, connection: connection), .reply(AirPlayResponse(status: 200))]
        return actions
    }

    /// Ends the session playing before a new one starts on `connection` (and closes the other
    /// sender's connection), or the 453 that refuses the newcomer under `takeover = refuse`.
    mutating func takeOver(for connection: ConnectionID, by request: String, into actions: inout [Action]) -> Action? {
        guard let active = current else { return nil }
        if active.connection != connection, configuration.takeover == .refuse {
            return .reply(.text(status: 453, "another sender is streaming to this receiver"))
        }
        current = nil
        actions.append(.endSession(active, reason: "taken over by a new \(request)"))
        if active.connection != connection { actions.append(.closeConnection(active.connection)) }
        return nil
    }

    private mutating func setup(_ request: AirPlayRequest, on connection: ConnectionID) -> [Action] {
        guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
        guard session.phase == .announced else { return [.reply(.text(status: 455, "SETUP was already done"))] }
        let transport = RTSPTransport(parsing: request.headers["Transport"] ?? "")
        // PulseAudio's protocol=TCP asks for RTP interleaved in the RTSP connection; we play RTP
        // over UDP only, and say so rather than answer with ports it would not use. (Its UDP
        // SETUP carries `interleaved=0-1` too: only the spec tells them apart.)
        if transport.spec.uppercased().hasSuffix("/TCP") {
            return [.reply(.text(status: 461, "only RTP over UDP is played here (RTP/AVP/UDP), not \(transport.spec.prefix(40))"))]
        }
        session.phase = .openingPorts
        current = session
        return [.openPorts(session: session.number, senderControlPort: transport.port("control_port"),
                           senderTimingPort: transport.port("timing_port"))]
    }

    /// The session's UDP ports are bound: SETUP's reply.
    public mutating func portsOpened(session number: Int, audio: Int, control: Int, timing: Int) -> [Action] {
        guard var session = current, session.number == number, session.phase == .openingPorts else {
            return [.reply(.text(status: 454, "the session ended during SETUP"))]
        }
        session.phase = session.recorded ? .recording : .ready
        current = session
        if session.kind == .airPlay2 {
            let stream = session.buffered
                ? AirPlay2SetupReply.Stream(type: AirPlay2Setup.buffered, dataPort: audio, controlPort: control,
                                            audioBufferSize: AirPlay2Setup.audioBufferSize)
                : AirPlay2SetupReply.Stream(type: AirPlay2Setup.realtime, dataPort: audio, controlPort: control)
            return [.reply(Self.plistReply(AirPlay2SetupReply.streams([stream]).plist))]
        }
        let reply = RTSPTransport(spec: "RTP/AVP/UDP", parameters: [
            ("unicast", ""), ("mode", "record"), ("server_port", "\(audio)"), ("control_port", "\(control)"),
            ("timing_port", "\(timing)"),
        ])
        return [.reply(AirPlayResponse(status: 200, headers: [
            "Transport": reply.headerValue, "Session": "\(number)", "Audio-Jack-Status": "connected; type=analog",
        ]))]
    }

    /// The ports (or the output) could not be opened: the session ends, so neither a retry nor
    /// another sender is blocked; `reason` is the 500's text.
    public mutating func portsFailed(session number: Int, reason: String) -> [Action] {
        var actions: [Action] = []
        if let session = current, session.number == number {
            current = nil
            actions.append(.endSession(session, reason: reason))
        }
        return actions + [.reply(.text(status: 500, reason))]
    }

    /// The session's audio output could not be built (a sound card gone or busy): the session
    /// ends and its connection closes, so the sender knows.
    public mutating func outputFailed(session number: Int, reason: String) -> [Action] {
        guard let session = current, session.number == number else { return [] }
        current = nil
        return [.endSession(session, reason: "audio output failed: \(reason)"), .closeConnection(session.connection)]
    }

    /// The `rtptime` of a request's `RTP-Info` header.
    static func rtpTime(_ request: AirPlayRequest) -> UInt32? {
        request.headers[RTPInfo.headerName].flatMap { RTPInfo(parsing: $0).rtpTime }
    }

    private mutating func setParameter(_ request: AirPlayRequest, on connection: ConnectionID) -> [Action] {
        guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
        let type = request.headers["Content-Type"]?.lowercased() ?? TextParameters.contentType
        let body = Array(request.body.readableBytesView)
        var actions: [Action] = []
        if type.hasPrefix(TextParameters.contentType) {
            for line in TextParameters(parsing: body).lines {
                guard let value = line.value else { continue }
                switch line.name.lowercased() {
                case "volume":
                    guard let decibels = Double(value), decibels.isFinite, decibels <= 0, decibels >= -30 || decibels == -144 else {
                        return [.reply(.text(status: 400, "volume must be -30...0 dB or -144 (mute)"))]
                    }
                    session.volume = decibels
                    actions += [.setVolume(session: session.number, decibels: decibels), .nowPlaying(.volume(decibels: decibels))]
                case "progress":
                    let times = value.split(separator: "/").compactMap { UInt32($0) }
                    guard times.count == 3 else { return [.reply(.text(status: 400, "progress must be start/current/end"))] }
                    actions.append(.nowPlaying(.progress(start: times[0], current: times[1], end: times[2],
                                                         sampleRate: Double(session.stream?.sampleRate ?? 44100))))
                default:
                    return [.reply(.text(status: 451, "unknown parameter \(line.name.prefix(40))"))]
                }
            }
            current = session
        } else if type.hasPrefix("application/x-dmap-tagged") {
            do {
                actions.append(.nowPlaying(.metadata(try DMAPField.fields(of: body), rtpTime: Self.rtpTime(request))))
            } catch {
                // Senders treat any error here as fatal to the stream (pyatv 0.18 even miscounts
                // non-ASCII lengths): keep the audio going, keep the bad metadata out.
                actions.append(.notice("audio metadata ignored: \(error.description)"))
            }
        } else if type.hasPrefix("image/jpeg") || type.hasPrefix("image/png") {
            actions.append(.nowPlaying(.artwork(type: type.hasPrefix("image/png") ? "image/png" : "image/jpeg", bytes: body,
                                                rtpTime: Self.rtpTime(request))))
        } else if type.hasPrefix("image/none") {
            actions.append(.nowPlaying(.artwork(type: nil, bytes: [], rtpTime: Self.rtpTime(request))))
        } else {
            return [.reply(.text(status: 415, "SET_PARAMETER does not take \(type.prefix(60))"))]
        }
        return actions + [.reply(AirPlayResponse(status: 200))]
    }

    private func getParameter(_ request: AirPlayRequest, on connection: ConnectionID) -> [Action] {
        guard let volume = owned(by: connection)?.volume else { return [.reply(Self.noSession)] }
        var answer = TextParameters([])
        for asked in TextParameters(parsing: Array(request.body.readableBytesView)).lines {
            guard asked.name == "volume" else { return [.reply(.text(status: 451, "unknown parameter \(asked.name.prefix(40))"))] }
            answer.lines += TextParameters.volume(decibels: volume).lines
        }
        return [.reply(AirPlayResponse(status: 200, headers: ["Content-Type": TextParameters.contentType], body: ByteBuffer(bytes: answer.encoded)))]
    }

    // MARK: Connections, packets, time

    /// A control connection closed: its session, if any, ends.
    public mutating func connectionClosed(_ connection: ConnectionID) -> [Action] {
        guard let session = owned(by: connection) else { return [] }
        current = nil
        return [.endSession(session, reason: "the sender closed its connection")]
    }

    /// The stream's first packet after its `flushes`th FLUSH came (`AudioPacketPipeline`):
    /// playing again, unless another FLUSH came meanwhile.
    public mutating func streamResumed(session number: Int, flushes: Int) -> [Action] {
        guard current?.number == number, current?.paused == true, current?.flushes == flushes else { return [] }
        current?.paused = false
        return [.nowPlaying(.resumed)]
    }

    /// The sender asked something on another connection (its video's `/playback-info` once a
    /// second, an FCUP answer): it is alive, whatever its RTSP connection says. iOS 27 sends no
    /// RTSP `/feedback` while a video plays; a session ended for that silence would close the
    /// phone's RTSP connection under its video (UxPlay #542).
    public mutating func senderActive(host: [UInt8], now: Double) {
        if let sender = current?.senderHost, sender == host { current?.lastActivity = now }
    }

    /// Time passed: a session without RTSP or RTP for `sessionTimeout` ends and its connection
    /// closes. `streamHeard`: when its stream's ports last heard the sender.
    public mutating func tick(now: Double, streamHeard: Double? = nil) -> [Action] {
        guard let session = current, now - max(session.lastActivity, streamHeard ?? -.infinity) > configuration.sessionTimeout else {
            return []
        }
        current = nil
        return [.endSession(session, reason: "no RTSP or RTP for \(Int(configuration.sessionTimeout)) s"),
                .closeConnection(session.connection)]
    }

    /// The daemon stops.
    public mutating func shutdown() -> [Action] {
        guard let session = current else { return [] }
        current = nil
        return [.endSession(session, reason: "shutdown")]
    }
}
