/// A `text/parameters` body: one `name: value` line each (RAOP's SET_PARAMETER `volume` and
/// `progress` and GET_PARAMETER's answer, a `/play` body's `Content-Location`, `/scrub`'s
/// answer), or bare names (what GET_PARAMETER asks for). One codec both ways: lines end in CRLF
/// when written; any line end, and spaces around the colon, are taken when read.
public struct TextParameters: Hashable, Sendable {
    /// One line: a name and its value (nil for a bare name).
    public struct Line: Hashable, Sendable {
        /// The parameter's name, as written (`volume`).
        public var name: String
        /// Its value (`-15.000000`), nil when the line is the name alone.
        public var value: String?

        /// A line.
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The body's `Content-Type`.
    public static let contentType = "text/parameters"

    /// The lines, in order.
    public var lines: [Line]

    /// A body of these lines.
    public init(_ lines: [Line]) { self.lines = lines }

    /// `volume: D` in AirPlay dB (-30…0, -144 mutes), six places as iTunes writes it.
    public static func volume(decibels: Double) -> TextParameters {
        TextParameters([Line(name: "volume", value: TextFormatting.fixed(decibels))])
    }

    /// `progress: start/current/end` in RTP time.
    public static func progress(start: UInt32, current: UInt32, end: UInt32) -> TextParameters {
        TextParameters([Line(name: "progress", value: "\(start)/\(current)/\(end)")])
    }

    /// GET_PARAMETER's question: the names alone.
    public static func asking(_ names: String...) -> TextParameters {
        TextParameters(names.map { Line(name: $0, value: nil) })
    }

    /// Reads a body; empty lines are skipped, and a line without a colon is a bare name.
    public init(parsing bytes: [UInt8]) {
        lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { text in
            guard let colon = text.firstIndex(of: ":") else {
                let name = text.trimmingWhitespace()
                return name.isEmpty ? nil : Line(name: name, value: nil)
            }
            return Line(name: text[..<colon].trimmingWhitespace(), value: text[text.index(after: colon)...].trimmingWhitespace())
        }
    }

    /// The body's bytes: each line and CRLF.
    public var encoded: [UInt8] {
        Array(lines.map { line in (line.value.map { "\(line.name): \($0)" } ?? line.name) + "\r\n" }.joined().utf8)
    }

    /// The value of a parameter, its name in any case (the last line wins, as a header would).
    public subscript(name: String) -> String? {
        lines.last { $0.name.lowercased() == name.lowercased() }?.value ?? nil
    }
}
