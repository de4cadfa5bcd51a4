import AirPlayHLS
import AirPlayReceiver
import AirPlayWire
import FoundationEssentials
import Glibc
import Logging

/// Everything airplayd is configured with: the TOML file, then command-line overrides.
///
/// Every key is documented in `systemd/airplayd.toml` and `docs/airplayd.md`; `ConfigurationKey.all`
/// is the single list both the parser and the documentation test read.
public struct ReceiverConfiguration: Hashable, Sendable {
    /// The name shown in senders' pickers (`name`); defaults to the host name.
    public var name: String
    /// The TCP control port for HTTP and RTSP (`port`); 0 picks a free port.
    public var port: Int
    /// Interfaces to announce on (`interfaces`); empty means every interface avahi-daemon uses.
    public var interfaces: [String]
    /// Whether video playback is offered (`video`).
    public var videoEnabled: Bool
    /// Whether RAOP audio is offered (`audio`).
    public var audioEnabled: Bool
    /// Audio output: a GStreamer sink description or `raw:PATH` (`audio_output`).
    public var audioOutput: AudioOutput
    /// Video sink: a GStreamer sink description (`video_sink`).
    public var videoSink: String
    /// Where the device id and other state are kept (`state_dir`).
    public var stateDirectory: String
    /// The least severe level logged (`log_level`).
    public var logLevel: Logger.Level
    /// Whether a `/play` from another sender replaces the current video or is refused (`video_takeover`).
    public var videoTakeover: VideoTakeover = .replace
    /// Refuse media URLs whose host is a loopback or link-local address (`video_refuse_local_urls`).
    public var videoRefuseLocalURLs: Bool = false
    /// Whether an ANNOUNCE from another sender takes over the audio or gets 453 (`audio_takeover`).
    public var audioTakeover: AudioTakeover = .replace
    /// How each room follows a drifting sound card or sender clock (`audio_drift_correction`).
    public var audioDriftCorrection: DriftCorrectionMode = .stuff
    /// The sound card's mixer element the sender's volume goes to (`alsa_mixer`, e.g. "PCM");
    /// empty: volume scales the samples.
    public var alsaMixer: String = ""
    /// The control device that element is on (`alsa_mixer_device`); empty: the card of `alsa:DEVICE`.
    public var alsaMixerDevice: String = ""
    /// The password audio senders must give (`password`); empty means none.
    public var password: String = ""
    /// Seconds without RTSP or RTP after which an audio session ends (`audio_session_timeout`).
    public var audioSessionTimeout: Int = 30
    /// Control connections served at once (`max_connections`); more get 503.
    public var maxConnections: Int = 32
    /// Seconds a request may take to arrive whole (`request_timeout`); then 408 and close.
    public var requestTimeout: Int = 10
    /// Seconds a control connection may sit with nothing in flight (`idle_timeout`).
    public var idleTimeout: Int = 120
    /// The largest video the display shows (`video_max_resolution`): HLS variants above it are left out.
    public var videoMaxResolution = Resolution(width: 3840, height: 2160)
    /// Whether the display shows HDR (`video_hdr`): PQ and HLG variants are left out when not.
    public var videoHDR: Bool = false
    /// Audio languages for a video's renditions, a colon list most wanted first (`video_language`).
    public var videoLanguage: String = ""
    /// Subtitle languages for a video's renditions, a colon list (`video_subtitles`); empty: as the master says.
    public var videoSubtitles: String = ""
    /// Whether AC-3/E-AC-3 may pass through to the audio output undecoded (`audio_passthrough`).
    public var audioPassthrough: Bool = false
    /// Extra certificate authorities (PEM) trusted for HTTPS playlists and keys (`tls_ca_file`).
    public var tlsCAFile: String = ""
    /// The pair-setup PIN (`pin`): four digits, or `random` for a new one per setup.
    public var pin: PairingPIN = .random
    /// Who may change what plays (`access`): `anyone`, `password` or `paired`.
    public var access: AccessControl = .anyone
    /// Whether AirPlay 2 is served and advertised beside AirPlay 1 (`airplay2`, `--airplay2`).
    public var airPlay2: Bool = true
    /// Whether AirPlay 2 senders' PTP clocks are followed on UDP 319/320 (`ptp`, `--ptp`; with `airplay2`).
    public var ptp: Bool = true
    /// Whether buffered AirPlay 2 audio is offered (feature 40) while PTP runs (`buffered_audio`,
    /// `--buffered-audio`): off, AirPlay 2 senders stream realtime audio on PTP instead, as to
    /// speakers without a buffer.
    public var bufferedAudio: Bool = true
    /// Whether `POST /fp-setup` is answered and feature bit 14 set (`fp_setup`, `--fp-setup`;
    /// with `airplay2`): iOS makes this handshake before it plays to an AirPlay 2 receiver.
    public var fairPlaySetup: Bool = true
    /// The instance name when several daemons run on one box, one per zone (`instance`,
    /// `--instance`; the template unit passes `%i`); nil for a lone daemon.
    public var instance: String?
    /// The one IP address the control port listens on and the mDNS records point at (`address`,
    /// `--address`); nil listens on every address and publishes the box's host name.
    public var address: String?
    /// Now-playing surfaces and remote control (`mpris`, `metadata_pipe`, `[mqtt]`, `web_listen`).
    public var nowPlaying = NowPlayingSettings()

    /// The built-in defaults, used for every key the file leaves out.
    public static var defaults: ReceiverConfiguration {
        ReceiverConfiguration(
            name: Self.hostName(), port: 7000, interfaces: [], videoEnabled: true, audioEnabled: true,
            audioOutput: .sink("autoaudiosink"), videoSink: "autovideosink", stateDirectory: "/var/lib/airplayd",
            logLevel: .info)
    }

    /// The default configuration file.
    public static let defaultPath = "/etc/airplayd/airplayd.toml"

    /// A configuration from its parts.
    public init(name: String, port: Int, interfaces: [String], videoEnabled: Bool, audioEnabled: Bool,
                audioOutput: AudioOutput, videoSink: String, stateDirectory: String, logLevel: Logger.Level) {
        self.name = name
        self.port = port
        self.interfaces = interfaces
        self.videoEnabled = videoEnabled
        self.audioEnabled = audioEnabled
        self.audioOutput = audioOutput
        self.videoSink = videoSink
        self.stateDirectory = stateDirectory
        self.logLevel = logLevel
    }

    /// The machine's host name without its domain, or `airplayd` when it has none.
    public static func hostName() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
        return host.isEmpty || host == "localhost" ? "airplayd" : host
    }
}

/// A configuration problem: names the key and what is allowed. airplayd exits with 78 (EX_CONFIG).
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The offending key, when there is one.
    public var key: String?
    /// What is wrong and what is allowed.
    public var message: String

    /// An error for a key.
    public init(key: String?, message: String) {
        self.key = key
        self.message = message
    }

    /// `config key 'port': must be …`.
    public var description: String {
        if let key { return "config key '\(key)': \(message)" }
        return "config: \(message)"
    }

    /// The exit code for configuration errors (sysexits.h EX_CONFIG).
    public static let exitCode: Int32 = 78
}

extension ReceiverConfiguration {
    /// Loads a file over the defaults. A missing file is an error only when `required`
    /// (the user named it); the default path may be absent on a fresh box.
    public static func load(path: String, required: Bool) throws(ConfigurationError) -> ReceiverConfiguration {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw ConfigurationError(key: nil, message: "file \(path) does not exist") }
            return .defaults
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: nil, message: "file \(path) cannot be read")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(key: nil, message: "file \(path) is not UTF-8 text")
        }
        return try parse(toml: text, origin: path)
    }

    /// Parses TOML text over the defaults.
    public static func parse(toml text: String, origin: String = "config") throws(ConfigurationError) -> ReceiverConfiguration {
        let table: [String: TOMLDocument.Value]
        do {
            table = try TOMLDocument(parsing: text).root
        } catch {
            throw ConfigurationError(key: nil, message: "\(origin) \(error.description)")
        }
        var configuration = ReceiverConfiguration.defaults
        let known = ConfigurationKey.all.map(\.name)
        for key in table.keys.sorted() {
            guard let value = table[key] else { continue }
            guard known.contains(key) else {
                throw ConfigurationError(key: key, message: "unknown key; allowed keys: \(known.joined(separator: ", "))")
            }
            try ConfigurationKey.named[key]!.apply(&configuration, value)
        }
        try configuration.validate()
        return configuration
    }

    /// Checks every value against its rule; used after the file and again after command-line overrides.
    public func validate() throws(ConfigurationError) {
        let nameBytes = name.utf8.count
        // The RAOP instance name adds 13 bytes (`AABBCCDDEEFF@`) and a DNS label holds 63.
        guard (1...50).contains(nameBytes) else {
            throw ConfigurationError(key: "name", message: "must be a string of 1 to 50 bytes, got \(nameBytes) bytes")
        }
        guard !name.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) else {
            throw ConfigurationError(key: "name", message: "must not contain control characters")
        }
        guard (0...65535).contains(port) else {
            throw ConfigurationError(key: "port", message: "must be an integer from 0 to 65535, got \(port)")
        }
        for interface in interfaces where if_nametoindex(interface) == 0 {
            let existing = Self.existingInterfaces().joined(separator: ", ")
            throw ConfigurationError(key: "interfaces",
                                     message: "interface \"\(interface)\" does not exist; this machine has: \(existing)")
        }
        guard !videoSink.trimmingWhitespace().isEmpty else {
            throw ConfigurationError(key: "video_sink", message: "must be a GStreamer sink description, got an empty string")
        }
        if !tlsCAFile.isEmpty {
            guard tlsCAFile.hasPrefix("/"), FileManager.default.isReadableFile(atPath: tlsCAFile) else {
                throw ConfigurationError(key: "tls_ca_file", message: "must be an absolute path to a readable PEM file, got \"\(tlsCAFile)\"")
            }
        }
        if !alsaMixer.isEmpty {
            guard case .alsa = audioOutput else {
                throw ConfigurationError(key: "alsa_mixer", message: "needs audio_output = \"alsa:DEVICE\" (the card whose mixer it is), got \"\(audioOutput)\"")
            }
        }
        if access == .password, password.isEmpty {
            throw ConfigurationError(key: "access", message: "\"password\" needs a password (config key 'password')")
        }
        if let instance {
            let allowed = instance.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }
            guard (1...32).contains(instance.unicodeScalars.count), allowed else {
                throw ConfigurationError(key: "instance", message: "must be 1 to 32 letters, digits, '-', '_' or '.', got \"\(instance.prefix(40))\"")
            }
        }
        if let address {
            var buffer = [UInt8](repeating: 0, count: 16)
            guard inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1 else {
                throw ConfigurationError(key: "address", message: "must be an IPv4 or IPv6 address of this box, got \"\(address.prefix(60))\"")
            }
        }
        try nowPlaying.validate()
        guard stateDirectory.hasPrefix("/") else {
            throw ConfigurationError(key: "state_dir", message: "must be an absolute path, got \"\(stateDirectory)\"")
        }
    }

    private static func existingInterfaces() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/net"))?.sorted() ?? []
    }
}
