import NIOCore

/// Reads responses on a sender's connection: status line, headers, `Content-Length` body.
///
/// Bounded like the server side: a head over `maxHeadBytes` or a body over `maxBodyBytes`
/// is a protocol error, since a sender has no reason to accept unbounded replies.
public struct AirPlayResponseDecoder: Sendable {
    /// Why a response could not be read.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// What was wrong.
        public var description: String
    }

    private let limits: RequestLimits

    /// A decoder with limits (the body limit is raised for replies: artwork, plists).
    public init(limits: RequestLimits = RequestLimits(maxHeadBytes: 16 * 1024, maxHeaderCount: 64, maxBodyBytes: 8 * 1024 * 1024)) {
        self.limits = limits
    }

    /// The next complete response in the buffer, consuming it; nil when more bytes are needed.
    public func next(from buffer: inout ByteBuffer) throws(Failure) -> AirPlayResponse? {
        let view = buffer.readableBytesView
        guard let end = Self.headEnd(view.prefix(limits.maxHeadBytes + 4)) else {
            if buffer.readableBytes > limits.maxHeadBytes { throw Failure(description: "response head too large") }
            return nil
        }
        let headLength = end - buffer.readerIndex
        guard let head = buffer.getString(at: buffer.readerIndex, length: headLength) else {
            throw Failure(description: "unreadable response head")
        }
        var lines = head.replacingCRLF().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let version = ProtocolVersion(parsing: parts[0]), let status = Int(parts[1]) else {
            throw Failure(description: "malformed status line: \(statusLine.prefix(80))")
        }
        var headers = MessageHeaders()
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Failure(description: "malformed header line") }
            headers.add(name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingSpaceAndTab())
        }
        let length = Int(headers["Content-Length"] ?? "0") ?? -1
        guard length >= 0, length <= limits.maxBodyBytes else { throw Failure(description: "bad or oversized Content-Length") }
        guard buffer.readableBytes >= headLength + 4 + length else { return nil }
        buffer.moveReaderIndex(forwardBy: headLength + 4)
        let body = buffer.readSlice(length: length) ?? ByteBuffer()
        let reason = parts.count == 3 ? String(parts[2]) : StatusReason.phrase(for: status)
        return AirPlayResponse(version: version, status: status, reason: reason, headers: headers, body: body)
    }

    private static func headEnd(_ bytes: ByteBufferView.SubSequence) -> Int? {
        var index = bytes.startIndex
        while index + 3 < bytes.endIndex {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }
}

/// Writes requests (a sender's calls, and the receiver's `POST /event` on a reverse channel).
public enum AirPlayRequestEncoder {
    /// Serialises a request with its `Content-Length`.
    public static func write(_ request: AirPlayRequest, into out: inout ByteBuffer) {
        out.writeString("\(request.method) \(request.target) \(request.version)\r\n")
        for field in request.headers where field.name.lowercased() != "content-length" {
            out.writeString("\(field.name): \(field.value)\r\n")
        }
        if request.body.readableBytes > 0 || ["POST", "PUT"].contains(request.method) {
            out.writeString("Content-Length: \(request.body.readableBytes)\r\n")
        }
        out.writeString("\r\n")
        var body = request.body
        out.writeBuffer(&body)
    }
}

extension String {
    fileprivate func replacingCRLF() -> String {
        var result = ""
        result.reserveCapacity(utf8.count)
        for scalar in unicodeScalars where scalar != "\r" { result.unicodeScalars.append(scalar) }
        return result
    }
}
