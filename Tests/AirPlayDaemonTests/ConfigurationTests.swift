@testable import AirPlayDaemon
import AirPlayReceiver
import Foundation
import Logging
import AirPlayHLS
import Testing

/// airplayd's TOML configuration: every key, every wrong type and bad value named in the error.
@Suite struct ConfigurationTests {
    @Test func emptyFileGivesDefaults() throws {
        let configuration = try ReceiverConfiguration.parse(toml: "")
        #expect(configuration.port == 7000)
        #expect(configuration.videoEnabled && configuration.audioEnabled)
        #expect(configuration.audioOutput == .sink("autoaudiosink"))
        #expect(configuration.videoSink == "autovideosink")
        #expect(configuration.stateDirectory == "/var/lib/airplayd")
        #expect(configuration.logLevel == .info)
        #expect(!configuration.name.isEmpty)
    }

    @Test func everyKeyIsRead() throws {
        let configuration = try ReceiverConfiguration.parse(toml: """
            name = "Living Room"
            port = 7100
            interfaces = ["lo"]
            video = false
            audio = true
            audio_output = "raw:/tmp/out.pcm"
            video_sink = "fakesink sync=true"
            state_dir = "/tmp/airplayd-state"
            log_level = "debug"
            """)
        #expect(configuration == ReceiverConfiguration(
            name: "Living Room", port: 7100, interfaces: ["lo"], videoEnabled: false, audioEnabled: true,
            audioOutput: .raw(path: "/tmp/out.pcm"), videoSink: "fakesink sync=true", stateDirectory: "/tmp/airplayd-state",
            logLevel: .debug))
    }

    /// Values with a rule are read into their types, so the daemon never re-reads text.
    @Test func ruledValuesAreReadIntoTheirTypes() throws {
        let configuration = try ReceiverConfiguration.parse(toml: """
            pin = "0427"
            access = "paired"
            audio_takeover = "refuse"
            video_takeover = "refuse"
            video_max_resolution = "1920X1080"
            mpris = "system"
            audio_output = "alsasink device=hw:0"
            """)
        #expect(configuration.pin == .fixed("0427") && configuration.access == .paired)
        #expect(configuration.audioTakeover == .refuse && configuration.videoTakeover == .refuse)
        #expect(configuration.videoMaxResolution == Resolution(width: 1920, height: 1080))
        #expect(configuration.nowPlaying.mpris == .system && configuration.audioOutput == .sink("alsasink device=hw:0"))
    }

    /// A card's mixer is on its control device: the card's part of the ALSA device name.
    @Test func theMixerIsOnTheCardOfTheALSADevice() throws {
        let configuration = try ReceiverConfiguration.parse(toml: """
            audio_output = "alsa:plughw:1,0"
            alsa_mixer = "PCM"
            audio_drift_correction = "resample"
            """)
        #expect(configuration.alsaMixer == "PCM" && configuration.audioDriftCorrection == .resample)
        #expect(configuration.audioOutput.mixerDevice == "hw:1")
        #expect(AudioOutput.alsa(device: "hw:CARD=Device,DEV=0").mixerDevice == "hw:CARD=Device")
        #expect(AudioOutput.alsa(device: "default").mixerDevice == "default")
        #expect(AudioOutput.sink("alsasink").mixerDevice == nil)
    }

    /// GStreamer's `pipewiresink` has no clock of its card: with PipeWire's ALSA plugin installed
    /// the room plays to the same node through it (which follows the card), saying so and what of
    /// the description it does not use; without, it plays as named and says how to follow the card.
    @Test func pipewiresinkPlaysThroughPipeWiresALSAPlugin() throws {
        let sink = try AudioOutput(parsing: "pipewiresink target-object=card0 client-name=box")
        let (output, note) = sink.followingTheCard(pipewireALSAPlugin: { true })
        #expect(output == .alsa(device: "pipewire:NODE=card0"))
        #expect(note?.contains("alsa:pipewire:NODE=card0") == true && note?.contains("not used: client-name=box") == true)
        #expect(try AudioOutput(parsing: "pipewiresink").followingTheCard(pipewireALSAPlugin: { true }).output == .alsa(device: "pipewire"))
        let without = sink.followingTheCard(pipewireALSAPlugin: { false })
        #expect(without.output == sink && without.note?.contains("install pipewire-alsa") == true)
        let alsasink = try AudioOutput(parsing: "alsasink device=hw:0")
        #expect(alsasink.followingTheCard(pipewireALSAPlugin: { true }).output == alsasink)
        #expect(alsasink.followingTheCard(pipewireALSAPlugin: { true }).note == nil)
    }

    private func error(_ toml: String) -> ConfigurationError? {
        do {
            _ = try ReceiverConfiguration.parse(toml: toml)
            return nil
        } catch {
            return error
        }
    }

    @Test func unknownKeyIsNamedWithTheAllowedKeys() throws {
        let problem = try #require(error("prot = 7000"))
        #expect(problem.key == "prot")
        #expect(problem.description.contains("unknown key"))
        #expect(problem.description.contains("port"))
    }

    @Test(arguments: [
        ("port = \"7000\"", "port", "integer"),
        ("port = 70000", "port", "0 to 65535"),
        ("video = \"yes\"", "video", "true or false"),
        ("interfaces = \"lo\"", "interfaces", "array"),
        ("interfaces = [\"no-such-if0\"]", "interfaces", "does not exist"),
        ("name = \"\"", "name", "1 to 50 bytes"),
        ("name = 5", "name", "string"),
        ("log_level = \"loud\"", "log_level", "one of trace"),
        ("state_dir = \"relative/path\"", "state_dir", "absolute"),
        ("audio_output = \"\"", "audio_output", "sink"),
        ("audio_output = \"raw:\"", "audio_output", "path"),
        ("video_sink = \" \"", "video_sink", "sink"),
        ("pin = \"12345\"", "pin", "four digits"),
        ("access = \"everyone\"", "access", "\"paired\""),
        ("audio_takeover = \"maybe\"", "audio_takeover", "\"refuse\""),
        ("video_takeover = true", "video_takeover", "got true"),
        ("video_max_resolution = \"big\"", "video_max_resolution", "WIDTHxHEIGHT"),
        ("password = \"\(String(repeating: "p", count: 65))\"", "password", "at most 64 bytes"),
        ("request_timeout = 0", "request_timeout", "got 0"),
        ("audio_drift_correction = \"soxr\"", "audio_drift_correction", "\"resample\""),
        ("alsa_mixer = \"PCM\"", "alsa_mixer", "alsa:DEVICE"),
    ])
    func badValuesNameTheKeyAndWhatIsAllowed(toml: String, key: String, hint: String) throws {
        let problem = try #require(error(toml))
        #expect(problem.key == key)
        #expect(problem.description.contains(hint), "\(problem)")
    }

    @Test func syntaxErrorsGiveTheLine() throws {
        let problem = try #require(error("name = \"ok\"\nport = = 1\n"))
        #expect(problem.key == nil)
        #expect(problem.description.contains("line 2"), "\(problem)")
    }

    @Test func missingFileIsAnErrorOnlyWhenNamed() throws {
        #expect(throws: ConfigurationError.self) {
            try ReceiverConfiguration.load(path: "/nonexistent/airplayd.toml", required: true)
        }
        #expect(try ReceiverConfiguration.load(path: "/nonexistent/airplayd.toml", required: false).port == 7000)
    }

    /// `man airplayd.toml` is written from the key table: every key, what it takes, its rule.
    @Test func theManualPageListsEveryKeyFromTheTable() {
        let page = ConfigurationManual.page(date: "November 28, 2026")
        #expect(page.contains(".Dt AIRPLAYD.TOML 5") && page.contains(".Dd November 28, 2026"))
        for key in ConfigurationKey.all {
            #expect(page.contains(".It Ic \(key.name)\n"), "\(key.name) is not in the page")
            #expect(page.contains(ConfigurationManual.escaped(key.summary)), "\(key.name)'s summary is not in the page")
        }
        // No line of text may start a request by accident.
        #expect(page.split(separator: "\n").allSatisfy { !$0.hasPrefix("'") })
    }

    @Test func exampleFileDocumentsEveryKeyAndParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let example = try String(contentsOf: root.appendingPathComponent("systemd/airplayd.toml"), encoding: .utf8)
        let reference = try String(contentsOf: root.appendingPathComponent("docs/airplayd.md"), encoding: .utf8)
        for key in ConfigurationKey.all {
            #expect(example.contains(key.name), "systemd/airplayd.toml does not document \(key.name)")
            #expect(reference.contains("`\(key.name)`"), "docs/airplayd.md does not document \(key.name)")
        }
        // The example, with its commented defaults switched on, is a valid configuration.
        let uncommented = example.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let text = String(line)
            guard text.hasPrefix("#"), let first = ConfigurationKey.all.first(where: { text.hasPrefix("# \($0.name) =") || text.hasPrefix("#\($0.name) =") }) else { return text }
            _ = first
            return text.drop { $0 == "#" || $0 == " " }.description
        }.joined(separator: "\n")
        _ = try ReceiverConfiguration.parse(toml: uncommented.replacingOccurrences(of: "interfaces = [\"eth0\"]", with: "interfaces = []"))
    }

    @Test func reloadReportsKeysThatNeedARestart() {
        var old = ReceiverConfiguration.defaults
        old.name = "A"
        var new = old
        new.videoEnabled = false
        #expect(ReceiverDaemon.keysNeedingRestart(old: old, new: new).isEmpty)
        new.name = "B"
        new.port = 7001
        #expect(ReceiverDaemon.keysNeedingRestart(old: old, new: new) == ["name", "port"])
    }

    /// The surfaces start once, so a reload that changes them says so (it said nothing before
    /// the key table carried each key's reload rule).
    @Test func aReloadChangingTheSurfacesSaysTheyNeedARestart() {
        let old = ReceiverConfiguration.defaults
        var new = old
        new.nowPlaying.mpris = .session
        new.nowPlaying.webListen = "127.0.0.1:8080"
        #expect(ReceiverDaemon.keysNeedingRestart(old: old, new: new) == ["mpris", "web_listen"])
    }

    /// Every key but `video` and `audio` needs a restart to change.
    @Test func onlyVideoAndAudioApplyOnReload() {
        #expect(ConfigurationKey.all.filter(\.appliesOnReload).map(\.name) == ["video", "audio"])
    }
}
