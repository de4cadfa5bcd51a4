/// DMAP (DAAP) tagged data as RAOP senders send track metadata: 4-byte tag, 4-byte big-endian
/// length, value; `mlit` is a container of item fields.
public enum DMAP {
    /// Track metadata from a DMAP body (an `mlit` container, or its fields directly).
    public struct Item: Hashable, Sendable {
        /// `minm`.
        public var title: String?
        /// `asar`.
        public var artist: String?
        /// `asal`.
        public var album: String?
        /// `asgn`.
        public var genre: String?
        /// `astm`, milliseconds.
        public var durationMilliseconds: Int?

        /// An empty item.
        public init() {}
    }

    /// Why DMAP bytes could not be read.
    public struct Problem: Error, Hashable, Sendable {
        /// What is wrong.
        public var description: String
    }

    /// Parses the fields of an item; bounded: nesting is one container deep, lengths are checked.
    public static func parseItem(_ bytes: [UInt8]) throws(Problem) -> Item {
        var fields = try entries(bytes[...])
        if let container = fields.first(where: { $0.tag == "mlit" }) {
            fields = try entries(container.value)
        }
        return item(fields: fields)
    }

    /// The item the fields of one level describe (the last of a tag wins; an `astm` that is not
    /// four bytes, and other tags, are skipped).
    public static func item(fields: [(tag: String, value: ArraySlice<UInt8>)]) -> Item {
        var item = Item()
        for field in fields {
            let text = String(decoding: field.value, as: UTF8.self)
            switch field.tag {
            case "minm": item.title = text
            case "asar": item.artist = text
            case "asal": item.album = text
            case "asgn": item.genre = text
            case "astm" where field.value.count == 4:
                item.durationMilliseconds = Int(field.value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            default: continue
            }
        }
        return item
    }

    /// The tag/value entries at one level.
    public static func entries(_ bytes: ArraySlice<UInt8>) throws(Problem) -> [(tag: String, value: ArraySlice<UInt8>)] {
        var result: [(tag: String, value: ArraySlice<UInt8>)] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes.endIndex - index >= 8 else { throw Problem(description: "truncated DMAP header") }
            let tag = String(decoding: bytes[index..<index + 4], as: UTF8.self)
            let length = Int(bytes[(index + 4)..<(index + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let start = index + 8
            guard length <= bytes.endIndex - start else { throw Problem(description: "DMAP field \(tag) runs past the end") }
            result.append((tag: tag, value: bytes[start..<start + length]))
            index = start + length
        }
        return result
    }

    /// An item as senders send it: an `mlit` container of the fields that are set (text as
    /// UTF-8, its length in bytes), for `SET_PARAMETER` with `application/x-dmap-tagged`.
    public static func encode(_ item: Item) -> [UInt8] {
        var fields: [UInt8] = []
        for (tag, text) in [("minm", item.title), ("asar", item.artist), ("asal", item.album), ("asgn", item.genre)] {
            if let text { fields += field(tag, Array(text.utf8)) }
        }
        if let milliseconds = item.durationMilliseconds {
            fields += field("astm", withUnsafeBytes(of: UInt32(clamping: milliseconds).bigEndian, Array.init))
        }
        return field("mlit", fields)
    }

    /// Encodes one field (for tests and the sender).
    public static func field(_ tag: String, _ value: [UInt8]) -> [UInt8] {
        Array(tag.utf8.prefix(4)) + withUnsafeBytes(of: UInt32(value.count).bigEndian, Array.init) + value
    }
}
