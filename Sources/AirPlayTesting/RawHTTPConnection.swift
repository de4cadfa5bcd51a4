import Foundation

/// A blocking TCP connection for tests that speak HTTP/RTSP byte by byte: requests in,
/// responses (or, on a reverse channel, requests) out, every read bounded in time.
public final class RawHTTPConnection: @unchecked Sendable {
    /// One message read from the connection.
    public struct Message: Sendable {
        /// The first line (`HTTP/1.1 200 OK` or `POST /event HTTP/1.1`).
        public var startLine: String
        /// Header fields, lower-cased names.
        public var headers: [String: String]
        /// The body.
        public var body: [UInt8]

        /// The status code of a response line.
        public var status: Int? { startLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
        /// The body as text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:port.
    public init(port: Int, host: String = "127.0.0.1") throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(descriptor)
            throw TestHostError("cannot connect to \(host):\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// Sends bytes.
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends bytes.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw TestHostError("send failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Sends a request with an optional body and reads the response.
    public func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = [],
                        protocolName: String = "HTTP/1.1", timeout: Double = 10) throws -> Message {
        var head = "\(method) \(target) \(protocolName)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
        return try readMessage(timeout: timeout)
    }

    /// Reads one message (head plus Content-Length body); throws on time-out or close.
    public func readMessage(timeout: Double) throws -> Message {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = findHeadEnd() {
                let headText = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = headText.components(separatedBy: "\r\n")
                let startLine = lines.removeFirst()
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                let total = end + 4 + length
                if buffer.count >= total {
                    let body = Array(buffer[(end + 4)..<total])
                    buffer.removeFirst(total)
                    return Message(startLine: startLine, headers: headers, body: body)
                }
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw TestHostError("timed out waiting for a message") }
            try receive(timeout: remaining)
        }
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4) where buffer[index] == 13 && buffer[index + 1] == 10
            && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Waits until the peer closes the connection (after reading anything it still sends);
    /// false when it is still open after `timeout` seconds.
    public func waitForClose(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            do {
                try receive(timeout: deadline.timeIntervalSinceNow)
            } catch let error as TestHostError where error.description.contains("closed") {
                return true
            } catch {
                return false
            }
        }
        return false
    }

    private func receive(timeout: Double) throws {
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pollDescriptor, 1, Int32(max(1, timeout * 1000)))
        guard ready > 0 else { throw TestHostError("timed out waiting for data") }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { throw TestHostError("connection closed by peer") }
        buffer.append(contentsOf: chunk[..<count])
    }
}
