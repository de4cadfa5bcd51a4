/// HAP's TLV8 format: a one-byte type, a one-byte length, then that many bytes. A value longer
/// than 255 bytes is split into consecutive items of the same type, each 255 bytes but the
/// last, and joined again when read. The pairing messages are lists of these items.
public struct TLV8: Equatable, Sendable {
    /// The item types pairing uses (HAP, table "TLV types").
    public enum Kind: UInt8, Sendable, CaseIterable {
        case method = 0x00, identifier = 0x01, salt = 0x02, publicKey = 0x03, proof = 0x04
        case encryptedData = 0x05, state = 0x06, error = 0x07, retryDelay = 0x08, certificate = 0x09
        case signature = 0x0A, permissions = 0x0B, fragmentData = 0x0C, fragmentLast = 0x0D
        case flags = 0x13, separator = 0xFF
    }

    /// HAP's error codes, sent in an `error` item.
    public enum ErrorCode: UInt8, Sendable {
        case unknown = 0x01, authentication = 0x02, backoff = 0x03, maxPeers = 0x04
        case maxTries = 0x05, unavailable = 0x06, busy = 0x07
    }

    /// Why bytes are not TLV8.
    public struct DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// What is wrong, for a 400's reason.
        public let description: String
    }

    /// The items in order, each value whole (fragments joined). Unknown types are kept.
    public private(set) var items: [(type: UInt8, value: [UInt8])]

    /// An empty list.
    public init() { items = [] }

    /// Items in order.
    public init(_ items: [(Kind, [UInt8])]) {
        self.items = items.map { (type: $0.0.rawValue, value: $0.1) }
    }

    /// Appends an item.
    public mutating func append(_ kind: Kind, _ value: [UInt8]) { items.append((type: kind.rawValue, value: value)) }

    /// Appends a one-byte item (state, method, error, flags…).
    public mutating func append(_ kind: Kind, byte: UInt8) { append(kind, [byte]) }

    /// The first value of a type.
    public subscript(kind: Kind) -> [UInt8]? { items.first { $0.type == kind.rawValue }?.value }

    /// A one-byte value (state, method, error): nil when absent or not one byte.
    public func byte(_ kind: Kind) -> UInt8? {
        guard let value = self[kind], value.count == 1 else { return nil }
        return value[0]
    }

    /// An integer value, little-endian, of 1 to 8 bytes (flags, retry delay).
    public func integer(_ kind: Kind) -> UInt64? {
        guard let value = self[kind], (1...8).contains(value.count) else { return nil }
        return value.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    /// The wire bytes: long values fragmented into 255-byte items; an empty value is one item of length 0.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        for (position, item) in items.enumerated() {
            var rest = item.value[...]
            repeat {
                let chunk = rest.prefix(255)
                out.append(item.type)
                out.append(UInt8(chunk.count))
                out.append(contentsOf: chunk)
                rest = rest.dropFirst(chunk.count)
            } while !rest.isEmpty
            // A value ending on a full 255-byte fragment would absorb a next item of its type:
            // an empty fragment ends it (found by the `tlv8` fuzz target).
            let next = items.index(after: position)
            if !item.value.isEmpty, item.value.count % 255 == 0, next < items.endIndex, items[next].type == item.type {
                out += [item.type, 0]
            }
        }
        return out
    }

    /// Parses wire bytes, joining fragments: an item of 255 bytes followed by one of the same
    /// type continues it. At most `maximumBytes` are read (pairing bodies are small).
    public init(bytes: [UInt8], maximumBytes: Int = 16 * 1024) throws(DecodingError) {
        guard bytes.count <= maximumBytes else { throw DecodingError(description: "TLV8 body of \(bytes.count) bytes exceeds \(maximumBytes)") }
        items = []
        var index = 0
        var continues = false
        while index < bytes.count {
            guard index + 2 <= bytes.count else { throw DecodingError(description: "TLV8 item header cut short at byte \(index)") }
            let type = bytes[index], length = Int(bytes[index + 1])
            guard index + 2 + length <= bytes.count else {
                throw DecodingError(description: "TLV8 item of type \(type) claims \(length) bytes, \(bytes.count - index - 2) remain")
            }
            let value = bytes[(index + 2)..<(index + 2 + length)]
            if continues, let last = items.last, last.type == type {
                items[items.count - 1].value.append(contentsOf: value)
            } else {
                items.append((type: type, value: Array(value)))
            }
            continues = length == 255
            index += 2 + length
        }
    }

    /// Equal when the same items come in the same order.
    public static func == (lhs: TLV8, rhs: TLV8) -> Bool {
        lhs.items.count == rhs.items.count && zip(lhs.items, rhs.items).allSatisfy { $0.type == $1.type && $0.value == $1.value }
    }
}
