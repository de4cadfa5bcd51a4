import Glibc

/// Replaces a small file so that a crash at any moment leaves the old contents or the new,
/// never a mix: write a temporary file beside it (mode 0600), fsync it, rename it over the
/// old one, fsync the directory.
public enum AtomicFile {
    /// Why a file could not be written or read.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What failed, with the system's reason.
        public let description: String
    }

    /// Writes `bytes` to `path` atomically and durably, readable by the owner only.
    public static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let temporary = "\(path).tmp.\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("cannot create \(temporary)") }
        // root editing a service's state (`airplayd pairings` beside systemd's DynamicUser):
        // the file stays the directory owner's, or the daemon could no longer read it.
        var owner = stat()
        if geteuid() == 0, stat(directory.isEmpty ? "." : directory, &owner) == 0, owner.st_uid != 0 {
            _ = fchown(descriptor, owner.st_uid, owner.st_gid)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let error = failure("cannot write \(temporary)")
                close(descriptor)
                unlink(temporary)
                throw error
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let error = failure("cannot sync \(temporary)")
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let error = failure("cannot replace \(path)")
            unlink(temporary)
            throw error
        }
        let directoryDescriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            // The rename itself is durable only once the directory is.
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    /// Runs `body` holding an exclusive `flock` on `path` (made if absent): read-modify-write
    /// cycles of two processes (the daemon and `airplayd pairings`) then cannot interleave.
    public static func withLock<T>(_ path: String, _ body: () throws -> T) rethrows -> T {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if descriptor >= 0 { _ = flock(descriptor, LOCK_EX) }
        defer {
            if descriptor >= 0 {
                _ = flock(descriptor, LOCK_UN)
                close(descriptor)
            }
        }
        return try body()
    }

    /// The file's bytes (at most `limit`), or nil when it does not exist.
    public static func read(_ path: String, limit: Int = 1 << 20) throws(Failure) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("cannot open \(path)")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure("cannot read \(path)") }
            if count == 0 { return bytes }
            bytes += chunk.prefix(count)
            guard bytes.count <= limit else { throw Failure(description: "\(path) is larger than \(limit) bytes") }
        }
    }

    private static func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(errno)))")
    }
}
