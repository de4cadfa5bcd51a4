import AirPlayMedia
import AirPlayReceiver
import Glibc
import LinuxIO

/// airplayd's child processes: the media probe (a program's standard output, with a deadline)
/// and the helpers that decode untrusted media (`helper`: the video player, the audio
/// decoder). posix_spawn, not Foundation's `Process`, which would pull all of Foundation into
/// the daemon.
package enum ChildProcess {
    /// The descriptor a helper gets its socket on.
    static let helperSocket: Int32 = 3

    /// Starts `executable argument` (the daemon's own binary in a helper's role) on a fresh
    /// socket pair, the child's end as its descriptor 3; our end and its pid, or why it could
    /// not start. A crash there ends at once: Swift's backtracer would keep a dying helper
    /// hanging for seconds while it symbolicates.
    static func helper(_ executable: String, _ argument: String) throws(MediaError) -> (socket: PlayerSocket, pid: pid_t) {
        guard let (ours, theirs) = PlayerSocket.pair() else {
            throw MediaError(code: -1, domain: "airplayd.child", message: "cannot make a socket pair: errno \(errno)")
        }
        let spawned = spawn(executable, argument, socket: theirs)
        theirs.close()
        guard spawned > 0 else {
            ours.close()
            throw MediaError(code: -1, domain: "airplayd.child", message: "cannot start \(argument): errno \(-spawned)")
        }
        return (ours, spawned)
    }

    /// posix_spawn with `socket` as descriptor 3 and backtraces off: the pid, or minus errno.
    private static func spawn(_ executable: String, _ argument: String, socket: PlayerSocket) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy.
        posix_spawn_file_actions_adddup2(&actions, socket.fd, helperSocket)
        let words: [String] = [executable, argument]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment = [String]()
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if !text.hasPrefix("SWIFT_BACKTRACE=") { environment.append(text) }
            entry += 1
        }
        environment.append("SWIFT_BACKTRACE=enable=no")
        let envp = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        return spawned == 0 ? pid : -spawned
    }

    /// Waits for child `pid` to end; how it ended, for the log.
    static func reap(_ pid: pid_t) -> String {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS, spelled out (the macros do not import).
        return status & 0x7F != 0 ? "killed by signal \(status & 0x7F)" : "exited with status \((status >> 8) & 0xFF)"
    }

    /// The child's standard output when it exits with status 0 within `timeout` seconds and
    /// writes at most `limit` bytes; nil otherwise (a late child is killed). Standard error is
    /// discarded.
    package static func output(of path: String, arguments: [String], timeout: Double, limit: Int = 1 << 20) -> [UInt8]? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        // Only the child's standard output may hold the write end, or EOF never comes.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(writeEnd)
        guard spawned == 0 else { return nil }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = Self.now() + timeout
        var finished = false
        while !finished, output.count <= limit {
            let remaining = deadline - Self.now()
            guard remaining > 0 else { break }
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(min(remaining, 1) * 1000) + 1) >= 0 || errno == EINTR else { break }
            guard poller.revents != 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress!, $0.count) }
            if count > 0 { output += chunk.prefix(count) } else if count == 0 || errno != EINTR { finished = true }
        }
        if !finished || output.count > limit { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED && WEXITSTATUS == 0, spelled out (the macros do not import).
        guard finished, output.count <= limit, status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        return output
    }

    private static func now() -> Double { SystemClock().now() }
}
