import AirPlayWire

/// The remote commands an AirPlay 2 sender says it takes from the receiver, both ways: the
/// body of `POST /command` with `type` `updateMRSupportedCommands` on the control connection.
///
/// `params.mrSupportedCommandsFromSender` is an array of data, each a binary plist of its own
/// (`{kCommandInfoCommandKey: <MediaRemote number>, kCommandInfoEnabledKey: <bool>}`): this
/// type lives beside the plist codec because it nests plists. iOS sends it when the app that
/// plays changes; OwnTone 29 sends an empty list and then its whole table.
public struct MediaRemoteSupportedCommands: Equatable, Sendable {
    /// The `type` of the plist.
    public static let type = "updateMRSupportedCommands"
    /// The most entries read (iOS lists about 30): the rest of a longer list is ignored.
    public static let maximumEntries = 256

    /// The MediaRemote numbers the sender enabled (0 play, 1 pause, 2 play/pause, 3 stop,
    /// 4 next, 5 previous, …).
    public var enabled: Set<Int>

    /// A list from its enabled commands.
    public init(enabled: Set<Int>) { self.enabled = enabled }

    /// The list a `POST /command` plist carries; nil for any other `type`, for one with no list,
    /// and for one none of whose entries reads. Entries that are not plists of a number and a
    /// flag are skipped.
    public init?(plist: PropertyList) {
        guard plist["type"]?.stringValue == Self.type else { return nil }
        guard case .array(let entries)? = plist["params"]?["mrSupportedCommandsFromSender"] else { return nil }
        var enabled = Set<Int>(), read = 0
        for entry in entries.prefix(Self.maximumEntries) {
            guard case .data(let bytes) = entry, bytes.count <= 64 * 1024, let info = try? PropertyList(decoding: bytes),
                  let number = info["kCommandInfoCommandKey"]?.integerValue, (0...Int64(Int32.max)).contains(number)
            else { continue }
            read += 1
            if info["kCommandInfoEnabledKey"]?.boolValue ?? (info["kCommandInfoEnabledKey"]?.integerValue.map { $0 != 0 } ?? true) {
                enabled.insert(Int(number))
            }
        }
        // A list none of whose entries reads says nothing (an empty list says "nothing").
        guard read > 0 || entries.isEmpty else { return nil }
        self.init(enabled: enabled)
    }

    /// The request's plist, each entry a binary plist of its own, in number order.
    public var plist: PropertyList {
        let entries = enabled.sorted().map { number -> PropertyList in
            .data(PropertyList.dictionary(["kCommandInfoCommandKey": .integer(Int64(number)), "kCommandInfoEnabledKey": .bool(true)])
                .encoded(as: .binary))
        }
        return .dictionary(["type": .string(Self.type), "params": .dictionary(["mrSupportedCommandsFromSender": .array(entries)])])
    }
}
