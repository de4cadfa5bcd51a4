import AirPlayReceiver
import FoundationEssentials
import Glibc

/// A name reserved on this host for as long as the process lives, so that two airplayd
/// instances never publish the same device id or pairing identity.
///
/// The reservation is an abstract Unix socket bound to `airplayd/<kind>/<value>`. Binding an
/// abstract name is exclusive within a network namespace, needs no shared writable directory
/// (each instance runs as its own sandboxed dynamic user), and the kernel frees it the moment
/// its holder exits, even after `kill -9`: a stale lock is impossible. The namespace is also
/// exactly where uniqueness matters, since mDNS records are seen per network.
public final class HostReservation: Sendable {
    /// What a reservation attempt found.
    public enum Outcome: Sendable {
        /// The name is ours until the reservation is released.
        case reserved(HostReservation)
        /// Another live process holds the name.
        case heldElsewhere
        /// The name could not be checked (the sandbox refused the socket): the errno.
        case unavailable(Int32)
    }

    /// The reserved name (without the leading NUL of the abstract namespace).
    public let name: String
    private let descriptor: Int32

    private init(name: String, descriptor: Int32) {
        self.name = name
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The name for a kind of identity and its value, e.g. `airplayd/device-id/02FC00000001`.
    public static func name(kind: String, value: String) -> String { "airplayd/\(kind)/\(value)" }

    /// Tries to reserve `name` (at most 100 bytes) for this process.
    public static func reserve(_ name: String) -> Outcome {
        let bytes = Array(name.utf8)
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count + 1 <= capacity else { return .unavailable(ENAMETOOLONG) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .unavailable(errno) }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0  // a leading NUL puts the name in the abstract namespace
            for (index, byte) in bytes.enumerated() { path[index + 1] = byte }
        }
        // The abstract name's length is given by the address length, not a terminator.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            return code == EADDRINUSE ? .heldElsewhere : .unavailable(code)
        }
        return .reserved(HostReservation(name: name, descriptor: descriptor))
    }
}

/// An exclusive `flock` on `STATE_DIR/airplayd.lock`, held for the process's life: two daemons
/// given one state directory would share its device id and pairings, so the second refuses to start.
public final class StateDirectoryLock: Sendable {
    /// The lock file.
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Why the directory could not be locked.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Another live process holds the lock.
        case inUse(path: String)
        /// The file could not be opened (errno).
        case cannotOpen(path: String, errno: Int32)

        /// What to tell the user.
        public var description: String {
            switch self {
            case .inUse(let path):
                "is in use by another running airplayd (\(path) is locked); give each instance its own state_dir"
            case .cannotOpen(let path, let code):
                "cannot open \(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// Locks `directory` (creating it and its parents, mode 0700, when missing).
    public static func lock(_ directory: String) throws(Failure) -> StateDirectoryLock {
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = base + "/airplayd.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { throw .inUse(path: path) }
            throw .cannotOpen(path: path, errno: code)
        }
        return StateDirectoryLock(path: path, descriptor: descriptor)
    }
}
