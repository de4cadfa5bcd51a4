import AirPlayTesting
import Foundation
import Testing

/// The systemd unit and the installer.
@Suite struct PackagingTests {
    @Test(arguments: ["airplayd.service", "airplayd@.service"])
    func unitIsHardenedTo2OrLower(name: String) throws {
        let unit = Products.repositoryRoot + "/systemd/" + name
        let result = try runCommand(TestHost.which("systemd-analyze") ?? "/usr/bin/systemd-analyze",
                                    ["security", "--offline=yes", unit], timeout: 60)
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") },
                                "\(result.stdout)\(result.stderr)")
        let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first)
        #expect(score <= 2.0, "\(line)")
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
        let single = try settings("airplayd.service")
        let template = try settings("airplayd@.service")
        #expect(single.count == template.count)
        let expected: [String: String] = [
            "Description=AirPlay receiver (swift-airplay)": "Description=AirPlay receiver %i (swift-airplay)",
            "Documentation=file:/etc/airplayd/airplayd.toml": "Documentation=file:/etc/airplayd/%i.toml",
            "ExecStart=/usr/local/bin/airplayd --config /etc/airplayd/airplayd.toml":
                "ExecStart=/usr/local/bin/airplayd --config /etc/airplayd/%i.toml --instance %i --state-dir /var/lib/airplayd/%i",
            "StateDirectory=airplayd": "StateDirectory=airplayd/%i",
            "CacheDirectory=airplayd": "CacheDirectory=airplayd/%i",
            "Environment=GST_REGISTRY=/var/cache/airplayd/gst-registry.bin": "Environment=GST_REGISTRY=/var/cache/airplayd/%i/gst-registry.bin",
            "Environment=HOME=/var/cache/airplayd": "Environment=HOME=/var/cache/airplayd/%i",
        ]
        for (one, other) in zip(single, template) where one != other {
            #expect(expected[one] == other, "unexpected difference: \(one) / \(other)")
        }
        #expect(Set(zip(single, template).filter { $0 != $1 }.map(\.0)) == Set(expected.keys))
    }

    @Test func installPutsBinaryUnitAndConfigInPlace() throws {
        let root = Products.scratchDirectory("install")
        let result = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/install", "--destdir", root, "--skip-build",
                                                  "--bin-dir", Products.buildDirectory], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for path in ["/usr/local/bin/airplayd", "/usr/local/bin/airplay", "/etc/systemd/system/airplayd.service",
                     "/etc/systemd/system/airplayd@.service", "/etc/airplayd/airplayd.toml", "/etc/dbus-1/system.d/airplayd.conf"] {
            #expect(FileManager.default.fileExists(atPath: root + path), "\(path) not installed")
        }
        // The installed example configuration is accepted by the installed daemon... by its parser at least:
        let check = try runCommand(root + "/usr/local/bin/airplayd", ["--config", root + "/etc/airplayd/airplayd.toml",
                                                                      "--port", "99999"], timeout: 20)
        #expect(check.stderr.contains("config key 'port'"), "the file parsed; only the flag was refused")
    }
}
