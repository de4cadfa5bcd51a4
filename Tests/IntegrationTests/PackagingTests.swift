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
        let pages = try Self.manualPages()
        let result = try runCommand("/bin/bash", [Products.repositoryRoot + "/tools/install", "--destdir", root, "--skip-build",
                                                  "--bin-dir", Products.buildDirectory, "--man-pages", pages], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for path in ["/usr/local/bin/airplayd", "/usr/local/bin/airplay", "/etc/systemd/system/airplayd.service",
                     "/etc/systemd/system/airplayd@.service", "/etc/airplayd/airplayd.toml", "/etc/dbus-1/system.d/airplayd.conf",
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
