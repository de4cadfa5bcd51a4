/// What a receiver answers to an AirPlay 2 `SETUP` (a binary plist), both ways: the receiver
/// writes it, the sender and the conformance runner read it.
public enum AirPlay2SetupReply: Equatable, Sendable {
    /// Phase 1 (and a remote-control-only SETUP): where the event channel listens.
    case session(Session)
    /// Phase 2: each stream's ports.
    case streams([Stream])

    /// Phase 1's answer.
    public struct Session: Equatable, Sendable {
        /// The receiver's event channel port (TCP).
        public var eventPort: Int
        /// The receiver's NTP timing port (0 on PTP); absent in a remote-control-only answer.
        public var timingPort: Int?
        /// PTP: the addresses the receiver's clock is reached at (its `timingPeerInfo`).
        public var timingPeers: [String]

        /// An answer from its parts.
        public init(eventPort: Int, timingPort: Int? = nil, timingPeers: [String] = []) {
            self.eventPort = eventPort
            self.timingPort = timingPort
            self.timingPeers = timingPeers
        }
    }

    /// One stream's answer in phase 2.
    public struct Stream: Equatable, Sendable {
        /// The stream type it answers (96 realtime, 103 buffered).
        public var type: Int
        /// Where the audio goes: UDP for realtime, TCP for buffered.
        public var dataPort: Int
        /// The receiver's control port (syncs and resend requests; realtime).
        public var controlPort: Int?
        /// Bytes a buffered stream may have outstanding (`audioBufferSize`).
        public var audioBufferSize: Int?

        /// A stream's answer from its parts.
        public init(type: Int, dataPort: Int, controlPort: Int? = nil, audioBufferSize: Int? = nil) {
            self.type = type
            self.dataPort = dataPort
            self.controlPort = controlPort
            self.audioBufferSize = audioBufferSize
        }
    }

    /// Reads an answer; throws, naming what is missing, when it has neither `streams` nor an
    /// `eventPort`, or a port is not one.
    public init(plist: PropertyList) throws(PropertyListError) {
        // A PTP session's timingPort is 0 (nothing to time over NTP); any other port is 1 to 65535.
        func port(_ value: PropertyList?, _ name: String, zero: Bool = false) throws(PropertyListError) -> Int? {
            guard let value else { return nil }
            guard let number = value.integerValue, ((zero ? 0 : 1)...65535).contains(number) else {
                throw PropertyListError(description: "\(name) is not a port")
            }
            return Int(number)
        }
        guard case .dictionary(let entries) = plist else { throw PropertyListError(description: "the SETUP reply is not a dictionary") }
        if let streams = entries["streams"] {
            guard case .array(let items) = streams, !items.isEmpty else {
                throw PropertyListError(description: "the SETUP reply's streams is not a list of streams")
            }
            var read: [Stream] = []
            for item in items {
                guard let dataPort = try port(item["dataPort"], "dataPort") else {
                    throw PropertyListError(description: "a stream in the SETUP reply has no dataPort (keys: \(Self.keys(of: item)))")
                }
                read.append(Stream(type: Int(item["type"]?.integerValue ?? 0), dataPort: dataPort,
                                   controlPort: try port(item["controlPort"], "controlPort"),
                                   audioBufferSize: item["audioBufferSize"]?.integerValue.map { Int(clamping: $0) }))
            }
            self = .streams(read)
            return
        }
        guard let eventPort = try port(entries["eventPort"], "eventPort") else {
            throw PropertyListError(description: "the SETUP reply has no eventPort (keys: \(Self.keys(of: plist)))")
        }
        self = .session(Session(eventPort: eventPort, timingPort: try port(entries["timingPort"], "timingPort", zero: true),
                                timingPeers: entries["timingPeerInfo"].map(TimingPeers.addresses) ?? []))
    }

    /// The answer's body.
    public var plist: PropertyList {
        switch self {
        case .session(let session):
            var entries: [String: PropertyList] = ["eventPort": .integer(Int64(session.eventPort))]
            if let timingPort = session.timingPort { entries["timingPort"] = .integer(Int64(timingPort)) }
            if let first = session.timingPeers.first {
                entries["timingPeerInfo"] = .dictionary(["Addresses": .array(session.timingPeers.map { .string($0) }), "ID": .string(first)])
            }
            return .dictionary(entries)
        case .streams(let streams):
            return .dictionary(["streams": .array(streams.map { stream in
                var entries: [String: PropertyList] = ["type": .integer(Int64(stream.type)), "dataPort": .integer(Int64(stream.dataPort))]
                if let controlPort = stream.controlPort { entries["controlPort"] = .integer(Int64(controlPort)) }
                if let size = stream.audioBufferSize { entries["audioBufferSize"] = .integer(Int64(size)) }
                return .dictionary(entries)
            })])
        }
    }

    /// The session's answer, when this is one.
    public var session: Session? { if case .session(let session) = self { session } else { nil } }
    /// The streams' answers, when this is one.
    public var streams: [Stream]? { if case .streams(let streams) = self { streams } else { nil } }

    /// A dictionary's keys, sorted, for a message naming what came back instead.
    private static func keys(of plist: PropertyList) -> String {
        guard case .dictionary(let entries) = plist, !entries.isEmpty else { return "none" }
        return entries.keys.sorted().prefix(12).joined(separator: ", ")
    }
}
