import AirPlayTesting
import Foundation
import Testing

/// The systemd unit and the installer.
@Suite(.timeLimit(.minutes(10))) struct PackagingTests {
    /// The single unit, PTP's ports bound by systemd, holds no capability: 1.5 at most. The
    /// zones' template binds them itself with one: 2 at most.
    @Test(arguments: [("airplayd.service", 1.5), ("airplayd@.service", 2.0)])
    func unitIsHardened(name: String, limit: Double) throws {
        let unit = Products.repositoryRoot + "/systemd/" + name
        let result = try runCommand(TestHost.which("systemd-analyze") ?? "/usr/bin/systemd-analyze",
                                    ["security", "--offline=yes", unit], timeout: 60)
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") },
                                "\(result.stdout)\(result.stderr)")
        let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first)
        #expect(score <= limit, "\(line)")
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for setting in ["Type=notify", "Restart=on-failure", "DynamicUser=yes", "StateDirectory=airplayd", "WatchdogSec="] {
            #expect(text.contains(setting), "unit lacks \(setting)")
        }
        print("measure: \(line.trimmingCharacters(in: .whitespaces))")
    }

    /// The zone template is the single unit with the instance put in: its own configuration
    /// file, `--instance`, state and cache directories. Every other line (the sandbox above
    /// all) is the same, so the two cannot drift apart.
    @Test func templateUnitDiffersOnlyInTheInstanceLines() throws {
        func settings(_ name: String) throws -> [String] {
            try String(contentsOfFile: Products.repositoryRoot + "/systemd/" + name, encoding: .utf8)
                .split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
        }
        // PTP's ports: the single unit takes them from airplayd.socket, the zones bind them with
        // the one capability.
        let socketOnly = ["Wants=airplayd.socket", "After=airplayd.socket", "Also=airplayd.socket", "CapabilityBoundingSet="]
        let capabilityOnly = ["CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "AmbientCapabilities=CAP_NET_BIND_SERVICE"]
        let singleAll = try settings("airplayd.service"), templateAll = try settings("airplayd@.service")
        #expect(socketOnly.allSatisfy(singleAll.contains) && capabilityOnly.allSatisfy(templateAll.contains))
        let single = singleAll.filter { !socketOnly.contains($0) }
        let template = templateAll.filter { !capabilityOnly.contains($0) }
        #expect(single.count == template.count)
        let expected: [String: String] = [
            "Description=AirPlay receiver (swift-airplay)": "Description=AirPlay receiver %i (swift-airplay)",
            "Documentation=file:/etc/airplayd/airplayd.toml": "Documentation=file:/etc/airplayd/%i.toml",
            "ExecStart=/usr/local/bin/airplayd --config /etc/airplayd/airplayd.toml":
                "ExecStart=/usr/local/bin/airplayd --config /etc/airplayd/%i.toml --instance %i --state-dir /var/lib/airplayd-%i",
            "StateDirectory=airplayd": "StateDirectory=airplayd-%i",
            "CacheDirectory=airplayd": "CacheDirectory=airplayd-%i",
            "Environment=GST_REGISTRY=/var/cache/airplayd/gst-registry.bin": "Environment=GST_REGISTRY=/var/cache/airplayd-%i/gst-registry.bin",
            "Environment=HOME=/var/cache/airplayd": "Environment=HOME=/var/cache/airplayd-%i",
        ]
        for (one, other) in zip(single, template) where one != other {
            #expect(expected[one] == other, "unexpected difference: \(one) / \(other)")
        }
        #expect(Set(zip(single, template).filter { $0 != $1 }.map(\.0)) == Set(expected.keys))
    }

    @Test func installPutsBinaryUnitAndConfigInPlace() throws {
        let root = Products.scratchDirectory("install")
        let pages = try Self.manualPages()
        let result = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/install", "--destdir", root, "--skip-build",
                                                  "--bin-dir", Products.buildDirectory, "--man-pages", pages], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for path in ["/usr/local/bin/airplayd", "/usr/local/bin/airplay", "/etc/systemd/system/airplayd.service", "/etc/systemd/system/airplayd.socket",
                     "/etc/systemd/system/airplayd@.service", "/etc/airplayd/airplayd.toml", "/etc/dbus-1/system.d/airplayd.conf", "/etc/sysusers.d/airplayd.conf",
                     "/usr/local/share/man/man1/airplay.1", "/usr/local/share/man/man8/airplayd.8", "/usr/local/share/man/man5/airplayd.toml.5",
                     "/usr/local/share/bash-completion/completions/airplay", "/usr/local/share/zsh/site-functions/_airplayd",
                     "/usr/local/share/fish/vendor_completions.d/airplay.fish"] {
            #expect(FileManager.default.fileExists(atPath: root + path), "\(path) not installed")
        }
        // The installed example configuration is accepted by the installed daemon... by its parser at least:
        let check = try runCommand(root + "/usr/local/bin/airplayd", ["--config", root + "/etc/airplayd/airplayd.toml",
                                                                      "--port", "99999"], timeout: 20)
        #expect(check.stderr.contains("config key 'port'"), "the file parsed; only the flag was refused")
    }

    /// The pages and completions as `tools/man-pages` writes them from the built binaries.
    static func manualPages() throws -> String {
        let output = Products.scratchDirectory("man-pages")
        // `swift build --product generate-manual` names it so (the package plugin adds "-tool").
        let tool = Products.buildDirectory + "/generate-manual"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "tools/test builds swift-argument-parser's generate-manual")
        let result = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/man-pages", "--bin-dir", Products.buildDirectory,
                                                  "--output", output], environment: ["GENERATE_MANUAL": tool], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        return output
    }

    /// `man airplayd`, `man airplay` and `man airplayd.toml` read what `--help` and the key table
    /// say, and render without a warning; the bash completions parse, and complete a subcommand.
    @Test func manualPagesAndCompletionsSayWhatTheBinariesDo() throws {
        let pages = try Self.manualPages()
        var rendered: [String: String] = [:]
        for page in ["airplay.1", "airplayd.8", "airplayd.toml.5"] {
            let man = try runCommand("/usr/bin/man", ["--warnings", "-l", "-Tascii", pages + "/" + page], environment: ["MANWIDTH": "100"], timeout: 30)
            #expect(man.status == 0 && man.stderr.isEmpty, "\(page): \(man.stderr)")
            // Bold and underline are overstruck (a character, a backspace, itself or "_"): the text alone.
            var plain: [Character] = []
            for character in man.stdout { if character == "\u{8}" { _ = plain.popLast() } else { plain.append(character) } }
            rendered[page] = String(plain)
        }
        #expect(rendered["airplay.1"]?.contains("stream") == true && rendered["airplay.1"]?.contains("--timing") == true)
        #expect(rendered["airplayd.8"]?.contains("--audio-output") == true)
        let keys = ["name", "port", "max_connections", "audio_output", "airplay2", "ptp"]
        #expect(keys.allSatisfy { rendered["airplayd.toml.5"]?.contains($0) == true }, "\(rendered["airplayd.toml.5"] ?? "")")
        let bash = pages + "/completions/bash/airplay"
        #expect(try runCommand("/bin/bash", ["-n", bash], timeout: 10).status == 0)
        let completed = try runCommand("/bin/bash", ["-c", "source \(bash); COMP_WORDS=(airplay str); COMP_CWORD=1; COMP_LINE='airplay str'; COMP_POINT=11; _airplay; echo \"${COMPREPLY[*]}\""], timeout: 10)
        #expect(completed.stdout.contains("stream"), "\(completed.stdout)\(completed.stderr)")
    }
}

/// airplayd as its unit runs it: an unprivileged user with no capability, PTP's ports bound by
/// systemd and handed over at start (systemd-socket-activate does what airplayd.socket does).
/// A sender on another host streams RAOP to it and serves a PTP clock it follows, and `airplay`
/// run by an ordinary user reads it. As root none of this is tried: a socket option that
/// needs CAP_NET_ADMIN once reset every connection of the daemon under its unit.
@Suite(.timeLimit(.minutes(10))) struct UnprivilegedDaemonTests {
    @Test func theUnitsUserPlaysAndFollowsPTPOnSocketsSystemdBound() throws {
        let hosts = try LinkedHosts(label: "unpriv", prefix: "10.98.4")
        defer { hosts.close() }
        let (sender, box) = (hosts.sender, hosts.box)
        let state = box.directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        #expect(try runCommand("/bin/chown", ["nobody:nogroup", state]).status == 0)
        let activate = try #require(TestHost.which("systemd-socket-activate"), "systemd-socket-activate comes with systemd")
        let asNobody = ["/usr/bin/setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps=-all"]
        let daemon = try box.spawn(activate, ["--datagram", "--listen", "0.0.0.0:319", "--listen", "0.0.0.0:320", "--"] + asNobody + [
            try Products.executable("airplayd"), "--name", "Unprivileged Box", "--port", "7000", "--state-dir", state,
            "--audio-output", "raw:\(state)/out.pcm", "--video-sink", "fakesink sync=true",
        ], environment: ["HOME": state], label: "airplayd")
        defer { daemon.stop(grace: 2) }
        // systemd-socket-activate starts its child at the first datagram: the clock's.
        let master = try sender.spawn(try Products.executable("airplay"), ["ptp-master", "--to", "10.98.4.2", "--seconds", "40"], label: "ptp-master")
        defer { master.stop() }
        #expect(daemon.waitForOutput("airplayd: ready", timeout: 20), "\(daemon.stderr)")
        #expect(daemon.stderr.contains("sockets from systemd count=2") && daemon.stderr.contains("PTP follower listening"), "\(daemon.stderr)")

        let deviceID = ((try? String(contentsOfFile: state + "/device-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "")
        let stream = try DoctorTests.pyatv(in: sender, address: "10.98.4.2", port: 7000, deviceID: deviceID)
        #expect(stream.waitForExit(timeout: 60) == 0, "\(stream.stdout)\(stream.stderr)\n\(daemon.stderr.suffix(2000))")
        #expect(daemon.waitForOutput("audio session ended", timeout: 5) && daemon.stderr.contains("lost=0"), "\(daemon.stderr.suffix(2000))")

        let curl = try #require(TestHost.which("curl"))
        var clocks = ""
        poll(timeout: 10, interval: 0.3) {
            clocks = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/ptp"]).stdout) ?? ""
            return clocks.contains("\"followed\":true")
        }
        #expect(clocks.contains("\"followed\":true"), "the clock on systemd's sockets is followed: \(clocks)")
        let doctor = try box.run(asNobody[0], Array(asNobody.dropFirst()) + [try Products.executable("airplay"), "doctor", "--json", "--browse-seconds", "0"],
                                 environment: ["HOME": state])
        #expect(doctor.stdout.contains("\"code\":\"reachable\"") && !doctor.stdout.contains("ptp-off"), "\(doctor.stdout)\(doctor.stderr)")
        print("measure: airplayd as nobody without capabilities: RAOP played, PTP followed on systemd's sockets")
    }
}

/// `tools/package`: the Debian package, built from the test build (its layout and scripts are
/// the release's), checked by lintian, then installed with apt-get into a fresh root (an
/// overlay over this system, in namespaces of its own), its units started by a real systemd
/// booted in that root (pyatv streams into airplayd.service, which takes PTP's ports from
/// airplayd.socket; the zone template serves and reloads), then removed and purged with nothing
/// left behind. The steps are `scripts/package-root.sh` and, under systemd,
/// `scripts/package-systemd-check.sh`.
@Suite(.timeLimit(.minutes(10))) struct DebianPackageTests {
    @Test func thePackageInstallsPlaysAndPurgesCleanly() throws {
        try TestHost.require(["dpkg-deb", "lintian", "apt-get", "unshare"])
        let sweep = try #require(RAOPInteropTests.sweep)
        let output = Products.scratchDirectory("package")
        let built = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/package", "--bin-dir", Products.buildDirectory,
                                                 "--man-pages", try PackagingTests.manualPages(), "--output", output], timeout: 300)
        #expect(built.status == 0, "\(built.stdout)\(built.stderr)")
        let deb = output + "/airplayd_\(try runCommand(try Products.executable("airplayd"), ["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines))_"
            + (try runCommand("/usr/bin/dpkg", ["--print-architecture"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) + ".deb"
        #expect(FileManager.default.fileExists(atPath: deb), "\(built.stdout)")
        // lintian's errors, less the two a debug build must have (symbols, the toolchain's RUNPATH).
        let errors = built.stdout.split(separator: "\n").filter {
            $0.hasPrefix("E: ") && !$0.contains("unstripped-binary-or-object") && !$0.contains("custom-library-search-path")
        }
        #expect(errors.isEmpty, "lintian: \(errors.joined(separator: "\n"))")

        let work = Products.scratchDirectory("package-root")
        let scripts = Products.repositoryRoot + "/Tests/IntegrationTests/scripts"
        let result = try runCommand(try #require(TestHost.which("unshare")), [
            "--mount", "--net", "--pid", "--fork", "/bin/sh", scripts + "/package-root.sh", work, deb, try Products.peerTool("atvremote"),
            sweep.directory + "/sweep.flac", scripts + "/package-systemd-check.sh",
        ], timeout: 300)
        #expect(result.status == 0 && result.stdout.contains("OK installed, played under systemd, purged"), "\(result.stdout)\(result.stderr)")
        let shown = result.stdout.split(separator: "\n").filter { $0.contains("version") || $0.hasPrefix("played") || $0.hasPrefix("exposure") }
        print("measure: the Debian package: \(shown.joined(separator: "; "))")
    }
}
