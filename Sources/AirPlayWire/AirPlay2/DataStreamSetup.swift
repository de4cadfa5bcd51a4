/// A data stream's SETUP (`streams: [{type: 130, …}]`), both ways: what an iPhone (or pyatv's
/// remote control) asks for to exchange MediaRemote messages with the box, and the reply that
/// names the port (`Protocol/airplay2.md` §18).
public struct DataStreamSetup: Hashable, Sendable {
    /// The stream type.
    public static let type = 130
    /// `clientTypeUUID` of a MediaRemote client.
    public static let mediaRemoteClientType = "1910A70F-DBC0-4242-AF95-115DB30604E1"

    /// The 64-bit seed of the stream's keys (senders draw it from 0 to 2^64: read unsigned).
    public var seed: UInt64
    /// `controlType` (2 from iOS and pyatv).
    public var controlType: Int64?
    /// `channelID`, a UUID.
    public var channelID: String?
    /// `clientUUID`.
    public var clientUUID: String?
    /// `clientTypeUUID`: `mediaRemoteClientType` for MediaRemote.
    public var clientTypeUUID: String?
    /// `wantsDedicatedSocket`: a TCP port of its own (always given here).
    public var wantsDedicatedSocket: Bool

    /// A setup from its parts.
    public init(seed: UInt64, controlType: Int64? = 2, channelID: String? = nil, clientUUID: String? = nil,
                clientTypeUUID: String? = DataStreamSetup.mediaRemoteClientType, wantsDedicatedSocket: Bool = true) {
        self.seed = seed
        self.controlType = controlType
        self.channelID = channelID
        self.clientUUID = clientUUID
        self.clientTypeUUID = clientTypeUUID
        self.wantsDedicatedSocket = wantsDedicatedSocket
    }

    /// The setup a stream entry describes; nil for another type or one without a seed.
    public init?(plist item: PropertyList) {
        guard item["type"]?.integerValue == Int64(Self.type), let seed = item["seed"]?.integerValue else { return nil }
        self.init(seed: UInt64(bitPattern: seed), controlType: item["controlType"]?.integerValue,
                  channelID: item["channelID"]?.stringValue.map { String($0.prefix(64)) },
                  clientUUID: item["clientUUID"]?.stringValue.map { String($0.prefix(64)) },
                  clientTypeUUID: item["clientTypeUUID"]?.stringValue.map { String($0.prefix(64)) },
                  wantsDedicatedSocket: item["wantsDedicatedSocket"]?.boolValue ?? true)
    }

    /// The stream entry, as a sender writes it.
    public var plist: PropertyList {
        var entry: [String: PropertyList] = ["type": .integer(Int64(Self.type)), "seed": .integer(Int64(bitPattern: seed)),
                                             "wantsDedicatedSocket": .bool(wantsDedicatedSocket)]
        if let controlType { entry["controlType"] = .integer(controlType) }
        if let channelID { entry["channelID"] = .string(channelID) }
        if let clientUUID { entry["clientUUID"] = .string(clientUUID) }
        if let clientTypeUUID { entry["clientTypeUUID"] = .string(clientTypeUUID) }
        return .dictionary(entry)
    }

    /// The reply: `{streams: [{type: 130, streamID, dataPort}]}`.
    public static func reply(streamID: Int, dataPort: Int) -> PropertyList {
        .dictionary(["streams": .array([.dictionary([
            "type": .integer(Int64(type)), "streamID": .integer(Int64(streamID)), "dataPort": .integer(Int64(dataPort)),
        ])])])
    }
}
