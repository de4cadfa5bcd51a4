import AirPlayTesting
import Foundation
import Testing

/// airplayd's life as a systemd service: configuration errors, readiness, watchdog, stop.
@Suite(.timeLimit(.minutes(10))) struct LifecycleTests {
    private func runDaemon(_ arguments: [String], timeout: Double = 20) throws -> CommandResult {
        try runCommand(try Products.executable("airplayd"), arguments,
                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeout: timeout)
    }

    @Test(arguments: [
        ("colour = \"blue\"\n", "config key 'colour': unknown key"),
        ("port = \"7000\"\n", "config key 'port': must be an integer from 0 to 65535, got the string \"7000\""),
        ("port = 99999\n", "config key 'port': must be an integer from 0 to 65535, got 99999"),
        ("log_level = \"chatty\"\n", "config key 'log_level'"),
        ("video = 1\n", "config key 'video': must be true or false"),
    ])
    func configurationErrorsExitWith78NamingTheKey(toml: String, message: String) throws {
        let directory = Products.scratchDirectory("config")
        let path = directory + "/airplayd.toml"
        try toml.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runDaemon(["--config", path, "--state-dir", directory])
        #expect(result.status == 78)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func badFlagValuesAndMissingFilesExitWith78() throws {
        let state = Products.scratchDirectory("flags")
        #expect(try runDaemon(["--port", "70000", "--state-dir", state]).status == 78)
        #expect(try runDaemon(["--log-level", "loud", "--state-dir", state]).status == 78)
        #expect(try runDaemon(["--state-dir", "relative"]).status == 78)
        let missing = try runDaemon(["--config", "/nonexistent/airplayd.toml", "--state-dir", state])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("/nonexistent/airplayd.toml does not exist"))
    }

    @Test func readyComesAfterTheListenAndWatchdogPingsFollow() throws {
        let host = try TestHost(label: "notify")
        defer { host.close() }
        try host.startAvahi()
        let socketPath = host.directory + "/notify.sock"
        let listener = try NotifyListener(path: socketPath)
        let daemon = try RunningDaemon.start(in: host, environment: [
            "NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "200000",
        ], waitForReady: false)
        let ready = listener.waitFor("READY=1", timeout: 20)
        #expect(ready != nil)
        // The port accepts at the moment READY=1 arrives.
        #expect(try host.exchange(port: 7000, ["GET /info HTTP/1.1\r\n\r\n"]).hasPrefix("HTTP/1.1 200 OK"))
        #expect(ready?.contains("STATUS=Serving on port 7000") == true)
        #expect(daemon.process.stderr.contains("mDNS services registering"), "mDNS was requested before READY")
        // Three watchdog periods (200 ms): the pings must keep that pace, so this is a window, not a wait.
        Thread.sleep(forTimeInterval: 0.6)
        #expect(listener.messages.filter { $0 == "WATCHDOG=1" }.count >= 3, "\(listener.messages)")
        #expect(listener.waitFor("STATUS=Serving on port 7000; published", timeout: 10) != nil)
        daemon.process.signal(SIGTERM)
        #expect(daemon.process.waitForExit(timeout: 5) == 0)
        #expect(listener.messages.contains { $0.hasPrefix("STOPPING=1") })
    }

    @Test func sigtermWithdrawsRecordsClosesSessionsAndExitsWithin2Seconds() throws {
        let host = try TestHost(label: "term")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host)
        #expect(try host.waitForService("_airplay._tcp") { $0.name == "Integration Box" } != nil)
        // An open session: a client that connected and sent nothing.
        let idle = try host.spawn("/usr/bin/python3", ["-c", """
            import socket, time
            s = socket.create_connection(("127.0.0.1", 7000))
            s.settimeout(10)
            start = time.time()
            data = s.recv(10)
            print("closed by server" if data == b"" else "got data", round(time.time() - start, 2))
            """], label: "idle-client")
        // The daemon has accepted it: `ss -p` names the process that holds an accepted socket (none for one still queued).
        let ss = try #require(TestHost.which("ss"))
        #expect(poll(timeout: 5, interval: 0.05) {
            ((try? host.run(ss, ["-tnp", "state", "established", "sport", "=", ":7000"]).stdout) ?? "").contains("\"airplayd\"")
        }, "the daemon accepted the idle client: \(idle.stderr)")
        let started = monotonicSeconds()
        daemon.process.signal(SIGTERM)
        let status = daemon.process.waitForExit(timeout: 5)
        let took = monotonicSeconds() - started
        #expect(status == 0)
        #expect(took < 2, "exit took \(took) s")
        #expect(idle.waitForOutput("closed by server", timeout: 5, inStdout: true))
        #expect(daemon.process.stderr.contains("withdrawing mDNS records"))
        // Avahi's goodbye packets flush the records from browsers within about a second.
        #expect(poll(timeout: 5, interval: 0.3) {
            ((try? host.browse("_airplay._tcp")) ?? []).allSatisfy { $0.name != "Integration Box" }
        })
        print("measure: SIGTERM to exit: \(String(format: "%.3f", took)) s")
    }

    /// An idle box maps no library it has not called yet: libcrypto (and libssl) open at the
    /// first pairing or RSA challenge, libmosquitto when a broker is configured, libcurl at the
    /// first fetch. Linked at exec they cost an idle daemon about 3.7 MiB resident
    /// (BENCHMARKS.md, issue 26); a new device ID's random bytes come from the kernel.
    @Test func anIdleDaemonMapsNoLibraryItHasNotCalled() throws {
        let host = try TestHost(label: "lean")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host)
        #expect(daemon.process.stderr.contains("device.idSource=generated"), "a first start makes a device ID")
        _ = try host.exchange(port: 7000, ["GET /info HTTP/1.1\r\n\r\n"])
        let maps = try String(contentsOfFile: "/proc/\(daemon.process.pid)/maps", encoding: .utf8)
        for library in ["libcrypto.so", "libssl.so", "libmosquitto.so", "libcurl"] {
            #expect(!maps.contains(library), "\(library) is mapped by an idle daemon")
        }
    }

    @Test func deviceIDIsStableAcrossRestarts() throws {
        let host = try TestHost(label: "stable")
        defer { host.close() }
        try host.startAvahi()
        let state = host.directory + "/kept-state"
        let first = try RunningDaemon.start(in: host, stateDirectory: state)
        let firstRecord = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Integration Box" })
        first.process.stop()
        let second = try RunningDaemon.start(in: host, stateDirectory: state)
        #expect(second.process.stderr.contains("device.idSource=stored"))
        let info = try host.exchange(port: 7000, ["GET /server-info HTTP/1.1\r\n\r\n"])
        #expect(info.contains("<string>\(firstRecord.txtValue("deviceid") ?? "?")</string>"))
        #expect(second.storedDeviceID == firstRecord.txtValue("deviceid"))
    }

    /// `kill -9` at a different moment of a config reload each round (SIGHUP, then the kill
    /// within 0–60 ms, while the daemon re-reads its file and re-publishes): every restart comes
    /// up ready on the same state, with the same device id, its pairings readable and no
    /// temporary file left behind. (airplayd keeps no downloads on disk: a video's media is
    /// fetched again by the next `/play`, so there is nothing to resume.)
    @Test func killNineDuringAReloadLeavesAStateThatStartsClean() throws {
        let host = try TestHost(label: "reloadkill")
        defer { host.close() }
        let state = host.directory + "/kept-state"
        let config = host.directory + "/airplayd.toml"
        var deviceID: String?
        for round in 0..<6 {
            try "name = \"Box \(round)\"\npassword = \"\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try RunningDaemon.start(in: host, extra: ["--config", config], stateDirectory: state)
            if let deviceID { #expect(daemon.storedDeviceID == deviceID, "round \(round)") }
            deviceID = daemon.storedDeviceID
            #expect(try host.exchange(port: 7000, ["GET /info HTTP/1.1\r\n\r\n"]).hasPrefix("HTTP/1.1 200 OK"), "round \(round)")
            try "name = \"Box \(round) reloaded\"\npassword = \"s3cret\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            daemon.process.signal(SIGHUP)
            usleep(UInt32(round * 12_000))   // a different moment of the reload each round
            daemon.process.signal(SIGKILL)
            _ = daemon.process.waitForExit(timeout: 5)
            let list = try runCommand(try Products.executable("airplayd"), ["pairings", "list", "--state-dir", state])
            #expect(list.status == 0, "round \(round): \(list.stdout)\(list.stderr)")
        }
        let last = try RunningDaemon.start(in: host, extra: ["--config", config], stateDirectory: state)
        #expect(last.storedDeviceID == deviceID)
        #expect(last.process.stderr.contains("device.idSource=stored"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

/// A datagram socket standing in for systemd's notify socket.
final class NotifyListener: @unchecked Sendable {
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [String] = []

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw TestHostError("cannot bind \(path)") }
    }

    deinit { close(descriptor) }

    /// Everything received so far, one entry per line of each datagram.
    var messages: [String] {
        drain()
        return lock.withLock { received }
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return }
            let text = String(decoding: buffer.prefix(count), as: UTF8.self)
            lock.withLock { received.append(contentsOf: text.split(separator: "\n").map(String.init)) }
            lock.withLock { received.append("--datagram:" + text.replacingOccurrences(of: "\n", with: "|")) }
        }
    }

    /// Waits for a line starting with `prefix`; returns the whole datagram it came in.
    func waitFor(_ prefix: String, timeout: Double) -> String? {
        var found: String?
        poll(timeout: timeout) {
            found = messages.first { $0.hasPrefix("--datagram:") && $0.dropFirst(11).split(separator: "|").contains { $0.hasPrefix(prefix) } }
            return found != nil
        }
        return found.map { String($0.dropFirst(11)).replacingOccurrences(of: "|", with: "\n") }
    }
}
