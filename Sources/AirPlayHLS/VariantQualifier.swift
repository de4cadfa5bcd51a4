/// A predicate over variants, the text form of AVFoundation's variant qualifiers:
/// `peakBitRate < 5000000`, `videoRange == PQ && peakBitRate < 5000000`, `audio.channels >= 6`,
/// `video.codec == hvc1`, `resolution >= 1920x1080`, combined with `&&`, `||`, `!` and
/// parentheses. Fields with several values (audio codecs, channels, languages) match when any
/// value does (`!=` when none equals).
public indirect enum VariantQualifier: Hashable, Sendable, CustomStringConvertible {
    /// A comparison of a field with a literal.
    case compare(Field, Operator, String)
    /// Both.
    case and(VariantQualifier, VariantQualifier)
    /// Either.
    case or(VariantQualifier, VariantQualifier)
    /// Not.
    case not(VariantQualifier)

    /// What a qualifier can look at.
    public enum Field: String, Hashable, Sendable, CaseIterable {
        /// `BANDWIDTH`.
        case peakBitRate
        /// `AVERAGE-BANDWIDTH` (the peak when absent).
        case averageBitRate
        /// Resolution (compared by pixel count; `==` compares both sides).
        case resolution
        /// Height in pixels.
        case height
        /// Width in pixels.
        case width
        /// `FRAME-RATE`.
        case frameRate
        /// SDR, HLG, PQ (ordered so).
        case videoRange
        /// Video codec family: avc1, hvc1, dvh1, …
        case videoCodec = "video.codec"
        /// Audio codec families: mp4a, ac-3, ec-3, alac, …
        case audioCodec = "audio.codec"
        /// Channel counts of the audio renditions.
        case audioChannels = "audio.channels"
        /// Languages of the audio renditions.
        case audioLanguage = "audio.language"
        /// Languages of the subtitle renditions.
        case subtitleLanguage = "subtitles.language"
        /// `HDCP-LEVEL`.
        case hdcpLevel

        /// Other spellings accepted (AVFoundation's key paths among them).
        static let aliases: [String: Field] = [
            "bandwidth": .peakBitRate, "averagebandwidth": .averageBitRate, "video.range": .videoRange,
            "videoattributes.videorange": .videoRange, "video.resolution": .resolution,
            "videoattributes.presentationsize": .resolution, "video.framerate": .frameRate,
            "videoattributes.nominalframerate": .frameRate, "videoattributes.codectypes": .videoCodec,
            "audioattributes.formatids": .audioCodec, "audio.codecs": .audioCodec, "audio.channelcount": .audioChannels,
            "channels": .audioChannels, "audio.languages": .audioLanguage, "subtitles.languages": .subtitleLanguage,
        ]

        static func named(_ text: String) -> Field? {
            allCases.first { $0.rawValue.lowercased() == text.lowercased() } ?? aliases[text.lowercased()]
        }
    }

    /// Comparison operators.
    public enum Operator: String, Hashable, Sendable, CaseIterable {
        /// Equal.
        case equal = "=="
        /// Not equal.
        case notEqual = "!="
        /// Less.
        case less = "<"
        /// Less or equal.
        case lessOrEqual = "<="
        /// Greater.
        case greater = ">"
        /// Greater or equal.
        case greaterOrEqual = ">="
    }

    /// Why an expression does not parse: the message and the column (1-based) it points at.
    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var message: String
        /// Where.
        public var column: Int

        /// "column N: message".
        public var description: String { "column \(column): \(message)" }
    }

    /// Parses an expression.
    public init(parsing text: String) throws(Problem) {
        var parser = QualifierParser(text: text)
        self = try parser.expression()
        try parser.expectEnd()
    }

    /// True when the variant satisfies the qualifier.
    public func matches(_ variant: VariantDescription) -> Bool {
        switch self {
        case .and(let left, let right): left.matches(variant) && right.matches(variant)
        case .or(let left, let right): left.matches(variant) || right.matches(variant)
        case .not(let inner): !inner.matches(variant)
        case .compare(let field, let op, let literal): Self.compare(field, op, literal, variant)
        }
    }

    /// The expression in canonical text form, with only the parentheses the parser needs
    /// (`&&` binds tighter than `||`, both group from the left). Parenthesising every operator
    /// made a flat chain of 33 `&&` read back 33 levels deep, past the parser's bound (found
    /// by fuzzing the round trip).
    public var description: String { rendered(within: .or) }

    /// How tightly an operand must bind where it stands.
    private enum Binding: Int { case or, and, unary }

    private func rendered(within binding: Binding) -> String {
        switch self {
        case .compare(let field, let op, let literal):
            return "\(field.rawValue) \(op.rawValue) \(Self.quotedIfNeeded(literal))"
        case .not(let inner):
            return "!" + inner.rendered(within: .unary)
        case .and(let left, let right):
            let text = left.rendered(within: .and) + " && " + right.rendered(within: .unary)
            return binding.rawValue > Binding.and.rawValue ? "(\(text))" : text
        case .or(let left, let right):
            let text = left.rendered(within: .or) + " || " + right.rendered(within: .and)
            return binding.rawValue > Binding.or.rawValue ? "(\(text))" : text
        }
    }

    /// A literal as the parser reads it back: bare when it is one word, else in quotes (one it
    /// does not contain; a literal can only have come from quotes of the other kind).
    static func quotedIfNeeded(_ literal: String) -> String {
        let bare = !literal.isEmpty && literal.allSatisfy { $0.isLetter || $0.isNumber || "._-/".contains($0) }
        if bare { return literal }
        return literal.contains("\"") ? "'\(literal)'" : "\"\(literal)\""
    }

    /// The best variant that matches: highest peak bit rate (then resolution) among the matching.
    public static func best(_ variants: [VariantDescription], matching qualifier: VariantQualifier?) -> VariantDescription? {
        variants.filter { qualifier?.matches($0) ?? true }.max { left, right in
            (left.peakBitRate, left.video?.resolution?.width ?? 0) < (right.peakBitRate, right.video?.resolution?.width ?? 0)
        }
    }

    private static func compare(_ field: Field, _ op: Operator, _ literal: String, _ variant: VariantDescription) -> Bool {
        func numbers(_ values: [Double], _ wanted: Double) -> Bool {
            switch op {
            case .equal: values.contains(wanted)
            case .notEqual: !values.contains(wanted)
            case .less: values.contains { $0 < wanted }
            case .lessOrEqual: values.contains { $0 <= wanted }
            case .greater: values.contains { $0 > wanted }
            case .greaterOrEqual: values.contains { $0 >= wanted }
            }
        }
        func texts(_ values: [String]) -> Bool {
            let lowered = values.map { $0.lowercased() }, wanted = literal.lowercased()
            switch op {
            case .equal: return lowered.contains(wanted)
            case .notEqual: return !lowered.contains(wanted)
            default: return false
            }
        }
        switch field {
        case .peakBitRate: return numbers([Double(variant.peakBitRate)], Double(literal) ?? .nan)
        case .averageBitRate: return numbers([Double(variant.averageBitRate ?? variant.peakBitRate)], Double(literal) ?? .nan)
        case .frameRate: return numbers(variant.video?.frameRate.map { [$0] } ?? [], Double(literal) ?? .nan)
        case .height: return numbers(variant.video?.resolution.map { [Double($0.height)] } ?? [], Double(literal) ?? .nan)
        case .width: return numbers(variant.video?.resolution.map { [Double($0.width)] } ?? [], Double(literal) ?? .nan)
        case .resolution:
            guard let have = variant.video?.resolution, let wanted = Resolution(literal) else { return op == .notEqual }
            switch op {
            case .equal: return have == wanted
            case .notEqual: return have != wanted
            default: return numbers([have.pixels], wanted.pixels)
            }
        case .videoRange:
            guard let have = variant.video?.range, let wanted = VideoRange(rawValue: literal.uppercased()) else { return op == .notEqual }
            let order: [VideoRange] = [.sdr, .hlg, .pq]
            return numbers([Double(order.firstIndex(of: have)!)], Double(order.firstIndex(of: wanted)!))
        case .videoCodec: return texts(variant.video.map { [$0.codec] } ?? [])
        case .audioCodec: return texts(variant.audio?.codecs ?? [])
        case .audioChannels: return numbers((variant.audio?.channels ?? []).map(Double.init), Double(literal) ?? .nan)
        case .audioLanguage: return texts(variant.audio?.languages ?? [])
        case .subtitleLanguage: return texts(variant.subtitleLanguages)
        case .hdcpLevel: return texts(variant.hdcpLevel.map { [$0] } ?? ["NONE"])
        }
    }
}

/// A recursive-descent parser for qualifier expressions, keeping columns for errors.
///
/// Nesting and length are bounded: every step over the tree (parsing, matching, printing and
/// freeing it) recurses, and 20 KB of `((((` or `!!!!` overflowed the stack.
struct QualifierParser {
    let characters: [Character]
    var index = 0
    /// Parentheses and `!` open around the current point, and comparisons read so far.
    private var depth = 0
    private var comparisons = 0
    /// The deepest nesting and the most comparisons an expression may have.
    static let maximumDepth = 32
    static let maximumComparisons = 256

    init(text: String) { characters = Array(text) }

    mutating func skipSpaces() { while index < characters.count, characters[index].isWhitespace { index += 1 } }

    mutating func take(_ token: String) -> Bool {
        skipSpaces()
        let token = Array(token)
        guard index + token.count <= characters.count, Array(characters[index..<index + token.count]) == token else { return false }
        index += token.count
        return true
    }

    mutating func expectEnd() throws(VariantQualifier.Problem) {
        skipSpaces()
        guard index >= characters.count else {
            throw VariantQualifier.Problem(message: "unexpected \"\(characters[index])\"", column: index + 1)
        }
    }

    mutating func expression() throws(VariantQualifier.Problem) -> VariantQualifier {
        var left = try conjunction()
        while take("||") { left = .or(left, try conjunction()) }
        return left
    }

    mutating func conjunction() throws(VariantQualifier.Problem) -> VariantQualifier {
        var left = try unary()
        while take("&&") { left = .and(left, try unary()) }
        return left
    }

    mutating func unary() throws(VariantQualifier.Problem) -> VariantQualifier {
        skipSpaces()
        if index < characters.count, characters[index] == "!", index + 1 >= characters.count || characters[index + 1] != "=" {
            try enterNesting()
            defer { depth -= 1 }
            index += 1
            return .not(try unary())
        }
        if take("(") {
            try enterNesting()
            defer { depth -= 1 }
            let inner = try expression()
            guard take(")") else { throw VariantQualifier.Problem(message: "expected )", column: index + 1) }
            return inner
        }
        return try comparison()
    }

    /// One more level of `(` or `!`, within `maximumDepth`.
    private mutating func enterNesting() throws(VariantQualifier.Problem) {
        guard depth < Self.maximumDepth else {
            throw VariantQualifier.Problem(message: "nested more than \(Self.maximumDepth) deep", column: index + 1)
        }
        depth += 1
    }

    mutating func comparison() throws(VariantQualifier.Problem) -> VariantQualifier {
        skipSpaces()
        comparisons += 1
        guard comparisons <= Self.maximumComparisons else {
            throw VariantQualifier.Problem(message: "more than \(Self.maximumComparisons) comparisons", column: index + 1)
        }
        let fieldStart = index
        let name = word()
        guard !name.isEmpty else {
            throw VariantQualifier.Problem(message: index < characters.count ? "expected a field name" : "the expression ends too soon",
                                           column: fieldStart + 1)
        }
        guard let field = VariantQualifier.Field.named(name) else {
            throw VariantQualifier.Problem(message: "unknown field \(name); fields: "
                                           + VariantQualifier.Field.allCases.map(\.rawValue).joined(separator: ", "), column: fieldStart + 1)
        }
        skipSpaces()
        let opStart = index
        // Longest operators first, so <= is not read as <.
        guard let op = VariantQualifier.Operator.allCases.sorted(by: { $0.rawValue.count > $1.rawValue.count })
            .first(where: { take($0.rawValue) }) else {
            throw VariantQualifier.Problem(message: "expected ==, !=, <, <=, > or >=", column: opStart + 1)
        }
        skipSpaces()
        let valueStart = index
        var value: String
        if index < characters.count, characters[index] == "\"" || characters[index] == "'" {
            let quote = characters[index]
            guard let close = characters[(index + 1)...].firstIndex(of: quote) else {
                throw VariantQualifier.Problem(message: "unterminated string", column: valueStart + 1)
            }
            value = String(characters[(index + 1)..<close])
            index = close + 1
        } else {
            value = word()
        }
        guard !value.isEmpty else { throw VariantQualifier.Problem(message: "expected a value", column: valueStart + 1) }
        // Check the literal fits the field, so typos fail here rather than match nothing.
        switch field {
        case .peakBitRate, .averageBitRate, .frameRate, .height, .width, .audioChannels:
            guard Double(value) != nil else { throw VariantQualifier.Problem(message: "\(field.rawValue) needs a number", column: valueStart + 1) }
        case .resolution:
            guard Resolution(value) != nil else { throw VariantQualifier.Problem(message: "resolution needs WIDTHxHEIGHT", column: valueStart + 1) }
        case .videoRange:
            guard VideoRange(rawValue: value.uppercased()) != nil else {
                throw VariantQualifier.Problem(message: "videoRange is SDR, HLG or PQ", column: valueStart + 1)
            }
        default:
            guard op == .equal || op == .notEqual else {
                throw VariantQualifier.Problem(message: "\(field.rawValue) compares with == or != only", column: opStart + 1)
            }
        }
        return .compare(field, op, value)
    }

    mutating func word() -> String {
        let start = index
        while index < characters.count, characters[index].isLetter || characters[index].isNumber || "._-/".contains(characters[index]) {
            index += 1
        }
        return String(characters[start..<index])
    }
}
