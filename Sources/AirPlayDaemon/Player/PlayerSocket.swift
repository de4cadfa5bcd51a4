import Glibc

/// One end of the socket pair between airplayd and its video player process: datagrams
/// (`SOCK_SEQPACKET`), so a message is never split or merged, and a closed end reads as the
/// end. Sending never raises SIGPIPE (a dead child must not take the daemon with it).
struct PlayerSocket: Sendable {
    /// The descriptor.
    let fd: Int32

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
        guard bytes.count <= PlayerMessage.maximumBytes else { return false }
        while true {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent >= 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// The next message, waiting for it; nil once the other end is gone. Malformed datagrams
    /// are skipped.
    func receive() -> PlayerMessage? {
        var buffer = [UInt8](repeating: 0, count: PlayerMessage.maximumBytes)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EINTR) { return nil }
            if count > 0, let message = PlayerMessage(bytes: Array(buffer.prefix(count))) { return message }
        }
    }

    /// Closes this end.
    func close() { _ = Glibc.close(fd) }
}
