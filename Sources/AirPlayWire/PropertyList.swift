import FoundationEssentials

/// A property list value: what AirPlay carries in `/server-info`, `/play`, `/playback-info` and events.
public indirect enum PropertyList: Hashable, Sendable {
    /// `<dict>`; keys are written sorted so output is deterministic.
    case dictionary([String: PropertyList])
    /// `<array>`.
    case array([PropertyList])
    /// `<string>`.
    case string(String)
    /// `<integer>`.
    case integer(Int64)
    /// `<real>`.
    case real(Double)
    /// `<true/>` / `<false/>`.
    case bool(Bool)
    /// `<data>`.
    case data([UInt8])
    /// `<date>`.
    case date(Date)

    /// The value under a key when this is a dictionary.
    public subscript(key: String) -> PropertyList? {
        if case .dictionary(let dictionary) = self { return dictionary[key] }
        return nil
    }

    /// The string value, if this is one.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }

    /// The number as a Double (integers and reals).
    public var doubleValue: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The integer value (integers, and reals with no fraction).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .real(let value) where value.rounded() == value && abs(value) < 9e18: Int64(value)
        default: nil
        }
    }

    /// The Boolean value.
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
}

/// The two encodings of a property list on the wire.
public enum PropertyListFormat: String, Hashable, Sendable {
    /// `text/x-apple-plist+xml`.
    case xml
    /// `application/x-apple-binary-plist` (`bplist00`).
    case binary

    /// The MIME type AirPlay uses for the format.
    public var contentType: String {
        switch self {
        case .xml: "text/x-apple-plist+xml"
        case .binary: "application/x-apple-binary-plist"
        }
    }
}

/// Why bytes could not be read as a property list.
public struct PropertyListError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// An error saying what went wrong.
    public init(description: String) { self.description = description }
}
