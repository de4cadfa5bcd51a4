import AirPlayNowPlaying
import AirPlayPlist
import AirPlayWire
import FoundationEssentials
import NIOCore

/// AirPlay 2 realtime sessions in the same machine as RAOP: they differ only in how they are set
/// up. Phase 1 (a plist with `timingProtocol`) starts the session and opens its event channel;
/// phase 2 (a plist with `streams`) describes the audio and opens the UDP ports, where RAOP has
/// ANNOUNCE and a Transport header. From RECORD on, both kinds take the same requests, packets
/// and time, and obey the same takeover and timeout rules (Protocol/airplay2.md).
extension AudioSessionStateMachine {
    /// SETUP phase 1 on an encrypted connection: a new AirPlay 2 session (taking over, or
    /// refused, like ANNOUNCE), whose reply waits for the event port.
    public mutating func setupSession(_ setup: AirPlay2Setup.Session, ptp: Bool = false, on connection: ConnectionID,
                                      senderHost: [UInt8]? = nil, now: Double) -> [Action] {
        var actions: [Action] = []
        if let refusal = takeOver(for: connection, by: "AirPlay 2 SETUP", into: &actions) { return [refusal] }
        nextNumber += 1
        var session = Session(number: nextNumber, connection: connection, stream: nil, phase: .openingEventPort, lastActivity: now)
        session.kind = .airPlay2
        session.usesPTP = ptp
        session.senderTimingPort = setup.timingPort.map { UInt16($0) }
        session.senderName = setup.name.map { String($0.prefix(100)) }
        session.senderHost = senderHost
        current = session
        return actions + [.openEventPort(session: nextNumber)]
    }

    /// The event channel listens on `port`: phase 1's reply. Our timing port is not named:
    /// with NTP the receiver asks the sender for its time, never the other way round. A PTP
    /// session's reply names the addresses our PTP follower is reached at (`timingPeerInfo`).
    public mutating func eventPortOpened(session number: Int, port: Int, timingPeerAddresses: [String]? = nil) -> [Action] {
        guard var session = current, session.number == number, session.phase == .openingEventPort else {
            return [.reply(.text(status: 454, "the session ended during SETUP"))]
        }
        session.phase = .sessionSetUp
        current = session
        return [.reply(Self.plistReply(AirPlay2SetupReply.session(.init(eventPort: port, timingPort: 0, timingPeers: timingPeerAddresses ?? [])).plist))]
    }

    /// The event port could not be opened: the session ends; `reason` is the 500's text.
    public mutating func eventPortFailed(session number: Int, reason: String) -> [Action] {
        portsFailed(session: number, reason: reason)
    }

    /// SETUP phase 2: the audio stream (already found playable, its key ready) of the
    /// connection's AirPlay 2 session. Its resources are made and its UDP ports opened; the
    /// reply (`streams` with `dataPort` and `controlPort`) comes from `portsOpened`.
    public mutating func setupStreams(_ stream: RAOPStreamDescription, buffered: Bool = false, senderControlPort: UInt16?,
                                      on connection: ConnectionID, now: Double) -> [Action] {
        guard var session = owned(by: connection), session.kind == .airPlay2 else {
            return [.reply(.text(status: 455, "SETUP with streams needs an AirPlay 2 session: SETUP with timingProtocol first"))]
        }
        session.lastActivity = now
        guard session.phase == .sessionSetUp else {
            current = session
            return [.reply(.text(status: 455, "this session's stream is already set up; TEARDOWN it first"))]
        }
        session.stream = stream
        session.buffered = buffered
        session.phase = .openingPorts
        // A new stream counts its own FLUSHes, and plays when its packets come.
        (session.paused, session.flushes) = (false, 0)
        current = session
        // After RECORD (Apple's order) the stream the session begins is already playing.
        return [.beginSession(number: session.number, connection: connection)]
            + (session.senderCommands.map { [.nowPlaying(.senderCommands($0))] } ?? [])
            + (session.recorded ? [.nowPlaying(.streamStarted)] : [])
            + [.openPorts(session: session.number, senderControlPort: senderControlPort, senderTimingPort: session.senderTimingPort)]
    }

    /// TEARDOWN naming `streams`: the audio stops, the session stays set up for new streams.
    mutating func teardownStreams(_ session: Session) -> [Action] {
        var session = session
        let ended = session
        guard session.stream != nil else { return [.reply(AirPlayResponse(status: 200))] }
        session.stream = nil
        session.phase = .sessionSetUp
        session.paused = false
        current = session
        return [.endStreams(ended, reason: "TEARDOWN of the stream"), .nowPlaying(.rate(0)),
                .reply(AirPlayResponse(status: 200))]
    }

    /// Whether a TEARDOWN's body is a plist naming `streams` (only those end), rather than
    /// none or another plist (the whole session ends).
    static func namesStreams(_ request: AirPlayRequest) -> Bool {
        let body = Array(request.body.readableBytesView)
        guard !body.isEmpty, let plist = try? PropertyList(decoding: body) else { return false }
        return plist["streams"] != nil
    }

    /// Requests AirPlay 2 senders make that change nothing here, answered so they go on:
    /// `/audioMode` picks a playback mode, `/command` carries remote-control state. Each must
    /// carry a plist, or nothing; anything else is a 400 naming what was expected.
    mutating func airPlay2Notice(_ request: AirPlayRequest, on connection: ConnectionID, wallClock: Date?) -> [Action] {
        let what = request.method == "POST" ? "POST \(request.path)" : request.method
        let body = Array(request.body.readableBytesView)
        var plist: PropertyList?
        if !body.isEmpty {
            guard let decoded = try? PropertyList(decoding: body) else { return [.reply(.text(status: 400, "\(what) takes a property list body"))] }
            plist = decoded
        }
        if request.path == "/command", let plist, var session = owned(by: connection) {
            // Every body goes to the metadata pipe as sent, beside what is made of it.
            let actions = Self.senderCommand(plist, in: &session, wallClock: wallClock)
            current = session
            return [.nowPlaying(.commandPlist(body))] + actions + [.reply(AirPlayResponse(status: 200))]
        }
        return [.notice("\(what) noted; it changes nothing on an NTP realtime session"), .reply(AirPlayResponse(status: 200))]
    }

    /// A `POST /command` the session's sender posted: the remote commands it takes (what the
    /// box's buttons offer while it plays) or, with feature bit 50, what plays and whether it
    /// plays (`Protocol/now-playing.md` §7). Anything else (iOS's DEVICE_INFO, its
    /// `updateMRNowPlayingClient`) is noted at debug level for later captures.
    private static func senderCommand(_ plist: PropertyList, in session: inout Session, wallClock: Date?) -> [Action] {
        if let supported = MediaRemoteSupportedCommands(plist: plist) {
            session.senderCommands = supported.enabled
            return [.nowPlaying(.senderCommands(supported.enabled)), .notice("the sender takes remote commands \(supported.enabled.sorted())")]
        }
        if let update = MediaRemoteNowPlayingUpdate(plist: plist) {
            // An iPhone's first message is an empty `replace`: it has not said what plays yet.
            if update.mergePolicy == .replace, update.info.isEmpty { return [] }
            let next = update.applied(to: session.mediaRemote)
            let events = MediaRemoteEvents.events(from: session.mediaRemote, to: next, now: wallClock)
            session.mediaRemote = next
            return events.map { .nowPlaying($0) }
        }
        if let state = MediaRemotePlaybackState(plist: plist) {
            defer { session.mediaRemoteState = state }
            return state == session.mediaRemoteState ? [] : [.nowPlaying(.rate(state.rate))]
        }
        let type = plist["type"]?.stringValue ?? "(no type: DEVICE_INFO)"
        return [.notice("POST /command \(type) noted")]
    }

    /// `POST /feedback`, the keep-alive: 200, and on an AirPlay 2 session with a stream set up,
    /// that stream's type and rate (as shairport-sync 5 answers it).
    func feedback(on connection: ConnectionID) -> AirPlayResponse {
        guard let session = owned(by: connection), session.kind == .airPlay2, let stream = session.stream,
              [.ready, .recording].contains(session.phase) else { return AirPlayResponse(status: 200) }
        let type = session.buffered ? AirPlay2Setup.buffered : AirPlay2Setup.realtime
        return Self.plistReply(.dictionary(["streams": .array([.dictionary([
            "type": .integer(Int64(type)), "sr": .real(Double(stream.sampleRate)),
        ])])]))
    }

    /// A 200 with a binary plist: what AirPlay 2 senders send and expect.
    static func plistReply(_ plist: PropertyList) -> AirPlayResponse {
        ControlRouter.plistResponse(plist, format: .binary)
    }
}
