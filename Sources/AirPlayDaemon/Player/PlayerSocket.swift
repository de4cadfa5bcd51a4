import Glibc

/// One end of the socket pair between airplayd and a helper process (the video player, the
/// audio decoder): datagrams (`SOCK_SEQPACKET`), so a message is never split or merged, and a
/// closed end reads as the end. Sending never raises SIGPIPE (a dead child must not take the
/// daemon with it).
struct PlayerSocket: Sendable {
    /// The descriptor.
    let fd: Int32

    /// What waiting for a datagram gave.
    enum Received: Equatable, Sendable {
        case datagram([UInt8])
        /// The other end is gone.
        case closed
        /// Nothing came in time.
        case timedOut
    }

    /// A connected pair, both ends closed on exec (the child's end is passed on explicitly).
    static func pair() -> (PlayerSocket, PlayerSocket)? {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else { return nil }
        return (PlayerSocket(fd: fds[0]), PlayerSocket(fd: fds[1]))
    }

    /// Sends one message; false when the other end is gone.
    @discardableResult
    func send(_ message: PlayerMessage) -> Bool {
        let bytes = message.bytes
        return bytes.count <= PlayerMessage.maximumBytes && send(bytes: bytes)
    }

    /// Sends one datagram; false when the other end is gone.
    func send(bytes: [UInt8]) -> Bool {
        while true {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent >= 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// The next message, waiting for it; nil once the other end is gone. Malformed datagrams
    /// are skipped.
    func receive() -> PlayerMessage? {
        while true {
            guard case .datagram(let bytes) = receive(maximumBytes: PlayerMessage.maximumBytes, timeout: nil) else { return nil }
            if let message = PlayerMessage(bytes: bytes) { return message }
        }
    }

    /// The next datagram of at most `maximumBytes` (a longer one is cut there), waiting at most
    /// `timeout` seconds (nil: for as long as it takes).
    func receive(maximumBytes: Int, timeout: Double?) -> Received {
        if let timeout {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(0, min(timeout, 3600)) * 1000)
            while true {
                let ready = poll(&poller, 1, milliseconds)
                if ready == 0 { return .timedOut }
                if ready > 0 { break }
                if errno != EINTR { return .closed }
            }
        }
        var buffer = [UInt8](repeating: 0, count: maximumBytes)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return .datagram(Array(buffer.prefix(count))) }
            if count == 0 || errno != EINTR { return .closed }
        }
    }

    /// Closes this end.
    func close() { _ = Glibc.close(fd) }
}
