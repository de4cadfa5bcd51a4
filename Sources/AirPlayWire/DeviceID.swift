/// The 48-bit device identifier AirPlay devices publish: `deviceid=AA:BB:CC:DD:EE:FF` in
/// `_airplay._tcp` and the `AABBCCDDEEFF@Name` instance prefix of `_raop._tcp`.
public struct DeviceID: Hashable, Sendable, CustomStringConvertible {
    /// The six bytes, most significant first.
    public let bytes: [UInt8]

    /// Wraps six bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// Parses `aa:bb:cc:dd:ee:ff`, `AA-BB-…` or `AABBCCDDEEFF` (case-insensitive).
    public init?(_ text: some StringProtocol) {
        let hex = String(text.filter { $0 != ":" && $0 != "-" })
        guard hex.count == 12, hex.allSatisfy(\.isHexDigit) else { return nil }
        var result: [UInt8] = []
        var index = hex.startIndex
        for _ in 0..<6 {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            result.append(byte)
            index = next
        }
        self.bytes = result
    }

    /// The colon form, upper case: `AA:BB:CC:DD:EE:FF`.
    public var colonForm: String { bytes.map { Self.hex($0) }.joined(separator: ":") }

    /// The compact form used as the RAOP instance prefix: `AABBCCDDEEFF`.
    public var compactForm: String { bytes.map { Self.hex($0) }.joined() }

    /// The colon form.
    public var description: String { colonForm }

    /// The `_raop._tcp` instance name for a device name: `AABBCCDDEEFF@Name`.
    public func raopInstanceName(deviceName: String) -> String { "\(compactForm)@\(deviceName)" }

    /// Splits a RAOP instance name into its device id and device name; nil when it has no valid prefix.
    public static func splitRAOPInstanceName(_ name: String) -> (id: DeviceID, deviceName: String)? {
        guard let at = name.firstIndex(of: "@"), let id = DeviceID(name[..<at]) else { return nil }
        return (id, String(name[name.index(after: at)...]))
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
