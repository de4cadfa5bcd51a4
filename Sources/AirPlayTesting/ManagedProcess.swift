import Foundation

/// A child process for integration tests: output goes to files (no pipe can fill up and
/// stall it), and every wait is bounded in time.
public final class ManagedProcess: @unchecked Sendable {
    /// Where stdout goes.
    public let stdoutPath: String
    /// Where stderr goes.
    public let stderrPath: String
    /// A label for messages.
    public let label: String
    /// The process id.
    public let pid: pid_t

    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with arguments and extra environment; output lands in `directory`.
    ///
    /// Uses posix_spawn and waitpid directly: the test owns the child's whole life and never
    /// depends on another thread noticing that it ended.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                directory: String, label: String) throws {
        self.label = label
        let safe = label.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: " ", with: "_")
        let stamp = UUID().uuidString.prefix(8)
        stdoutPath = "\(directory)/\(safe)-\(stamp).out"
        stderrPath = "\(directory)/\(safe)-\(stamp).err"
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Children start with default signal handling even if the test runner blocks some signals.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TestHostError("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
        CleanupAtExit.register(process: child)
    }

    /// True while it runs.
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// Everything written to stdout so far.
    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// Everything written to stderr so far.
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends a signal (ignored once the process has been reaped).
    public func signal(_ number: Int32) {
        lock.withLock { if exitStatus == nil { _ = kill(pid, number) } }
    }

    /// Waits for the exit, at most `timeout` seconds; returns the exit status, nil on time-out.
    /// A death by signal N is reported as 128 + N, as shells do.
    @discardableResult
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = reap(blocking: false) { return status }
            usleep(5_000)
        }
        return reap(blocking: false)
    }

    private func reap(blocking: Bool) -> Int32? {
        lock.withLock {
            if let exitStatus { return exitStatus }
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
            guard result == pid else { return nil }
            let signal = raw & 0x7F
            exitStatus = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
            return exitStatus
        }
    }

    /// Terminates (SIGTERM, then SIGKILL after a grace period) and waits.
    public func stop(grace: Double = 3) {
        guard isRunning else { return }
        signal(SIGTERM)
        if waitForExit(timeout: grace) == nil {
            signal(SIGKILL)
            waitForExit(timeout: 5)
        }
    }

    /// Waits until stderr (or stdout) contains `text`; returns false on time-out or early exit.
    public func waitForOutput(_ text: String, timeout: Double, inStdout: Bool = false) -> Bool {
        poll(timeout: timeout) { (inStdout ? self.stdout : self.stderr).contains(text) || !self.isRunning }
        return (inStdout ? stdout : stderr).contains(text)
    }

    /// How often `text` has appeared on stderr (or stdout) so far.
    public func occurrences(of text: String, inStdout: Bool = false) -> Int {
        (inStdout ? stdout : stderr).components(separatedBy: text).count - 1
    }

    /// The lines of stderr that contain `text`, in order (a daemon's `audio session ended`
    /// figures, for a failing test to show).
    public func lines(containing text: String) -> [String] {
        stderr.split(separator: "\n").filter { $0.contains(text) }.map(String.init)
    }

    /// Waits until `text` has appeared more than `count` times on stderr (or stdout); whether it did.
    @discardableResult
    public func waitForOutput(_ text: String, moreThan count: Int, timeout: Double, inStdout: Bool = false) -> Bool {
        poll(timeout: timeout) { self.occurrences(of: text, inStdout: inStdout) > count || !self.isRunning }
        return occurrences(of: text, inStdout: inStdout) > count
    }

    deinit { stop(grace: 1) }
}

/// What tests start lives no longer than the test run: processes held by static fixtures, whose
/// deinit never runs, are killed and their network namespaces removed when the runner exits.
enum CleanupAtExit {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var processes: Set<pid_t> = []
    nonisolated(unsafe) private static var namespaces: Set<String> = []
    nonisolated(unsafe) private static var installed = false

    static func register(process: pid_t) { lock.withLock { processes.insert(process); install() } }
    static func register(namespace: String) { lock.withLock { namespaces.insert(namespace); install() } }
    static func forget(namespace: String) { _ = lock.withLock { namespaces.remove(namespace) } }

    private static func install() {
        guard !installed else { return }
        installed = true
        atexit { CleanupAtExit.run() }
    }

    private static func run() {
        let (pids, names) = lock.withLock { (processes, namespaces) }
        for pid in pids { kill(pid, SIGKILL) }
        for name in names {
            // Plain fork/exec: Foundation may already be shutting down.
            var child: pid_t = 0
            let words: [String] = ["/usr/sbin/ip", "netns", "del", name]
            let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
            if posix_spawn(&child, "/usr/sbin/ip", nil, nil, argv, environ) == 0 {
                var status: Int32 = 0
                waitpid(child, &status, 0)
            }
            argv.forEach { free($0) }
        }
    }
}

/// Runs a command to completion with a time limit.
public struct CommandResult: Sendable {
    /// The exit status (-1 when killed at the time limit).
    public var status: Int32
    /// Its stdout.
    public var stdout: String
    /// Its stderr.
    public var stderr: String

    /// A result from its parts.
    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs `executable` and waits at most `timeout` seconds.
public func runCommand(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: Double = 30, directory: String = NSTemporaryDirectory()) throws -> CommandResult {
    let child = try ManagedProcess(executable, arguments, environment: environment, directory: directory,
                                   label: (executable as NSString).lastPathComponent)
    defer { try? FileManager.default.removeItem(atPath: child.stdoutPath); try? FileManager.default.removeItem(atPath: child.stderrPath) }
    let status = child.waitForExit(timeout: timeout)
    if status == nil { child.stop(grace: 1) }
    return CommandResult(status: status ?? -1, stdout: child.stdout, stderr: child.stderr)
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; returns whether it held.
@discardableResult
public func poll(timeout: Double, interval: Double = 0.02, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(UInt32(interval * 1_000_000))
    }
    return condition()
}

/// Monotonic seconds, for measuring.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
