/// The part of TOML 1.0 a configuration file needs, read strictly: comments, `key = value`
/// with bare or quoted keys, `[table]` headers, basic and literal strings, integers, floats,
/// booleans and (multi-line) arrays. Dates, inline tables, multi-line strings and dotted keys
/// are refused with the line they are on, never misread. Written here rather than taken from a
/// package so the daemon carries no C++ TOML library and no Foundation calendar for one file.
public struct TOMLDocument: Sendable {
    /// A value in the document.
    public enum Value: Equatable, Sendable {
        case string(String)
        case integer(Int)
        case float(Double)
        case bool(Bool)
        case array([Value])
        case table([String: Value])
    }

    /// Why a text is not TOML we read.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The 1-based line of the problem.
        public let line: Int
        /// What is wrong there.
        public let message: String
        /// "line N: message".
        public var description: String { "line \(line): \(message)" }
    }

    /// The top-level table.
    public let root: [String: Value]

    /// Parses `text`.
    public init(parsing text: String) throws(ParseError) {
        var parser = Parser(bytes: Array(text.utf8))
        root = try parser.document()
    }
}

/// A recursive-descent reader over the UTF-8 bytes; `line` follows every newline consumed.
private struct Parser {
    let bytes: [UInt8]
    var index = 0
    var line = 1
    /// Arrays open around the value being read: nesting is bounded so no file can exhaust the stack.
    var depth = 0
    static let maximumDepth = 32

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws(TOMLDocument.ParseError) -> [String: TOMLDocument.Value] {
        var root: [String: TOMLDocument.Value] = [:]
        var tableName: String?
        var table: [String: TOMLDocument.Value] = [:]
        func close(into root: inout [String: TOMLDocument.Value]) {
            if let tableName { root[tableName] = .table(table) }
        }
        while true {
            skipBlanksAndComments(newlines: true)
            guard let byte = peek else { break }
            if byte == UInt8(ascii: "[") {
                index += 1
                skipSpaces()
                let name = try key()
                skipSpaces()
                try expect("]", "a table header ends with ]")
                try endOfLine()
                close(into: &root)
                guard root[name] == nil else { throw fail("the table or key \"\(name)\" is defined twice") }
                tableName = name
                table = [:]
                root[name] = .table([:])
                continue
            }
            let name = try key()
            skipSpaces()
            try expect("=", "expected = after the key \"\(name)\"")
            skipSpaces()
            let value = try self.value()
            try endOfLine()
            if tableName == nil {
                guard root[name] == nil else { throw fail("the key \"\(name)\" is defined twice") }
                root[name] = value
            } else {
                guard table[name] == nil else { throw fail("the key \"\(name)\" is defined twice") }
                table[name] = value
            }
        }
        close(into: &root)
        return root
    }

    // MARK: Keys and values

    mutating func key() throws(TOMLDocument.ParseError) -> String {
        guard let byte = peek else { throw fail("expected a key") }
        let name: String
        if byte == UInt8(ascii: "\"") {
            name = try basicString()
        } else if byte == UInt8(ascii: "'") {
            name = try literalString()
        } else {
            let start = index
            while let next = peek, Self.isBareKey(next) { index += 1 }
            guard index > start else { throw fail("expected a key, found \(Self.show(byte))") }
            name = String(decoding: bytes[start..<index], as: UTF8.self)
        }
        if peek == UInt8(ascii: ".") { throw fail("dotted keys are not supported here") }
        return name
    }

    mutating func value() throws(TOMLDocument.ParseError) -> TOMLDocument.Value {
        guard let byte = peek else { throw fail("expected a value") }
        switch byte {
        case UInt8(ascii: "\""):
            if starts(with: "\"\"\"") { throw fail("multi-line strings are not supported here") }
            return .string(try basicString())
        case UInt8(ascii: "'"):
            if starts(with: "'''") { throw fail("multi-line strings are not supported here") }
            return .string(try literalString())
        case UInt8(ascii: "["):
            return .array(try array())
        case UInt8(ascii: "{"):
            throw fail("inline tables are not supported here")
        default:
            if starts(with: "true"), !isWordByte(at: index + 4) { index += 4; return .bool(true) }
            if starts(with: "false"), !isWordByte(at: index + 5) { index += 5; return .bool(false) }
            return try number()
        }
    }

    mutating func array() throws(TOMLDocument.ParseError) -> [TOMLDocument.Value] {
        guard depth < Self.maximumDepth else { throw fail("arrays nested deeper than \(Self.maximumDepth)") }
        depth += 1
        defer { depth -= 1 }
        index += 1
        var items: [TOMLDocument.Value] = []
        while true {
            skipBlanksAndComments(newlines: true)
            if peek == UInt8(ascii: "]") { index += 1; return items }
            guard peek != nil else { throw fail("the array is not closed with ]") }
            items.append(try value())
            skipBlanksAndComments(newlines: true)
            if peek == UInt8(ascii: ",") { index += 1; continue }
            guard peek != nil else { throw fail("the array is not closed with ]") }
            guard peek == UInt8(ascii: "]") else { throw fail("expected , or ] in the array") }
        }
    }

    mutating func number() throws(TOMLDocument.ParseError) -> TOMLDocument.Value {
        let start = index
        while let byte = peek, isWordByte(at: index) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":") { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard !text.isEmpty else { throw fail("expected a value, found \(Self.show(bytes[start]))") }
        if text.contains(":") || (text.count >= 10 && text.dropFirst(4).first == "-") {
            throw fail("dates and times are not supported here")
        }
        let digits = text.filter { $0 != "_" }
        if digits.hasPrefix("0x"), let value = Int(digits.dropFirst(2), radix: 16) { return .integer(value) }
        if digits.hasPrefix("0o"), let value = Int(digits.dropFirst(2), radix: 8) { return .integer(value) }
        if digits.hasPrefix("0b"), let value = Int(digits.dropFirst(2), radix: 2) { return .integer(value) }
        if let value = Int(digits) {
            let unsigned = digits.hasPrefix("+") || digits.hasPrefix("-") ? digits.dropFirst() : Substring(digits)
            guard unsigned == "0" || !unsigned.hasPrefix("0") else { throw fail("integers may not have leading zeros: \(text)") }
            return .integer(value)
        }
        switch digits {
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let value = Double(digits) { return .float(value) }
        throw fail("\(text) is not a value (strings need quotes)")
    }

    mutating func basicString() throws(TOMLDocument.ParseError) -> String {
        index += 1
        var out: [UInt8] = []
        while true {
            guard let byte = peek, byte != UInt8(ascii: "\n") else { throw fail("the string is not closed with \"") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escape = peek else { throw fail("the string is not closed with \"") }
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"), UInt8(ascii: "U"):
                    out.append(contentsOf: try unicodeEscape(digits: escape == UInt8(ascii: "u") ? 4 : 8))
                default: throw fail("unknown escape \\\(Self.show(escape)) in a string")
                }
            default:
                guard byte >= 0x20 || byte == 0x09, byte != 0x7F else { throw fail("control character in a string") }
                out.append(byte)
            }
        }
    }

    mutating func unicodeEscape(digits: Int) throws(TOMLDocument.ParseError) -> [UInt8] {
        guard index + digits <= bytes.count,
              let code = UInt32(String(decoding: bytes[index..<(index + digits)], as: UTF8.self), radix: 16),
              let scalar = Unicode.Scalar(code) else { throw fail("bad \\u escape in a string") }
        index += digits
        return Array(String(Character(scalar)).utf8)
    }

    mutating func literalString() throws(TOMLDocument.ParseError) -> String {
        index += 1
        let start = index
        while let byte = peek, byte != UInt8(ascii: "'") {
            guard byte != UInt8(ascii: "\n") else { throw fail("the string is not closed with '") }
            index += 1
        }
        guard peek != nil else { throw fail("the string is not closed with '") }
        index += 1
        return String(decoding: bytes[start..<(index - 1)], as: UTF8.self)
    }

    // MARK: Whitespace, comments, line ends

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpaces() {
        while let byte = peek, byte == 0x20 || byte == 0x09 { index += 1 }
    }

    mutating func skipBlanksAndComments(newlines: Bool) {
        while let byte = peek {
            if byte == 0x20 || byte == 0x09 || byte == 0x0D {
                index += 1
            } else if byte == UInt8(ascii: "#") {
                while let next = peek, next != 0x0A { index += 1 }
            } else if byte == 0x0A && newlines {
                index += 1
                line += 1
            } else {
                return
            }
        }
    }

    /// After a value or header: spaces, an optional comment, then a newline or the end.
    mutating func endOfLine() throws(TOMLDocument.ParseError) {
        skipBlanksAndComments(newlines: false)
        guard let byte = peek else { return }
        guard byte == 0x0A else { throw fail("unexpected \(Self.show(byte)) after the value (one key = value per line)") }
    }

    mutating func expect(_ character: Character, _ message: String) throws(TOMLDocument.ParseError) {
        guard peek == character.asciiValue else { throw fail(message) }
        index += 1
    }

    func starts(with text: String) -> Bool {
        let probe = Array(text.utf8)
        return index + probe.count <= bytes.count && Array(bytes[index..<(index + probe.count)]) == probe
    }

    func isWordByte(at position: Int) -> Bool {
        position < bytes.count && Self.isBareKey(bytes[position])
    }

    func fail(_ message: String) -> TOMLDocument.ParseError { TOMLDocument.ParseError(line: line, message: message) }

    static func isBareKey(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    static func show(_ byte: UInt8) -> String {
        byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }
}
