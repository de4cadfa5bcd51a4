import AirPlayReceiver
import FoundationEssentials
import Glibc

/// Talks to systemd through `$NOTIFY_SOCKET` (the sd_notify protocol: one datagram of
/// `KEY=value` lines on a Unix socket). Does nothing when not started by systemd.
public struct SystemdNotifier: Sendable {
    private let socketPath: String?

    /// A notifier for the socket named in the environment.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// True when systemd (or a test) listens.
    public var isActive: Bool { socketPath != nil }

    /// Sends `READY=1` and a status line.
    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// Sends a `STATUS=` line.
    public func status(_ text: String) { send("STATUS=\(text)") }

    /// Sends `STOPPING=1`.
    public func stopping() { send("STOPPING=1\nSTATUS=Stopping") }

    /// Sends `WATCHDOG=1`.
    public func watchdog() { send("WATCHDOG=1") }

    /// The watchdog ping interval (half of `WATCHDOG_USEC`), when the watchdog is on for this process.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], let value = Int32(pid), value != getpid() { return nil }
        return .microseconds(Int64(microseconds / 2))
    }

    /// Sends one datagram; errors are ignored, as sd_notify does.
    public func send(_ message: String) {
        guard let socketPath else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        // A leading '@' names an abstract socket: the name starts with a NUL byte.
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let bytes = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
    }
}
