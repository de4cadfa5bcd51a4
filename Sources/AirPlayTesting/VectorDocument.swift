import AirPlayWire
import Foundation

/// A JSON vector file from `Protocol/vectors/` read without a Decodable type: values are
/// reached by a path of keys, byte strings are lower-case hex (the pairing vectors' form).
public struct VectorDocument {
    /// Why a vector could not be read.
    public struct Missing: Error, CustomStringConvertible {
        /// What is missing or malformed.
        public let description: String
    }

    private let root: Any
    private let name: String

    /// Loads `Protocol/vectors/<name>`.
    public init(_ name: String) throws {
        guard let data = FileManager.default.contents(atPath: ProtocolVectors.url(name).path) else {
            throw Missing(description: "\(ProtocolVectors.url(name).path) cannot be read")
        }
        root = try JSONSerialization.jsonObject(with: data)
        self.name = name
    }

    /// The value at a path of object keys.
    public func value(_ path: [String]) throws -> Any {
        var current = root
        for key in path {
            guard let object = current as? [String: Any], let next = object[key] else {
                throw Missing(description: "\(name): no \(path.joined(separator: " → "))")
            }
            current = next
        }
        return current
    }

    /// The text at a path.
    public func string(_ path: String...) throws -> String {
        guard let text = try value(path) as? String else { throw Missing(description: "\(name): \(path.joined(separator: " → ")) is not text") }
        return text
    }

    /// The bytes of the hex text at a path.
    public func bytes(_ path: String...) throws -> [UInt8] {
        let text = try value(path) as? String ?? ""
        guard let bytes = Self.bytes(hex: text) else { throw Missing(description: "\(name): \(path.joined(separator: " → ")) is not hex") }
        return bytes
    }

    /// Bytes from hex text; nil on an odd length or a non-hex digit.
    public static func bytes(hex: String) -> [UInt8]? { TextFormatting.bytes(hex: hex) }
}
