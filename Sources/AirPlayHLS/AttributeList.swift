/// An HLS attribute list (RFC 8216 §4.2): `NAME=value` pairs separated by commas, values being
/// decimal integers, hex sequences, floats, quoted strings, enumerated strings or resolutions.
/// Order and spelling are kept, so a playlist prints back as it was read.
public struct AttributeList: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    /// One attribute as written.
    public struct Attribute: Hashable, Sendable {
        /// The name, e.g. `BANDWIDTH`.
        public var name: String
        /// The value without quotes.
        public var value: String
        /// True when the value was (and is printed) in double quotes.
        public var quoted: Bool

        /// An attribute from its parts.
        public init(name: String, value: String, quoted: Bool) {
            self.name = name
            self.value = value
            self.quoted = quoted
        }
    }

    /// The attributes in order.
    public var attributes: [Attribute]

    /// A list from attributes.
    public init(_ attributes: [Attribute] = []) { self.attributes = attributes }

    /// A list from literal pairs; values containing characters other than enumerated-string ones are quoted.
    public init(dictionaryLiteral elements: (String, String)...) {
        attributes = elements.map { Attribute(name: $0.0, value: $0.1, quoted: Self.mustQuote(name: $0.0, value: $0.1)) }
    }

    /// Why an attribute list does not parse, with the column (1-based) within the list.
    public struct Problem: Error, Hashable, Sendable {
        /// What is wrong.
        public var message: String
        /// Where, counted in characters from the start of the list.
        public var column: Int
    }

    /// Parses `A=1,B="x,y",C=YES`. Whitespace around names and after commas is tolerated (real
    /// servers and the seed documents put a space after some commas); a trailing comma is fine.
    public init(parsing text: Substring) throws(Problem) {
        var result: [Attribute] = []
        let characters = Array(text)
        var index = 0
        func skipSpaces() { while index < characters.count, characters[index] == " " || characters[index] == "\t" { index += 1 } }
        while true {
            skipSpaces()
            if index >= characters.count { break }
            let nameStart = index
            while index < characters.count, characters[index] != "=", characters[index] != "," { index += 1 }
            let name = String(characters[nameStart..<index]).trimmingSpaces
            guard index < characters.count, characters[index] == "=", !name.isEmpty else {
                throw Problem(message: "expected NAME=value", column: nameStart + 1)
            }
            guard name.allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "-" }) else {
                throw Problem(message: "attribute name \(name) is not upper case letters, digits and -", column: nameStart + 1)
            }
            index += 1
            skipSpaces()
            if index < characters.count, characters[index] == "\"" {
                let valueStart = index + 1
                guard let close = characters[valueStart...].firstIndex(of: "\"") else {
                    throw Problem(message: "unterminated quoted string", column: index + 1)
                }
                result.append(Attribute(name: name, value: String(characters[valueStart..<close]), quoted: true))
                index = close + 1
                skipSpaces()
            } else {
                let valueStart = index
                while index < characters.count, characters[index] != "," { index += 1 }
                let value = String(characters[valueStart..<index]).trimmingSpaces
                guard !value.isEmpty else { throw Problem(message: "\(name) has no value", column: valueStart + 1) }
                result.append(Attribute(name: name, value: value, quoted: false))
            }
            if index >= characters.count { break }
            guard characters[index] == "," else { throw Problem(message: "expected a comma", column: index + 1) }
            index += 1
        }
        attributes = result
    }

    /// The value of an attribute (case-sensitive name, as RFC 8216 says).
    public subscript(name: String) -> String? {
        get { attributes.first { $0.name == name }?.value }
        set {
            if let newValue {
                if let at = attributes.firstIndex(where: { $0.name == name }) {
                    attributes[at].value = newValue
                } else {
                    attributes.append(Attribute(name: name, value: newValue, quoted: Self.mustQuote(name: name, value: newValue)))
                }
            } else {
                attributes.removeAll { $0.name == name }
            }
        }
    }

    /// A decimal integer attribute.
    public func integer(_ name: String) -> Int? { self[name].flatMap { Int($0) } }

    /// A float attribute.
    public func decimal(_ name: String) -> Double? { self[name].flatMap { Double($0) } }

    /// `YES`/`NO`.
    public func flag(_ name: String) -> Bool? {
        switch self[name] {
        case "YES": true
        case "NO": false
        default: nil
        }
    }

    /// The text form, as it goes after `#EXT-X-…:`.
    public var text: String {
        attributes.map { $0.quoted ? "\($0.name)=\"\($0.value)\"" : "\($0.name)=\($0.value)" }.joined(separator: ",")
    }

    /// Attributes whose value RFC 8216 types as a quoted-string.
    static let quotedNames: Set<String> = [
        "URI", "GROUP-ID", "AUDIO", "VIDEO", "SUBTITLES", "CLOSED-CAPTIONS", "CODECS", "SUPPLEMENTAL-CODECS", "NAME", "LANGUAGE",
        "ASSOC-LANGUAGE", "CHARACTERISTICS", "CHANNELS", "INSTREAM-ID", "KEYFORMAT", "KEYFORMATVERSIONS", "DATA-ID", "VALUE",
        "BYTERANGE", "STABLE-VARIANT-ID", "STABLE-RENDITION-ID", "PATHWAY-ID", "ID", "CLASS", "SERVER-URI",
    ]

    /// Whether a value set by the program is written in quotes: by the attribute's type, and for
    /// unknown attributes by what the value looks like. `CLOSED-CAPTIONS=NONE` is the one
    /// enumerated value of a quoted-string attribute.
    static func mustQuote(name: String, value: String) -> Bool {
        if name == "CLOSED-CAPTIONS", value == "NONE" { return false }
        return quotedNames.contains(name) || !isBare(value)
    }

    /// True for values that RFC 8216 allows unquoted (numbers, enumerated strings, resolutions, hex).
    static func isBare(_ value: String) -> Bool {
        !value.isEmpty && value.allSatisfy { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "x" || $0 == "X" }
            && !value.contains(",") && value.unicodeScalars.allSatisfy(\.isASCII)
    }
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" || text.last == "\r" { text = text.dropLast() }
        return String(text)
    }
}
