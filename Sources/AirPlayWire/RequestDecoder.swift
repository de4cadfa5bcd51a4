import NIOCore

/// What the request decoder hands on: a whole request, or a rejection to answer with.
public enum InboundRequest: Hashable, Sendable {
    /// A well-formed request with its whole body.
    case request(AirPlayRequest)
    /// A request that cannot be served; answer it with the rejection's status and go on.
    case rejected(RequestRejection)
}

/// Why a request was refused before it reached a handler, and how to answer.
public struct RequestRejection: Hashable, Sendable, Error, CustomStringConvertible {
    /// The status to answer with (400, 411, 413, 431, 505).
    public var status: Int
    /// A human-readable reason, sent as the body.
    public var reason: String
    /// The protocol to answer with (the request's when it could be read).
    public var version: ProtocolVersion
    /// The request's CSeq when it could be read, echoed for RTSP.
    public var cseq: String?
    /// True when the stream cannot be resynchronised and the connection must close after the answer.
    public var closesConnection: Bool

    /// A rejection from its parts.
    public init(status: Int, reason: String, version: ProtocolVersion = .http11,
                cseq: String? = nil, closesConnection: Bool = false) {
        self.status = status
        self.reason = reason
        self.version = version
        self.cseq = cseq
        self.closesConnection = closesConnection
    }

    /// `431 reason`, for logs.
    public var description: String { "\(status) \(reason)" }
}

/// Size limits for requests from the network; every byte from a peer is bounded.
public struct RequestLimits: Hashable, Sendable {
    /// Largest request line plus headers, in bytes (431 beyond).
    public var maxHeadBytes: Int
    /// Most header fields in one request (431 beyond).
    public var maxHeaderCount: Int
    /// Largest body, in bytes (413 beyond).
    public var maxBodyBytes: Int
    /// Larger limits for a few `POST` paths (a phone's `/action` carries a whole playlist).
    public var largerBodies: [String: Int]

    /// Limits from their parts.
    public init(maxHeadBytes: Int = 16 * 1024, maxHeaderCount: Int = 64, maxBodyBytes: Int = 1024 * 1024,
                largerBodies: [String: Int] = [:]) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
        self.largerBodies = largerBodies
    }

    /// The body limit of a request: its path's larger one, if it has one, for a `POST`.
    public func maxBodyBytes(method: String, target: String) -> Int {
        guard method == "POST", !largerBodies.isEmpty else { return maxBodyBytes }
        let path = target.prefix { $0 != "?" }
        return largerBodies[String(path)].map { max($0, maxBodyBytes) } ?? maxBodyBytes
    }

    /// 16 KiB of head, 64 fields, 1 MiB of body (8 MiB for a `POST /action`, an FCUP answer with
    /// its playlist): enough for artwork and plists, no more.
    public static let `default` = RequestLimits(largerBodies: ["/action": 8 << 20])
}

/// Frames HTTP/1.x and RTSP/1.0 requests on the shared control port.
///
/// Malformed or oversized requests become `.rejected` values rather than errors so the
/// connection stays usable: a bad head is skipped, an oversized body is read and thrown
/// away, and the next well-formed request is served as usual. Only a body of unknown
/// length (`Transfer-Encoding`) forces the connection closed.
public struct AirPlayRequestDecoder: ByteToMessageDecoder {
    /// Decoded messages.
    public typealias InboundOut = InboundRequest

    private enum State {
        case readingHead
        /// Throwing away an oversized head until its blank line; `matched` counts the bytes
        /// of `\r\n\r\n` already seen at the end of what was dropped.
        case skippingHead(matched: Int)
        /// Throwing away the body of a rejected request.
        case skippingBody(remaining: Int)
        /// The stream cannot be resynchronised; drop everything.
        case closed
    }

    private let limits: RequestLimits
    private var state = State.readingHead

    /// A decoder with the given limits.
    public init(limits: RequestLimits = .default) { self.limits = limits }

    /// Decodes as many requests as the buffer holds.
    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let message = next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(message))
        return .continue
    }

    /// At end of stream a partial request is dropped.
    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer,
                                    seenEOF: Bool) throws -> DecodingState {
        while let message = next(from: &buffer) {
            context.fireChannelRead(wrapInboundOut(message))
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }

    /// The next message the buffer completes, consuming its bytes; nil when more bytes are needed.
    /// Public so that senders and tests can frame without a channel.
    public mutating func next(from buffer: inout ByteBuffer) -> InboundRequest? {
        while true {
            switch state {
            case .closed:
                buffer.moveReaderIndex(to: buffer.writerIndex)
                return nil
            case .skippingBody(let remaining):
                let count = min(remaining, buffer.readableBytes)
                buffer.moveReaderIndex(forwardBy: count)
                if count < remaining {
                    state = .skippingBody(remaining: remaining - count)
                    return nil
                }
                state = .readingHead
            case .skippingHead(var matched):
                let terminator: [UInt8] = Array("\r\n\r\n".utf8)
                while let byte = buffer.readInteger(as: UInt8.self) {
                    if byte == terminator[matched] {
                        matched += 1
                        if matched == 4 { break }
                    } else {
                        matched = byte == UInt8(ascii: "\r") ? 1 : 0
                    }
                }
                if matched < 4 {
                    state = .skippingHead(matched: matched)
                    return nil
                }
                state = .readingHead
            case .readingHead:
                skipLeadingLineBreaks(&buffer)
                guard buffer.readableBytes > 0 else { return nil }
                return readRequest(from: &buffer)
            }
        }
    }

    /// RFC 9112 section 2.2: a server should ignore empty lines received before the request line.
    private func skipLeadingLineBreaks(_ buffer: inout ByteBuffer) {
        while let byte = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n") {
            buffer.moveReaderIndex(forwardBy: 1)
        }
    }

    private mutating func readRequest(from buffer: inout ByteBuffer) -> InboundRequest? {
        let window = buffer.readableBytesView.prefix(limits.maxHeadBytes + 4)
        guard let headEnd = Self.findHeadTerminator(in: window) else {
            if buffer.readableBytes > limits.maxHeadBytes {
                state = .skippingHead(matched: 0)
                return .rejected(RequestRejection(
                    status: 431, reason: "request head exceeds \(limits.maxHeadBytes) bytes"))
            }
            return nil
        }
        let headLength = headEnd - buffer.readerIndex
        let headBytes = buffer.getBytes(at: buffer.readerIndex, length: headLength) ?? []
        let bodyStart = headLength + 4
        if headLength > limits.maxHeadBytes {
            buffer.moveReaderIndex(forwardBy: bodyStart)
            return .rejected(RequestRejection(status: 431, reason: "request head exceeds \(limits.maxHeadBytes) bytes"))
        }

        let parsed = RequestHeadParser.parse(headBytes, maxHeaderCount: limits.maxHeaderCount)
        switch parsed {
        case .failure(let rejection):
            buffer.moveReaderIndex(forwardBy: bodyStart)
            // A parsable Content-Length lets us skip the body of a bad request and stay in step.
            if let length = rejection.bodyLength, length > 0 { state = .skippingBody(remaining: length) }
            if rejection.rejection.closesConnection { state = .closed }
            return .rejected(rejection.rejection)
        case .success(let head):
            let limit = limits.maxBodyBytes(method: head.method, target: head.target)
            if head.bodyLength > limit {
                buffer.moveReaderIndex(forwardBy: bodyStart)
                state = .skippingBody(remaining: head.bodyLength)
                return .rejected(RequestRejection(
                    status: 413, reason: "body of \(head.bodyLength) bytes exceeds \(limit)",
                    version: head.version, cseq: head.headers["CSeq"]))
            }
            guard buffer.readableBytes >= bodyStart + head.bodyLength else { return nil }
            buffer.moveReaderIndex(forwardBy: bodyStart)
            let body = buffer.readSlice(length: head.bodyLength) ?? ByteBuffer()
            return .request(AirPlayRequest(method: head.method, target: head.target, version: head.version,
                                           headers: head.headers, body: body))
        }
    }

    /// The absolute index of the first `\r\n\r\n`, if any.
    private static func findHeadTerminator(in bytes: ByteBufferView.SubSequence) -> Int? {
        var index = bytes.startIndex
        let end = bytes.endIndex
        while index + 3 < end {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                return index
            }
            index += 1
        }
        return nil
    }
}

/// Parses a request head (request line and header fields, without the blank line).
enum RequestHeadParser {
    struct Head {
        var method: String
        var target: String
        var version: ProtocolVersion
        var headers: MessageHeaders
        var bodyLength: Int
    }

    struct Failure: Error {
        var rejection: RequestRejection
        var bodyLength: Int?
    }

    static func parse(_ bytes: [UInt8], maxHeaderCount: Int) -> Result<Head, Failure> {
        // Lines end in CRLF; a bare LF is accepted too, as most servers do.
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        guard !lines.isEmpty else {
            return .failure(Failure(rejection: RequestRejection(status: 400, reason: "empty request")))
        }
        let requestLine = lines.removeFirst()

        // Header fields first, so a bad request line can still be answered with the right CSeq
        // and its body skipped.
        var headers = MessageHeaders()
        var headerProblem: String?
        for line in lines {
            guard let text = String(validating: line, as: UTF8.self) else {
                headerProblem = headerProblem ?? "header field is not UTF-8"
                continue
            }
            if text.first == " " || text.first == "\t" {
                headerProblem = headerProblem ?? "folded header lines are not allowed"
                continue
            }
            guard let colon = text.firstIndex(of: ":") else {
                headerProblem = headerProblem ?? "header line without a colon: \(text.prefix(40))"
                continue
            }
            let name = String(text[..<colon])
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                headerProblem = headerProblem ?? "invalid header name: \(name.prefix(40))"
                continue
            }
            let value = text[text.index(after: colon)...].trimmingSpaceAndTab()
            if value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                headerProblem = headerProblem ?? "control character in header \(name)"
                continue
            }
            headers.add(name: name, value: value)
        }
        let cseq = headers["CSeq"]

        var bodyLength: Int? = 0
        var lengthProblem: String?
        var closes = false
        let lengths = Set(headers.values(of: "Content-Length"))
        if lengths.count > 1 {
            lengthProblem = "conflicting Content-Length values"
            bodyLength = nil
            closes = true
        } else if let text = lengths.first {
            if let value = Int(text), value >= 0, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
                bodyLength = value
            } else {
                lengthProblem = "invalid Content-Length: \(text.prefix(20))"
                bodyLength = nil
                closes = true
            }
        }
        if headers["Transfer-Encoding"] != nil {
            lengthProblem = "Transfer-Encoding is not supported; send a Content-Length"
            bodyLength = nil
            closes = true
        }

        // Request line: METHOD SP TARGET SP PROTOCOL/M.N
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        var version = ProtocolVersion.http11
        if let last = parts.last, let text = String(validating: last, as: UTF8.self),
           let parsed = ProtocolVersion(parsing: Substring(text)) {
            version = parsed
        }
        func fail(_ status: Int, _ reason: String, closes: Bool = false) -> Result<Head, Failure> {
            .failure(Failure(rejection: RequestRejection(status: status, reason: reason, version: version,
                                                         cseq: cseq, closesConnection: closes),
                             bodyLength: bodyLength))
        }
        guard parts.count == 3,
              let method = String(validating: parts[0], as: UTF8.self),
              let target = String(validating: parts[1], as: UTF8.self),
              let protocolText = String(validating: parts[2], as: UTF8.self)
        else { return fail(400, "malformed request line") }
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenByte) else { return fail(400, "invalid method") }
        guard !target.isEmpty, target.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            return fail(400, "invalid request target")
        }
        guard let parsedVersion = ProtocolVersion(parsing: Substring(protocolText)) else {
            if protocolText.hasPrefix("HTTP/") || protocolText.hasPrefix("RTSP/") {
                return fail(505, "unsupported protocol version \(protocolText.prefix(16))")
            }
            return fail(400, "unknown protocol \(protocolText.prefix(16))")
        }
        guard parsedVersion.major == 1, parsedVersion.name != "PTTH", parsedVersion.name != "EVENT" else {
            return fail(505, "unsupported protocol version \(protocolText)")
        }
        if let headerProblem { return fail(400, headerProblem) }
        if headers.fields.count > maxHeaderCount {
            return fail(431, "more than \(maxHeaderCount) header fields")
        }
        if let lengthProblem {
            return fail(lengthProblem.hasPrefix("Transfer") ? 411 : 400, lengthProblem, closes: closes)
        }
        return .success(Head(method: method, target: target, version: parsedVersion, headers: headers,
                             bodyLength: bodyLength ?? 0))
    }

    /// RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaceAndTab() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
