/// The AirPlay status flags (`flags` in `_airplay._tcp`, `sf` in `_raop._tcp`).
public struct StatusFlags: OptionSet, Hashable, Sendable {
    /// The raw flag bits.
    public var rawValue: UInt32

    /// Wraps raw flag bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Bit 0: the device has a problem.
    public static let problemDetected = StatusFlags(rawValue: 1 << 0)
    /// Bit 1: the device is not configured yet.
    public static let notConfigured = StatusFlags(rawValue: 1 << 1)
    /// Bit 2: an audio output is attached; the device is ready to play.
    public static let audioCableAttached = StatusFlags(rawValue: 1 << 2)
    /// Bit 3: the user must enter a PIN shown on screen.
    public static let pinRequired = StatusFlags(rawValue: 1 << 3)
    /// Bit 7: a password is required.
    public static let passwordRequired = StatusFlags(rawValue: 1 << 7)
    /// Bit 9: one-time pairing is required.
    public static let pairingRequired = StatusFlags(rawValue: 1 << 9)

    /// The TXT form, `0x` followed by lower-case hex (`0x4`).
    public var txtValue: String { "0x" + String(rawValue, radix: 16) }

    /// Parses `0x44` or `68`; nil when malformed.
    public init?(txtValue: String) {
        if txtValue.lowercased().hasPrefix("0x") {
            guard let value = UInt32(txtValue.dropFirst(2), radix: 16) else { return nil }
            self.rawValue = value
        } else {
            guard let value = UInt32(txtValue) else { return nil }
            self.rawValue = value
        }
    }
}
