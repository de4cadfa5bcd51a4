import Glibc
import Synchronization

/// Sockets systemd bound for airplayd and handed over at start (socket activation: `LISTEN_PID`,
/// `LISTEN_FDS`, descriptors from 3 on). `airplayd-ptp.socket` binds PTP's UDP 319 and 320 this
/// way, so the daemon needs no capability to follow PTP clocks: the privileged ports are bound
/// by systemd, and the sandbox can drop `CAP_NET_BIND_SERVICE` and map no other user.
public enum InheritedSockets {
    private static let available = Mutex<[Int32]>(adoptFromEnvironment())

    /// Takes the handed-over descriptors (once; later calls return the same count): marks them
    /// close-on-exec, so child processes do not hold PTP's ports, and clears the variables, so
    /// children do not think the descriptors theirs. Returns how many there are.
    @discardableResult
    public static func adopt() -> Int { available.withLock { $0.count } }

    /// The handed-over socket of `family` (`AF_INET`, `AF_INET6`) and `type` bound to `port`,
    /// if systemd passed one; each is given out once.
    static func take(port: UInt16, family: Int32, type: Int32 = Int32(SOCK_DGRAM.rawValue)) -> Int32? {
        available.withLock { descriptors in
            guard let index = descriptors.firstIndex(where: { matches($0, port: port, family: family, type: type) }) else { return nil }
            return descriptors.remove(at: index)
        }
    }

    private static func adoptFromEnvironment() -> [Int32] {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = getenv("LISTEN_PID").flatMap({ Int32(String(cString: $0)) }), pid == getpid(),
              let count = getenv("LISTEN_FDS").flatMap({ Int32(String(cString: $0)) }), count > 0, count <= 64 else { return [] }
        let descriptors = Array(3..<(3 + count))
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return descriptors
    }

    private static func matches(_ descriptor: Int32, port: UInt16, family: Int32, type: Int32) -> Bool {
        var socketType: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &socketType, &length) == 0, socketType == type else { return false }
        var name = sockaddr_storage()
        var nameLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &nameLength) }
        }
        guard named == 0, Int32(name.ss_family) == family else { return false }
        let bound: UInt16 = withUnsafePointer(to: &name) { pointer in
            family == AF_INET6
                ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
                : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return bound == port
    }
}
