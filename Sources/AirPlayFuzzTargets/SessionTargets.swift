import AirPlayDaemon
import AirPlayPlist
import AirPlayReceiver
import AirPlaySender
import AirPlayWire
import NIOCore

/// The receiver's readers of what senders send inside requests (plists, AirPlay 2 SETUP and
/// its companions, `/play`), the RTSP session machine driven by whole requests, and the
/// configuration file a user hands the daemon.
enum SessionTargets {
    static let all: [FuzzTarget] = [plist, airPlay2Setup, rtspSession, playRequest, videoAction, configuration]

    /// XML and binary property lists. What our encoding writes reads back as the same list
    /// (compared in a canonical form: keys sorted, reals by their bits, so that dictionary
    /// order and NaN do not count). Dates are compared by kind only: libplist 2.2 keeps them as
    /// 32-bit seconds and a double, and moves them by a microsecond on some round trips (no
    /// AirPlay exchange carries a date).
    static let plist = FuzzTarget("plist", "property lists, XML and binary") { bytes in
        guard let list = try? PropertyList(decoding: bytes) else { return }
        for format in [PropertyListFormat.binary, .xml] {
            guard let once = try? PropertyList(decoding: list.encoded(as: format)),
                  let twice = try? PropertyList(decoding: once.encoded(as: format)) else {
                preconditionFailure("our own \(format) encoding does not read back")
            }
            precondition(canonical(twice) == canonical(once), "a \(format) round trip changed the list")
        }
    }

    static func canonical(_ list: PropertyList) -> String {
        switch list {
        case .dictionary(let entries): "{" + entries.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription):\(canonical($0.value))" }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(canonical).joined(separator: ",") + "]"
        case .string(let text): text.debugDescription
        case .integer(let value): "i\(value)"
        case .real(let value): "r\(value.bitPattern)"
        case .bool(let value): "b\(value)"
        case .data(let bytes): "d\(bytes)"
        case .date: "t"
        }
    }

    /// The plists of AirPlay 2 control requests: SETUP (session and streams), SETRATEANCHORTIME,
    /// FLUSHBUFFERED, SETPEERS, `POST /command` (the sender's supported commands, the
    /// receiver's remote commands, which read back as themselves), and the sender's
    /// `/playback-info` reading.
    static let airPlay2Setup = FuzzTarget("airplay2-setup", "AirPlay 2 SETUP, SETRATEANCHORTIME, FLUSHBUFFERED, SETPEERS and /command plists") { bytes in
        guard let list = try? PropertyList(decoding: bytes) else { return }
        for ptp in [false, true] {
            if case .streams(let streams)? = try? AirPlay2Setup(plist: list, ptp: ptp) {
                for stream in streams { _ = try? stream.description() }
            }
        }
        _ = try? RateAnchor(plist: list)
        _ = try? BufferedFlush(plist: list)
        _ = TimingPeers.addresses(in: list)
        _ = PlaybackInfo(list).state
        if let supported = MediaRemoteSupportedCommands(plist: list) {
            precondition(supported.enabled.count <= MediaRemoteSupportedCommands.maximumEntries)
        }
        if let update = MediaRemoteNowPlayingUpdate(plist: list) {
            precondition(MediaRemoteNowPlayingUpdate(plist: update.plist) == update, "now-playing info must read back as itself")
            _ = update.info.elapsed(at: nil)
        }
        if let state = MediaRemotePlaybackState(plist: list) { precondition(MediaRemotePlaybackState(plist: state.plist) == state) }
        if case .dataStream(let setup)? = try? AirPlay2Setup(plist: list) {
            precondition(DataStreamSetup(plist: setup.plist) == setup, "a data stream's setup must read back as itself")
        }
        if let command = MediaRemoteCommand(plist: list) {
            precondition(MediaRemoteCommand(plist: command.plist(commandID: "id")) == command, "a remote command must read back as itself")
        }
    }

    /// Whole RTSP sessions as a sender drives them: requests decoded from the input go to the
    /// session machine on one of two connections, ANNOUNCE and AirPlay 2 SETUP through the
    /// parsers the daemon uses, with the ports opened when asked and the clock advancing. A
    /// request with the method `X-PACKETS` (not RTSP) instead delivers its body as audio
    /// packets (sequence number, flags), so loss and resend requests are reached too. Every
    /// reply has a status a client can read.
    static let rtspSession = FuzzTarget("rtsp-session", "RAOP and AirPlay 2 RTSP sessions, request after request") { bytes in
        final class Connection {}
        let connections = [Connection(), Connection()].map(ObjectIdentifier.init)
        var machine = AudioSessionStateMachine(configuration: .init(takeover: .replace, sessionTimeout: 30), firstNumber: 0)
        var decoder = AirPlayRequestDecoder()
        var buffer = ByteBuffer(bytes: bytes)
        var now = 0.0
        var requests = 0
        // Each stream's packets, kept beside the machine as the daemon keeps them.
        var pipelines: [Int: AudioPacketPipeline] = [:]
        func check(_ resends: [RAOPResendRequest]) {
            for request in resends {
                // A first request is under `largestGap`; one asked again may join runs, up to the awaited packets.
                precondition(request.count > 0 && request.count <= ResendTracker.largestGap, "asked for \(request.count) packets")
                precondition(request.first == 0 || Int(request.first) + Int(request.count) <= 65536, "a request across the wrap")
            }
        }
        func carryOut(_ actions: [AudioSessionStateMachine.Action]) {
            var pending = actions[...]
            var steps = 0
            while let action = pending.popFirst(), steps < 64 {
                steps += 1
                switch action {
                case .reply(let response):
                    precondition((100..<600).contains(response.status), "reply status \(response.status)")
                case .openPorts(let session, _, _):
                    pending.append(contentsOf: machine.portsOpened(session: session, audio: 6000, control: 6001, timing: 6002))
                case .openEventPort(let session):
                    pending.append(contentsOf: machine.eventPortOpened(session: session, port: 7001))
                case .beginSession(let session, _):
                    pipelines[session] = AudioPacketPipeline(now: now)
                case .flush(let session, _, let resumeSequence):
                    pipelines[session]?.flush(resumingAt: resumeSequence)
                case .endSession(let session, _), .endStreams(let session, _):
                    pipelines[session.number] = nil
                default:
                    continue
                }
            }
        }
        while requests < 64, let message = decoder.next(from: &buffer) {
            requests += 1
            now += 0.25
            guard case .request(let request) = message else { continue }
            let connection = connections[Int(request.cseq.flatMap { Int($0) }.map { $0 & 1 } ?? 0)]
            let body = Array(request.body.readableBytesView)
            switch request.method {
            case "X-PACKETS":
                guard let session = machine.current?.number, var pipeline = pipelines[session] else { continue }
                for index in stride(from: 0, to: body.count - 2, by: 3) {
                    now += 0.008
                    let sequence = UInt16(body[index]) << 8 | UInt16(body[index + 1])
                    let arrival = pipeline.arrived(sequence: sequence, marker: body[index + 2] & 1 != 0,
                                                   retransmitted: body[index + 2] & 2 != 0, now: now)
                    check(arrival.resends)
                    if arrival.resumed { carryOut(machine.streamResumed(session: session, flushes: pipeline.flushes)) }
                    if body[index + 2] & 4 != 0 { check(pipeline.tick(now: now)) }
                }
                pipelines[session] = pipeline
            case "X-CLOSE":
                carryOut(machine.connectionClosed(connection))
            default:
                // Decoded as the daemon decodes it; a refusal changes nothing.
                guard let decoded = try? AudioRequest(decoding: request, ptp: true) else { continue }
                carryOut(machine.receive(decoded, on: connection, now: now))
            }
            let heard = machine.current.flatMap { pipelines[$0.number]?.lastHeard }
            carryOut(machine.tick(now: now, streamHeard: heard))
        }
        carryOut(machine.tick(now: now + 60))
        precondition(machine.current == nil, "a session outlived its timeout")
        carryOut(machine.shutdown())
    }

    /// `/play` bodies (binary plist or `text/parameters`) and the URL policy every media URL
    /// passes (here without name resolution: the fuzzer must not reach the network).
    /// A phone's `/action` bodies (FCUP answers, the queue's inserts and removals) and the FCUP
    /// requests a sender reads on its event channel: what we write reads back as written, from
    /// our first writing on (a string of bytes that are not text, such as a binary plist's
    /// "ASCII" string with a high byte, reads back as text only after it was written once), in
    /// the canonical form `plist` compares in.
    static let videoAction = FuzzTarget("video-action", "video /action bodies and FCUP playlist requests") { bytes in
        guard let list = try? PropertyList(decoding: bytes) else { return }
        if let action = try? VideoAction(plist: list),
           let once = try? VideoAction(plist: PropertyList(decoding: action.plist.encoded(as: .binary))) {
            let twice = try? VideoAction(plist: PropertyList(decoding: once.plist.encoded(as: .binary)))
            // Compared in `plist`'s canonical form: an item may carry a NaN, which equals nothing.
            precondition(twice.map { canonical($0.plist) } == canonical(once.plist), "a /action does not read back as written")
        }
        if let request = try? FCUPRequest(event: list) {
            precondition((try? FCUPRequest(event: request.event)) == request, "an FCUP request does not read back as written")
        }
    }

    static let playRequest = FuzzTarget("play-request", "video /play bodies and media URLs") { bytes in
        var input = FuzzInput(bytes)
        let types = ["application/x-apple-binary-plist", "text/parameters", "", "application/x-apple-plist+xml"]
        var request = AirPlayRequest(method: "POST", target: "/play", version: .http11)
        request.headers.add(name: "Content-Type", value: types[Int(input.byte()) % types.count])
        let body = input.rest()
        request.body = ByteBuffer(bytes: body)
        let parameters = TextParameters(parsing: body)
        precondition(TextParameters(parsing: parameters.encoded) == parameters, "text/parameters do not read back as written")
        guard let play = try? PlayRequest(request: request) else { return }
        try? MediaURLPolicy(refusingLocalTargetsWith: nil).check(play.url)
    }

    /// `airplayd.toml`: the file a user edits (the daemon reloads it on SIGHUP).
    static let configuration = FuzzTarget("config", "the daemon's TOML configuration") { bytes in
        var input = FuzzInput(bytes)
        _ = try? ReceiverConfiguration.parse(toml: input.text())
    }
}
