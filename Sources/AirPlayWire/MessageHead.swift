import NIOCore

/// The protocol named on a request or status line: `HTTP/1.1`, `HTTP/1.0`, `RTSP/1.0`, `PTTH/1.0`.
///
/// AirPlay speaks HTTP (video, info) and RTSP (RAOP audio) on the same TCP port; a reply
/// always carries the protocol of the request it answers.
public struct ProtocolVersion: Hashable, Sendable, CustomStringConvertible {
    /// `HTTP`, `RTSP` or `PTTH` (the reverse-HTTP upgrade of the event channel).
    public var name: String
    /// Major version digit.
    public var major: Int
    /// Minor version digit.
    public var minor: Int

    /// A version from its parts.
    public init(name: String, major: Int, minor: Int) {
        self.name = name
        self.major = major
        self.minor = minor
    }

    /// `HTTP/1.1`.
    public static let http11 = ProtocolVersion(name: "HTTP", major: 1, minor: 1)
    /// `HTTP/1.0`.
    public static let http10 = ProtocolVersion(name: "HTTP", major: 1, minor: 0)
    /// `RTSP/1.0`.
    public static let rtsp10 = ProtocolVersion(name: "RTSP", major: 1, minor: 0)
    /// `PTTH/1.0`, the reverse HTTP protocol of the `/reverse` event channel.
    public static let ptth10 = ProtocolVersion(name: "PTTH", major: 1, minor: 0)

    /// `EVENT/1.0`, which an iPhone answers the event channel's requests with (a reply's
    /// protocol only; never a request's).
    public static let event10 = ProtocolVersion(name: "EVENT", major: 1, minor: 0)

    /// True for RTSP.
    public var isRTSP: Bool { name == "RTSP" }

    /// The wire form, e.g. `RTSP/1.0`.
    public var description: String { "\(name)/\(major).\(minor)" }

    /// Parses `NAME/M.N` where NAME is HTTP, RTSP, PTTH or EVENT and M, N are single digits.
    public init?(parsing text: Substring) {
        guard let slash = text.firstIndex(of: "/") else { return nil }
        let name = text[..<slash]
        let digits = Array(text[text.index(after: slash)...])
        guard ["HTTP", "RTSP", "PTTH", "EVENT"].contains(String(name)), digits.count == 3, digits[1] == ".",
              let major = digits[0].wholeNumberValue, let minor = digits[2].wholeNumberValue,
              digits[0].isASCII, digits[2].isASCII
        else { return nil }
        self.init(name: String(name), major: major, minor: minor)
    }
}

/// Header fields in arrival order with case-insensitive lookup (names keep their spelling).
public struct MessageHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields in order.
    public private(set) var fields: [HeaderField]

    /// One `Name: value` field.
    public struct HeaderField: Hashable, Sendable {
        /// The field name as received or written.
        public var name: String
        /// The field value without surrounding whitespace.
        public var value: String
    }

    /// No fields.
    public init() { fields = [] }

    /// Fields from name/value pairs, in order.
    public init(_ pairs: [(String, String)]) { fields = pairs.map { HeaderField(name: $0.0, value: $0.1) } }

    /// Fields from a literal, in order.
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of a field (case-insensitive name).
    public subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// All values of a field (case-insensitive name).
    public func values(of name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Appends a field.
    public mutating func add(name: String, value: String) { fields.append(HeaderField(name: name, value: value)) }

    /// Replaces every field of this name with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field of this name.
    public mutating func remove(name: String) {
        fields.removeAll { Self.sameName($0.name, name) }
    }

    /// Field names compared as HTTP does, ASCII letters without case (names are tokens), and
    /// without making lower-case copies: every request looks up several fields.
    static func sameName(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.utf8, b.utf8)
        guard x.count == y.count else { return false }
        for (p, q) in zip(x, y) where p != q {
            let folded = p | 0x20
            guard folded == q | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
        }
        return true
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[HeaderField]> { fields.makeIterator() }
}

/// A request read from the control port: HTTP or RTSP, with its whole body.
public struct AirPlayRequest: Hashable, Sendable {
    /// The method as sent (`GET`, `POST`, `ANNOUNCE`, `SET_PARAMETER`, …); methods are case-sensitive.
    public var method: String
    /// The request target as sent (`/server-info`, `/scrub?position=3`, `rtsp://…/1234`, `*`).
    public var target: String
    /// The protocol of the request line.
    public var version: ProtocolVersion
    /// The header fields.
    public var headers: MessageHeaders
    /// The body; empty when there is none.
    public var body: ByteBuffer

    /// A request from its parts.
    public init(method: String, target: String, version: ProtocolVersion,
                headers: MessageHeaders = [:], body: ByteBuffer = ByteBuffer()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The path part of the target without the query (for `rtsp://host/x` targets, the path
    /// after the authority). A scheme counts only before the first `/` or `?`, so a URL in a
    /// query (`/play?u=http://x/y`) is not taken for one. Read on every request by every
    /// route, so it scans bytes: a generic substring search here cost a third of the CPU of
    /// a `/playback-info` poll.
    public var path: String {
        let bytes = target.utf8
        let (slash, colon, question) = (UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "?"))
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index != bytes.endIndex, bytes[index] != slash, bytes[index] != question {
            if bytes[index] == colon {
                let afterColon = bytes[bytes.index(after: index)...]
                if afterColon.starts(with: [slash, slash]) {
                    let authority = bytes.index(index, offsetBy: 3)
                    guard let pathStart = bytes[authority...].firstIndex(of: slash) else { return "/" }
                    start = pathStart
                }
                break
            }
            index = bytes.index(after: index)
        }
        let end = bytes[start...].firstIndex(of: question) ?? bytes.endIndex
        return String(target[start..<end])
    }

    /// The query items of the target (`?position=3&x`), percent-decoding left to the caller.
    public var queryItems: [(name: String, value: String)] {
        guard let query = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: query)...].split(separator: "&").map { item in
            guard let equals = item.firstIndex(of: "=") else { return (name: String(item), value: "") }
            return (name: String(item[..<equals]), value: String(item[item.index(after: equals)...]))
        }
    }

    /// The `CSeq` header, which every RTSP reply must echo.
    public var cseq: String? { headers["CSeq"] }
}

/// A response written to the control port (or read by a sender).
public struct AirPlayResponse: Hashable, Sendable {
    /// The protocol of the status line; the one of the request it answers.
    public var version: ProtocolVersion
    /// The status code.
    public var status: Int
    /// The reason phrase.
    public var reason: String
    /// The header fields; `Content-Length` is added by the encoder.
    public var headers: MessageHeaders
    /// The body.
    public var body: ByteBuffer

    /// A response from its parts; the reason defaults to the standard phrase of the status.
    public init(version: ProtocolVersion = .http11, status: Int, reason: String? = nil,
                headers: MessageHeaders = [:], body: ByteBuffer = ByteBuffer()) {
        self.version = version
        self.status = status
        self.reason = reason ?? StatusReason.phrase(for: status)
        self.headers = headers
        self.body = body
    }
}

/// Standard reason phrases for the status codes AirPlay uses (HTTP and RTSP).
public enum StatusReason {
    /// The phrase for a status code, `Unknown` for codes not listed.
    public static func phrase(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Payload Too Large"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 422: "Unprocessable Entity"
        case 431: "Request Header Fields Too Large"
        case 451: "Parameter Not Understood"
        case 453: "Not Enough Bandwidth"
        case 454: "Session Not Found"
        case 455: "Method Not Valid in This State"
        case 461: "Unsupported Transport"
        case 470: "Connection Authorization Required"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 505: "Version Not Supported"
        default: "Unknown"
        }
    }
}
