import AirPlayTesting
import Foundation
import Testing

/// The systemd unit and the installer.
@Suite struct PackagingTests {
    @Test func unitIsHardenedTo2OrLower() throws {
        let unit = Products.repositoryRoot + "/systemd/airplayd.service"
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

    @Test func installPutsBinaryUnitAndConfigInPlace() throws {
        let root = Products.scratchDirectory("install")
        let result = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/install", "--destdir", root, "--skip-build",
                                                  "--bin-dir", Products.buildDirectory], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for path in ["/usr/local/bin/airplayd", "/usr/local/bin/airplay", "/etc/systemd/system/airplayd.service",
                     "/etc/airplayd/airplayd.toml"] {
            #expect(FileManager.default.fileExists(atPath: root + path), "\(path) not installed")
        }
        // The installed example configuration is accepted by the installed daemon... by its parser at least:
        let check = try runCommand(root + "/usr/local/bin/airplayd", ["--config", root + "/etc/airplayd/airplayd.toml",
                                                                      "--port", "99999"], timeout: 20)
        #expect(check.stderr.contains("config key 'port'"), "the file parsed; only the flag was refused")
    }
}
