import AirPlayTesting
import Foundation
import Testing

/// A private D-Bus session bus, as a desktop session has one.
final class SessionBus {
    let address: String
    private let process: ManagedProcess

    init(directory: String) throws {
        address = "unix:path=\(directory)/session_bus_socket"
        try? FileManager.default.removeItem(atPath: directory + "/session_bus_socket")
        process = try ManagedProcess(try #require(TestHost.which("dbus-daemon")), ["--session", "--nofork", "--nopidfile", "--address=\(address)"],
                                     directory: directory, label: "session-bus")
        guard poll(timeout: 10, { FileManager.default.fileExists(atPath: directory + "/session_bus_socket") }) else {
            throw TestHostError("dbus-daemon --session did not start: \(process.stderr)")
        }
    }

    deinit { process.stop() }
}

/// MPRIS against playerctl (Debian), the client desktop widgets and scripts use.
@Suite(.serialized, .timeLimit(.minutes(10))) struct MPRISInteropTests {
    /// `playerctl -p airplayd ARGS` on `bus`; stdout trimmed, or the error.
    static func playerctl(_ bus: String, _ arguments: [String], in host: TestHost? = nil) throws -> CommandResult {
        let program = try #require(TestHost.which("playerctl"))
        let environment = ["DBUS_SESSION_BUS_ADDRESS": bus]
        let all = ["-p", "airplayd"] + arguments
        return try host?.run(program, all, environment: environment, timeout: 10) ?? runCommand(program, all, environment: environment, timeout: 10)
    }

    static func value(_ bus: String, _ arguments: [String], in host: TestHost? = nil) -> String {
        ((try? playerctl(bus, arguments, in: host))?.stdout ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func playerctlSeesAPyatvStreamAndControlsAVideo() throws {
        try TestHost.require(["playerctl", "dbus-daemon"])
        let directory = Products.scratchDirectory("mpris")
        let bus = try SessionBus(directory: directory)
        let media = try TestMedia(seconds: 30)
        try "mpris = \"session\"\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--airplay2", "off"],
                                     environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        #expect(poll(timeout: 10) { Self.value(bus.address, ["status"]) == "Stopped" }, "\(daemon.process.stderr.suffix(1500))")

        // Audio from pyatv, with text and a cover.
        let sweep = try #require(RAOPInteropTests.sweep)
        let cover = directory + "/cover.jpg"
        #expect(try runCommand(try #require(TestHost.which("ffmpeg")), ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=blue:s=32x32",
                                                                          "-frames:v", "1", cover], timeout: 30).status == 0)
        let pyatv = try ManagedProcess(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_stream_metadata.py", "127.0.0.1", String(daemon.port),
            "AABBCCDDEEFF", "cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68", sweep.directory + "/sweep.flac", cover,
        ], directory: directory, label: "pyatv")
        defer { pyatv.stop() }
        let format = "{{status}}|{{title}}|{{artist}}|{{album}}|{{mpris:artUrl}}|{{mpris:length}}"
        var shown = ""
        #expect(poll(timeout: 15) {
            shown = Self.value(bus.address, ["metadata", "--format", format])
            return shown.hasPrefix("Playing|Sweep Song|Test Artist|Test Album|file://")
        }, "playerctl showed \(shown)")
        let artPath = shown.split(separator: "|")[4].dropFirst("file://".count)
        #expect(FileManager.default.contents(atPath: String(artPath)) == FileManager.default.contents(atPath: cover), "the cover file is the cover")
        #expect(abs((Double(shown.split(separator: "|")[5]) ?? 0) - 6_000_000) < 100_000, "mpris:length from progress")
        #expect(poll(timeout: 5, interval: 0.1) { (Double(Self.value(bus.address, ["position"])) ?? 0) > 0.5 }, "the position runs")
        // pyatv serves no DACP remote: pausing fails, and says why.
        let refused = try Self.playerctl(bus.address, ["pause"])
        #expect(Self.value(bus.address, ["status"]) == "Playing")
        print("measure: playerctl pause on a pyatv stream: status \(refused.status), \(refused.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(pyatv.waitForExit(timeout: 30) != nil)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"]) == "Stopped" })

        // A video: its title from the URL, its position; pause and play act on the player.
        let control = try RawHTTPConnection(port: daemon.port)
        let play = try control.request("POST", "/play", headers: ["X-Apple-Session-ID": "mpris-video"],
                                       body: Array("Content-Location: \(media.url("clip.mp4"))\r\nStart-Position: 0\r\n".utf8))
        #expect(play.status == 200)
        #expect(poll(timeout: 15) { Self.value(bus.address, ["metadata", "--format", "{{status}}|{{title}}"]) == "Playing|clip" })
        #expect(try Self.playerctl(bus.address, ["pause"]).status == 0)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"]) == "Paused" })
        let pausedAt = Double(Self.value(bus.address, ["position"])) ?? -1
        Thread.sleep(forTimeInterval: 1)   // a second in which a running player would move on
        #expect(abs((Double(Self.value(bus.address, ["position"])) ?? -9) - pausedAt) < 0.3, "paused means the player stopped")
        let scrub = try control.request("GET", "/scrub", headers: ["X-Apple-Session-ID": "mpris-video"]).text
        #expect(scrub.contains("position: \(Int(pausedAt))") || abs((Double(scrub.split(separator: "\n").last?.split(separator: " ").last ?? "") ?? -9) - pausedAt) < 0.5,
                "the sender sees the same position: \(scrub)")
        #expect(try Self.playerctl(bus.address, ["position", "10"]).status == 0, "SetPosition seeks the video")
        #expect(try Self.playerctl(bus.address, ["play"]).status == 0)
        #expect(poll(timeout: 5) { (Double(Self.value(bus.address, ["position"])) ?? 0) >= 10 && Self.value(bus.address, ["status"]) == "Playing" })
        #expect(try Self.playerctl(bus.address, ["stop"]).status == 0)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"]) == "Stopped" })
        withExtendedLifetime(daemon) {}
    }

    /// `playerctl pause` and `play` on an `airplay stream` over AirPlay 1, through DACP.
    @Test func playerctlPausesAnAirplayStreamThroughDACP() throws {
        try TestHost.require(["playerctl", "dbus-daemon"])
        let host = try TestHost(label: "mprisdacp")
        defer { host.close() }
        try host.startAvahi()
        let bus = try SessionBus(directory: host.directory)
        let files = try makeTitledTones(in: host.directory, titles: ["Remote Song"], seconds: 20)
        try "mpris = \"session\"\n".write(toFile: host.directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: host, port: 7030, extra: ["--config", host.directory + "/airplayd.toml",
                                                                           "--audio-output", "fakesink sync=true", "--video", "off"],
                                             environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let sender = try host.spawn(try Products.executable("airplay"), ["stream", files[0], "--to", "127.0.0.1:7030", "--json", "--protocol", "1"], label: "airplay")
        defer { sender.stop() }
        #expect(poll(timeout: 20) { Self.value(bus.address, ["metadata", "--format", "{{status}}|{{title}}"], in: host) == "Playing|Remote Song" },
                "\(daemon.process.stderr.suffix(1000))")
        let pause = try Self.playerctl(bus.address, ["pause"], in: host)
        #expect(pause.status == 0, "\(pause.stderr)")
        #expect(sender.waitForOutput("\"state\":\"paused\"", timeout: 5, inStdout: true))
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"], in: host) == "Paused" })
        #expect(try Self.playerctl(bus.address, ["play"], in: host).status == 0)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"], in: host) == "Playing" })
        #expect(try Self.playerctl(bus.address, ["volume", "0.5"], in: host).status == 0)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["volume"], in: host).hasPrefix("0.5") }, "the sender set the volume it was asked for")
    }

    /// `playerctl` on an `airplay stream --protocol 2` that publishes no DACP remote and with no
    /// avahi-daemon to find one: pause, play, next and volume reach the sender on its AirPlay 2
    /// event channel (`sendMediaRemoteCommand`), and a pause while paused does not start it.
    @Test func playerctlControlsAnAirplayStreamOnTheAirPlay2EventChannel() throws {
        try TestHost.require(["playerctl", "dbus-daemon"])
        let host = try TestHost(label: "mprisevents")
        defer { host.close() }
        let bus = try SessionBus(directory: host.directory)
        let files = try makeTitledTones(in: host.directory, titles: ["Event Song", "Second Event Song"], seconds: 20)
        try "mpris = \"session\"\nairplay2 = true\n".write(toFile: host.directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: host, port: 7032, extra: ["--config", host.directory + "/airplayd.toml",
                                                                           "--audio-output", "fakesink sync=true", "--video", "off"],
                                             environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let sender = try host.spawn(try Products.executable("airplay"), ["stream"] + files + ["--to", "127.0.0.1:7032", "--protocol", "2", "--no-dacp", "--json"],
                                    label: "airplay")
        defer { sender.stop() }
        #expect(poll(timeout: 20) { Self.value(bus.address, ["metadata", "--format", "{{status}}|{{title}}"], in: host) == "Playing|Event Song" },
                "\(daemon.process.stderr.suffix(1000))")
        #expect(Self.value(bus.address, ["metadata", "--format", "{{status}}"], in: host) == "Playing")
        var latencies: [Double] = []
        func timed(_ arguments: [String], until output: String) -> Bool {
            let before = sender.occurrences(of: output, inStdout: true), start = monotonicSeconds()
            guard (try? Self.playerctl(bus.address, arguments, in: host))?.status == 0 else { return false }
            let seen = sender.waitForOutput(output, moreThan: before, timeout: 5, inStdout: true)
            latencies.append(monotonicSeconds() - start)
            return seen
        }
        #expect(timed(["pause"], until: "\"state\":\"paused\""), "\(sender.stdout.suffix(600))\n\(daemon.process.stderr.suffix(2000))")
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"], in: host) == "Paused" })
        // A second pause changes nothing (OwnTone would take a `paus` as play/pause).
        #expect(try Self.playerctl(bus.address, ["pause"], in: host).status == 0)
        Thread.sleep(forTimeInterval: 1)   // time for a wrongly taken pause (a play/pause toggle) to show
        #expect(Self.value(bus.address, ["status"], in: host) == "Paused", "a pause while paused left it paused")
        #expect(timed(["play"], until: "\"state\":\"playing\""), "\(sender.stdout.suffix(600))")
        #expect(poll(timeout: 5) { Self.value(bus.address, ["status"], in: host) == "Playing" })
        #expect(timed(["next"], until: "item 2 of 2"), "\(sender.stdout.suffix(600))")
        #expect(poll(timeout: 5) { Self.value(bus.address, ["metadata", "--format", "{{title}}"], in: host) == "Second Event Song" })
        #expect(try Self.playerctl(bus.address, ["volume", "0.5"], in: host).status == 0)
        #expect(poll(timeout: 5) { Self.value(bus.address, ["volume"], in: host).hasPrefix("0.5") }, "the sender set the volume it was asked for")
        let log = daemon.process.stderr
        #expect(log.contains("path=\"event channel\"") && !log.contains("path=DACP"), "\(log.suffix(2000))")
        #expect(latencies.allSatisfy { $0 < 0.5 }, "command to sender state: \(latencies)")
        print("measure: playerctl → airplay stream over the AirPlay 2 event channel, command to sender state "
              + latencies.map { String(format: "%.0f", $0 * 1000) }.joined(separator: ", ") + " ms")
    }

    /// On a system bus with the stock policy (which lets nobody own a name), the policy `tools/install` installs lets the
    /// daemon own its name (one per instance); playerctl finds it there.
    @Test func theSystemBusPolicyLetsTheDaemonOwnItsName() throws {
        try TestHost.require(["playerctl", "dbus-daemon"])
        let directory = Products.scratchDirectory("mpris-system")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <include>/usr/share/dbus-1/system.conf</include>
              <include>\(Products.repositoryRoot)/systemd/airplayd-dbus.conf</include>
            </busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        let address = "unix:path=\(directory)/system_bus_socket"
        let bus = try ManagedProcess(try #require(TestHost.which("dbus-daemon")), [
            "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile", "--address=\(address)",
        ], directory: directory, label: "system-bus")
        defer { bus.stop() }
        #expect(poll(timeout: 10) { FileManager.default.fileExists(atPath: directory + "/system_bus_socket") }, "\(bus.stderr)")
        try "mpris = \"system\"\ninstance = \"kitchen\"\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--airplay2", "off"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"])
        #expect(daemon.process.waitForOutput("D-Bus name owned", timeout: 10), "\(daemon.process.stderr.suffix(1500))")
        let program = try #require(TestHost.which("playerctl"))
        let listed = try runCommand(program, ["-l"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": address, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"],
                                    timeout: 10)
        #expect(listed.stdout.contains("airplayd.kitchen"), "\(listed.stdout)\(listed.stderr)")
    }
}
