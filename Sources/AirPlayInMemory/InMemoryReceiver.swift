import AirPlayPlist
import AirPlayReceiver
import AirPlayWire
import NIOCore

/// A control connection in memory: only its identity matters (the machine keys sessions by it).
public final class InMemoryConnection: Sendable {
    /// A new connection.
    public init() {}

    /// The id the receiver's machine knows it by.
    public var id: ObjectIdentifier { ObjectIdentifier(self) }
}

/// A receiver in memory: the box's real `AudioSessionStateMachine`, behind the same reading of
/// requests the daemon does (`AudioRequest`), with ports that "open"
/// at fixed numbers, and quirk switches that make it answer as a receiver we know does.
///
/// What it leaves out: encryption (pairing, RSA, ChaCha20: their codecs have tests of their own)
/// and audio. What the machine asked for besides replies is kept in `actions`, in order.
public struct InMemoryReceiver: Sendable {
    /// Ways known receivers answer differently from airplayd.
    public struct Quirks: OptionSet, Hashable, Sendable {
        public let rawValue: Int
        /// Builds a set from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Takes no ALAC: ANNOUNCE or SETUP for an ALAC stream gets 415 (a PCM-only speaker).
        public static let refusesALAC = Quirks(rawValue: 1 << 0)
        /// shairport-sync 5.x: answers 200 with no body to an AirPlay 2 SETUP it did not act on
        /// (here: phase 1 of an NTP session, which it does not serve).
        public static let emptyAnswerToNTPSessions = Quirks(rawValue: 1 << 1)
        /// Sonos: refuses the native `streams` SETUP with 400.
        public static let refusesNativeStreams = Quirks(rawValue: 1 << 2)
        /// Samsung's Music Frame: a stream SETUP before RECORD gets 455 (it needs Apple's order).
        public static let needsRecordBeforeStreams = Quirks(rawValue: 1 << 3)
        /// HomePod OS 27: `GET /info` is answered 403 unless the User-Agent is Apple's form
        /// (`AirPlay/VERSION`).
        public static let infoOnlyToAppleUserAgents = Quirks(rawValue: 1 << 4)
        /// A receiver that knows no `POST /feedback` and answers it with an error (here 501):
        /// the sender keeps the session alive with the volume instead.
        public static let refusesFeedback = Quirks(rawValue: 1 << 5)
    }

    /// The ports the receiver "opens": audio, control, timing, events.
    public static let audioPort = 6000, controlPort = 6001, timingPort = 6002, eventPort = 7000

    /// The receiver's machine, as the daemon runs it.
    public var machine: AudioSessionStateMachine
    /// How it differs from airplayd.
    public var quirks: Quirks
    /// Every action of the machine other than replies and port openings, in order.
    public private(set) var actions: [AudioSessionStateMachine.Action] = []
    private var recordedBefore: Set<ObjectIdentifier> = []

    /// A receiver with airplayd's defaults (replacing senders, a 60 s session timeout) unless told.
    public init(takeover: AudioTakeover = .replace, sessionTimeout: Double = 60, quirks: Quirks = []) {
        machine = AudioSessionStateMachine(configuration: .init(takeover: takeover, sessionTimeout: sessionTimeout), firstNumber: 0)
        self.quirks = quirks
    }

    /// Answers one request from `connection` at `now` (seconds on the test's clock).
    public mutating func handle(_ request: AirPlayRequest, from connection: InMemoryConnection, now: Double) -> AirPlayResponse {
        let id = connection.id
        if request.method == "RECORD" { recordedBefore.insert(id) }
        if request.method == "GET", request.target == "/info" { return info(request) }
        if quirks.contains(.refusesFeedback), request.method == "POST", request.target == "/feedback" {
            return .text(status: 501, "not implemented")
        }
        let decoded: AudioRequest
        do {
            decoded = try AudioRequest(decoding: request, ptp: true)
        } catch {
            return error.response
        }
        switch decoded {
        case .setupSession(let session):
            if quirks.contains(.emptyAnswerToNTPSessions), session.timingProtocol == "NTP" { return AirPlayResponse(status: 200) }
        case .setupRemoteControl, .setupDataStream:
            return .text(status: 501, "remote-control sessions and data streams are not played in memory")
        case .setupStream(_, let description):
            if quirks.contains(.refusesNativeStreams) { return .text(status: 400, "streams are not taken") }
            if quirks.contains(.needsRecordBeforeStreams), !recordedBefore.contains(id) { return .text(status: 455, "RECORD first") }
            if quirks.contains(.refusesALAC), case .alac = description.codec { return .text(status: 415, "ALAC is not taken") }
        case .announce(let description):
            if quirks.contains(.refusesALAC), case .alac = description.codec { return .text(status: 415, "ALAC is not taken") }
        case .other:
            break
        }
        return carryOut(machine.receive(decoded, on: id, now: now))
    }

    /// `GET /info`: what an AirPlay 2 room on PTP says of itself (airplayd's own `ServerInfo`).
    private func info(_ request: AirPlayRequest) -> AirPlayResponse {
        if quirks.contains(.infoOnlyToAppleUserAgents), request.headers["User-Agent"]?.hasPrefix("AirPlay/") != true {
            return AirPlayResponse(status: 403)
        }
        var capabilities = ReceiverCapabilities(video: false, hls: false, audio: true, alac: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = true
        capabilities.ptpTiming = true
        capabilities.bufferedAudio = true
        let answer = ServerInfo(deviceID: DeviceID("02:FC:00:00:00:02")!, name: "In memory", capabilities: capabilities).propertyList
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/x-apple-binary-plist"],
                               body: ByteBuffer(bytes: answer.encoded(as: .binary)))
    }

    /// The sender's connection closed.
    public mutating func connectionClosed(_ connection: InMemoryConnection) {
        _ = carryOut(machine.connectionClosed(connection.id))
    }

    /// Time passes: the machine's timeouts.
    public mutating func tick(now: Double) {
        _ = carryOut(machine.tick(now: now))
    }

    /// Opens what the machine asks for (at the fixed ports) and keeps the rest; the reply, if any.
    private mutating func carryOut(_ actions: [AudioSessionStateMachine.Action]) -> AirPlayResponse {
        var pending = actions[...]
        var reply: AirPlayResponse?
        while let action = pending.popFirst() {
            switch action {
            case .reply(let response):
                reply = response
            case .openPorts(let session, _, _):
                pending.append(contentsOf: machine.portsOpened(session: session, audio: Self.audioPort, control: Self.controlPort,
                                                               timing: Self.timingPort))
            case .openEventPort(let session):
                let ptp = machine.current?.usesPTP == true
                pending.append(contentsOf: machine.eventPortOpened(session: session, port: Self.eventPort,
                                                                   timingPeerAddresses: ptp ? ["127.0.0.1"] : nil))
            default:
                self.actions.append(action)
            }
        }
        return reply ?? .text(status: 500, "no reply")
    }
}
