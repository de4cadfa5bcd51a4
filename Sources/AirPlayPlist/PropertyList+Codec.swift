import AirPlayWire
internal import CPlist
import FoundationEssentials
import Glibc

extension PropertyList {
    /// Serialises through libplist.
    public func encoded(as format: PropertyListFormat) -> [UInt8] {
        let node = PlistNode(makeNode())
        var pointer: UnsafeMutablePointer<CChar>?
        var length: UInt32 = 0
        switch format {
        case .xml:
            plist_to_xml(node.handle, &pointer, &length)
            defer { plist_to_xml_free(pointer) }
            return Self.copy(pointer, length)
        case .binary:
            plist_to_bin(node.handle, &pointer, &length)
            defer { plist_to_bin_free(pointer) }
            return Self.copy(pointer, length)
        }
    }

    /// Parses XML or binary bytes (detected from the content); throws on anything else.
    public init(decoding bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { throw PropertyListError(description: "empty property list") }
        guard bytes.count < Int(UInt32.max) else { throw PropertyListError(description: "property list too large") }
        // What libplist 2.2 would abort the process on is refused first (BinaryPlistScreen);
        // XML may not hold NUL at all (XML 1.0), and in a key or string libplist aborts on it.
        if Self.plistIsBinary(bytes) {
            if let problem = BinaryPlistScreen.problem(in: bytes) { throw PropertyListError(description: problem) }
        } else if bytes.contains(0) {
            throw PropertyListError(description: "XML property list holds NUL")
        }
        var root: plist_t?
        bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                if plist_is_binary(chars, UInt32(bytes.count)) != 0 {
                    plist_from_bin(chars, UInt32(bytes.count), &root)
                } else {
                    plist_from_xml(chars, UInt32(bytes.count), &root)
                }
            }
        }
        guard let root else { throw PropertyListError(description: "not a valid XML or binary property list") }
        let node = PlistNode(root)
        self = try Self.value(of: node.handle, depth: 0)
    }

    /// Whether libplist reads `bytes` as binary (its own test, so the screen sees what it will).
    private static func plistIsBinary(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { plist_is_binary($0, UInt32(bytes.count)) != 0 }
        }
    }

    /// The format of bytes: binary when they start with `bplist`, else XML.
    public static func detectFormat(of bytes: [UInt8]) -> PropertyListFormat {
        bytes.starts(with: Array("bplist".utf8)) ? .binary : .xml
    }

    private static func copy(_ pointer: UnsafeMutablePointer<CChar>?, _ length: UInt32) -> [UInt8] {
        guard let pointer else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
            Array(UnsafeBufferPointer(start: $0, count: Int(length)))
        }
    }

    /// Builds a libplist tree; the caller owns the returned node.
    private func makeNode() -> plist_t {
        switch self {
        case .dictionary(let dictionary):
            let node = plist_new_dict()!
            for key in dictionary.keys.sorted() {
                plist_dict_set_item(node, key, dictionary[key]!.makeNode())
            }
            return node
        case .array(let items):
            let node = plist_new_array()!
            for item in items { plist_array_append_item(node, item.makeNode()) }
            return node
        case .string(let value):
            return plist_new_string(value)
        case .integer(let value):
            // libplist 2.2 stores integers as 64-bit patterns.
            return plist_new_uint(UInt64(bitPattern: value))
        case .real(let value):
            return plist_new_real(value)
        case .bool(let value):
            return plist_new_bool(value ? 1 : 0)
        case .data(let bytes):
            return bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { plist_new_data($0.baseAddress, UInt64(bytes.count)) }
            }
        case .date(let date):
            // Property list dates count from 2001-01-01.
            let interval = date.timeIntervalSinceReferenceDate
            let seconds = interval.rounded(.down)
            return plist_new_date(Int32(clamping: Int64(seconds)), Int32((interval - seconds) * 1_000_000))
        }
    }

    /// Nesting deeper than this is refused, so hostile input cannot exhaust the stack.
    private static let maximumDepth = 64

    private static func value(of node: plist_t, depth: Int) throws -> PropertyList {
        guard depth < maximumDepth else { throw PropertyListError(description: "property list nested too deeply") }
        switch plist_get_node_type(node) {
        case PLIST_DICT:
            var result: [String: PropertyList] = [:]
            var iterator: plist_dict_iter?
            plist_dict_new_iter(node, &iterator)
            defer { free(iterator) }
            while true {
                var key: UnsafeMutablePointer<CChar>?
                var child: plist_t?
                plist_dict_next_item(node, iterator, &key, &child)
                guard let key, let child else { free(key); break }
                let name = String(cString: key)
                free(key)
                result[name] = try value(of: child, depth: depth + 1)
            }
            return .dictionary(result)
        case PLIST_ARRAY:
            let count = plist_array_get_size(node)
            return .array(try (0..<count).map { index in
                guard let child = plist_array_get_item(node, index) else {
                    throw PropertyListError(description: "missing array item")
                }
                return try value(of: child, depth: depth + 1)
            })
        case PLIST_STRING, PLIST_KEY:
            var pointer: UnsafeMutablePointer<CChar>?
            plist_get_string_val(node, &pointer)
            defer { free(pointer) }
            return .string(pointer.map { String(cString: $0) } ?? "")
        case PLIST_UINT:
            var raw: UInt64 = 0
            plist_get_uint_val(node, &raw)
            return .integer(Int64(bitPattern: raw))
        case PLIST_REAL:
            var raw: Double = 0
            plist_get_real_val(node, &raw)
            return .real(raw)
        case PLIST_BOOLEAN:
            var raw: UInt8 = 0
            plist_get_bool_val(node, &raw)
            return .bool(raw != 0)
        case PLIST_DATA:
            var length: UInt64 = 0
            guard let pointer = plist_get_data_ptr(node, &length) else { return .data([]) }
            return .data(pointer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                Array(UnsafeBufferPointer(start: $0, count: Int(length)))
            })
        case PLIST_DATE:
            var seconds: Int32 = 0
            var microseconds: Int32 = 0
            plist_get_date_val(node, &seconds, &microseconds)
            return .date(Date(timeIntervalSinceReferenceDate: Double(seconds) + Double(microseconds) / 1_000_000))
        case PLIST_UID:
            var raw: UInt64 = 0
            plist_get_uid_val(node, &raw)
            return .integer(Int64(bitPattern: raw))
        default:
            throw PropertyListError(description: "unsupported property list node")
        }
    }
}

/// Owns one libplist tree and frees it.
private final class PlistNode {
    let handle: plist_t
    init(_ handle: plist_t) { self.handle = handle }
    deinit { plist_free(handle) }
}
