import AirPlayMedia
import AirPlayReceiver
import Glibc

/// Runs a program and collects its standard output, with a deadline: the media probe's child.
/// (posix_spawn, not Foundation's `Process`, which would pull all of Foundation into the daemon.)
package enum ChildProcess {
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
