import AirPlayPlist
import AirPlayWire
import FoundationEssentials
import NIOCore

/// One request to the audio session, read once: what the daemon's handler, the in-memory
/// receiver and the fuzz target hand `AudioSessionStateMachine`. ANNOUNCE's SDP and AirPlay 2's
/// SETUP plists are decoded here, and what no box plays is refused here with the 4xx to send;
/// what depends on the box (its decoders, its RSA key, its pairing) is checked by the handler
/// between decoding and the machine.
public enum AudioRequest: Equatable, Sendable {
    /// ANNOUNCE (RAOP): the stream its SDP describes.
    case announce(RAOPStreamDescription)
    /// AirPlay 2 SETUP phase 1: a session and its timing.
    case setupSession(AirPlay2Setup.Session)
    /// AirPlay 2 SETUP phase 2: the one audio stream of the session, as it will be played.
    case setupStream(AirPlay2Setup.Stream, RAOPStreamDescription)
    /// AirPlay 2 SETUP of a remote-control-only session (no audio; an event channel).
    case setupRemoteControl(AirPlay2Setup.Session)
    /// AirPlay 2 SETUP of a data stream (type 130) on the connection.
    case setupDataStream(DataStreamSetup)
    /// Any other request (OPTIONS, RAOP's SETUP, RECORD, FLUSH, SET_PARAMETER, `/command`, …):
    /// the machine reads it as sent.
    case other(AirPlayRequest)

    /// Why a request is refused before it reaches the machine: the status and the reason.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// 400 for what cannot be read, 415 for what cannot be played, 461 for more than one stream.
        public let status: Int
        /// What the sender is told.
        public let reason: String
        /// The refusal's answer.
        public var response: AirPlayResponse { .text(status: status, reason) }
        /// `status reason`.
        public var description: String { "\(status) \(reason)" }
    }

    /// The sample rates played (stereo only): what senders send, CD's and AirPlay 2's.
    public static let playedSampleRates: Set<Int> = [44100, 48000]

    /// Reads `request`; `ptp` says whether the box follows PTP (AirPlay 2 PTP sessions and
    /// buffered streams are refused without it).
    public init(decoding request: AirPlayRequest, ptp: Bool) throws(Refusal) {
        if request.method == "ANNOUNCE" {
            self = .announce(try Self.stream(announced: request))
        } else if request.method == "SETUP", AirPlay2Setup.hasPlistBody(request) {
            self = try Self.setup(request, ptp: ptp)
        } else {
            self = .other(request)
        }
    }

    /// ANNOUNCE's SDP, refused when it is not SDP, not readable, or not a stream played here.
    private static func stream(announced request: AirPlayRequest) throws(Refusal) -> RAOPStreamDescription {
        guard request.headers["Content-Type"]?.lowercased().hasPrefix("application/sdp") == true else {
            throw Refusal(status: 415, reason: "ANNOUNCE needs an application/sdp body")
        }
        let stream: RAOPStreamDescription
        do {
            stream = try RAOPStreamDescription(sdp: String(buffer: request.body))
        } catch {
            throw Refusal(status: 400, reason: "SDP: \(error)")
        }
        if stream.codec == .aacLC || stream.codec == .aacELD, stream.aacConfig == nil {
            throw Refusal(status: 400, reason: "mpeg4-generic needs config=<AudioSpecificConfig hex> in its fmtp")
        }
        guard playedSampleRates.contains(stream.sampleRate), stream.channels == 2 else {
            throw Refusal(status: 415, reason: "only 44100 or 48000 Hz stereo is played")
        }
        return stream
    }

    /// An AirPlay 2 SETUP plist: one of its four kinds; one audio stream per session (the box has
    /// one output).
    private static func setup(_ request: AirPlayRequest, ptp: Bool) throws(Refusal) -> AudioRequest {
        let setup: AirPlay2Setup
        do {
            setup = try AirPlay2Setup(plist: try PropertyList(decoding: Array(request.body.readableBytesView)), ptp: ptp)
        } catch let refusal as AirPlay2Setup.Refusal {
            throw Refusal(status: refusal.status, reason: refusal.description)
        } catch {
            throw Refusal(status: 400, reason: "SETUP body is not a property list: \(error)")
        }
        switch setup {
        case .session(let session): return .setupSession(session)
        case .remoteControl(let session): return .setupRemoteControl(session)
        case .dataStream(let stream): return .setupDataStream(stream)
        case .streams(let streams):
            guard streams.count == 1, let stream = streams.first else {
                throw Refusal(status: 461, reason: "one audio stream per session is played here, not \(streams.count)")
            }
            do {
                return .setupStream(stream, try stream.description())
            } catch {
                throw Refusal(status: error.status, reason: error.description)
            }
        }
    }
}

extension AudioSessionStateMachine {
    /// One decoded request from `connection` (`senderHost`: its address bytes, for the event
    /// and timing channels). Remote-control sessions and data streams belong to the connection,
    /// not to an audio session: the handler keeps them, and the machine refuses them with 501.
    public mutating func receive(_ request: AudioRequest, on connection: ConnectionID, senderHost: [UInt8]? = nil,
                                 now: Double, wallClock: Date? = nil) -> [Action] {
        switch request {
        case .announce(let stream):
            return announce(stream, on: connection, senderHost: senderHost, now: now)
        case .setupSession(let session):
            return setupSession(session, ptp: session.timingProtocol == "PTP", on: connection, senderHost: senderHost, now: now)
        case .setupStream(let stream, let description):
            return setupStreams(description, buffered: stream.type == AirPlay2Setup.buffered,
                                senderControlPort: stream.controlPort.map { UInt16($0) }, on: connection, now: now)
        case .setupRemoteControl, .setupDataStream:
            return [.reply(.text(status: 501, "remote-control sessions and data streams are kept by the connection, not an audio session"))]
        case .other(let request):
            return receive(request, on: connection, now: now, wallClock: wallClock)
        }
    }
}
