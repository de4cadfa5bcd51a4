/// An mDNS TXT record as an ordered list of `key=value` strings (RFC 6763 section 6).
///
/// Keys are compared case-insensitively when read; order is kept when written because
/// some senders read the first occurrence of a key only.
public struct TXTRecord: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    /// The entries in publication order.
    public private(set) var entries: [(key: String, value: String)]

    /// An empty record.
    public init() { entries = [] }

    /// A record from ordered entries.
    public init(_ entries: [(String, String)]) { self.entries = entries.map { (key: $0.0, value: $0.1) } }

    /// A record from a dictionary literal, in literal order.
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Parses raw TXT strings (`key=value`, or a bare `key` meaning an empty value).
    public init(strings: [String]) {
        entries = strings.compactMap { item in
            guard !item.isEmpty else { return nil }
            guard let equals = item.firstIndex(of: "=") else { return (key: item, value: "") }
            return (key: String(item[..<equals]), value: String(item[item.index(after: equals)...]))
        }
    }

    /// The value of the first entry with this key (case-insensitive).
    public subscript(key: String) -> String? {
        get {
            let wanted = key.lowercased()
            return entries.first { $0.key.lowercased() == wanted }?.value
        }
        set {
            let wanted = key.lowercased()
            if let index = entries.firstIndex(where: { $0.key.lowercased() == wanted }) {
                if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
            } else if let newValue {
                entries.append((key: key, value: newValue))
            }
        }
    }

    /// The `key=value` strings to hand to the mDNS publisher.
    public var strings: [String] { entries.map { "\($0.key)=\($0.value)" } }

    /// Compares entries in order.
    public static func == (lhs: TXTRecord, rhs: TXTRecord) -> Bool { lhs.strings == rhs.strings }

    /// Hashes the entries in order.
    public func hash(into hasher: inout Hasher) { hasher.combine(strings) }
}
