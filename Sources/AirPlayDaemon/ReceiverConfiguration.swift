import AirPlayReceiver
import AirPlayWire
import FoundationEssentials
import Glibc
import Logging

/// Everything airplayd is configured with: the TOML file, then command-line overrides.
///
/// Every key is documented in `systemd/airplayd.toml` and the README; `ConfigurationKey.all`
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
    public var audioOutput: String
    /// Video sink: a GStreamer sink description (`video_sink`).
    public var videoSink: String
    /// Where the device id and other state are kept (`state_dir`).
    public var stateDirectory: String
    /// The least severe level logged (`log_level`).
    public var logLevel: Logger.Level
    /// Whether a `/play` from another sender replaces the current video or is refused (`video_takeover`).
    public var videoTakeover: String = "replace"
    /// Refuse media URLs whose host is a loopback or link-local address (`video_refuse_local_urls`).
    public var videoRefuseLocalURLs: Bool = false
    /// Whether an ANNOUNCE from another sender takes over the audio or gets 453 (`audio_takeover`).
    public var audioTakeover: String = "replace"
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
    public var videoMaxResolution: String = "3840x2160"
    /// Whether the display shows HDR (`video_hdr`): PQ and HLG variants are left out when not.
    public var videoHDR: Bool = false
    /// Whether AC-3/E-AC-3 may pass through to the audio output undecoded (`audio_passthrough`).
    public var audioPassthrough: Bool = false
    /// Extra certificate authorities (PEM) trusted for HTTPS playlists and keys (`tls_ca_file`).
    public var tlsCAFile: String = ""
    /// The pair-setup PIN (`pin`): four digits, or `random` for a new one per setup.
    public var pin: String = "random"
    /// Who may change what plays (`access`): `anyone`, `password` or `paired`.
    public var access: String = "anyone"
    /// Whether AirPlay 2 is served and advertised beside AirPlay 1 (`airplay2`, `--airplay2`).
    public var airPlay2: Bool = true
    /// Whether AirPlay 2 senders' PTP clocks are followed on UDP 319/320 (`ptp`, `--ptp`; with `airplay2`).
    public var ptp: Bool = true
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
            audioOutput: "autoaudiosink", videoSink: "autovideosink", stateDirectory: "/var/lib/airplayd",
            logLevel: .info)
    }

    /// The default configuration file.
    public static let defaultPath = "/etc/airplayd/airplayd.toml"

    /// A configuration from its parts.
    public init(name: String, port: Int, interfaces: [String], videoEnabled: Bool, audioEnabled: Bool,
                audioOutput: String, videoSink: String, stateDirectory: String, logLevel: Logger.Level) {
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

/// One documented configuration key: its name, type, default and rule.
public struct ConfigurationKey: Sendable {
    /// The TOML key.
    public let name: String
    /// The TOML type and what values are allowed, as shown in error messages.
    public let allowed: String
    /// One line of documentation.
    public let summary: String
    /// Whether `systemctl reload` applies a change of this key to the running daemon; a change
    /// of any other key is logged as needing a restart.
    public let appliesOnReload: Bool
    /// Whether two configurations differ in this key.
    let differs: @Sendable (ReceiverConfiguration, ReceiverConfiguration) -> Bool

    /// A key stored at `field`.
    init<Value: Equatable & Sendable>(name: String, field: KeyPath<ReceiverConfiguration, Value> & Sendable, appliesOnReload: Bool = false,
                           allowed: String, summary: String) {
        self.name = name
        self.allowed = allowed
        self.summary = summary
        self.appliesOnReload = appliesOnReload
        differs = { old, new in old[keyPath: field] != new[keyPath: field] }
    }

    /// Every key airplayd accepts.
    public static let all: [ConfigurationKey] = [
        .init(name: "name", field: \.name, allowed: "a string of 1 to 50 bytes",
              summary: "Name shown in senders' device pickers; default: the host name."),
        .init(name: "port", field: \.port, allowed: "an integer from 0 to 65535",
              summary: "TCP port for HTTP and RTSP control sessions; default 7000; 0 picks a free port."),
        .init(name: "interfaces", field: \.interfaces, allowed: "an array of existing network interface names",
              summary: "Interfaces to announce the receiver on; default [] = every interface avahi-daemon uses."),
        .init(name: "video", field: \.videoEnabled, appliesOnReload: true, allowed: "true or false",
              summary: "Offer video playback (features bits 0, 3, 4); default true."),
        .init(name: "audio", field: \.audioEnabled, appliesOnReload: true, allowed: "true or false",
              summary: "Offer RAOP audio (the _raop._tcp service, features bit 9 and metadata bits); default true."),
        .init(name: "audio_output", field: \.audioOutput, allowed: "a GStreamer sink description or raw:PATH",
              summary: "Where audio goes: autoaudiosink (default), alsasink device=hw:0, pulsesink, or raw:PATH for S16LE PCM."),
        .init(name: "video_sink", field: \.videoSink, allowed: "a GStreamer sink description",
              summary: "Where video goes: autovideosink (default), kmssink on a console-only box, fakesink sync=true headless."),
        .init(name: "state_dir", field: \.stateDirectory, allowed: "an absolute path",
              summary: "Directory for persistent state such as the device id; default /var/lib/airplayd."),
        .init(name: "log_level", field: \.logLevel, allowed: "one of trace, debug, info, notice, warning, error, critical",
              summary: "Least severe level logged; default info."),
        .init(name: "video_takeover", field: \.videoTakeover, allowed: "\"replace\" or \"refuse\"",
              summary: "A /play from another sender replaces the current video (default, as Apple TV does) or is refused with 409."),
        .init(name: "video_refuse_local_urls", field: \.videoRefuseLocalURLs, allowed: "true or false",
              summary: "Refuse media URLs whose host resolves to a loopback or link-local address; default false."),
        .init(name: "password", field: \.password, allowed: "a string of at most 64 bytes (empty: no password)",
              summary: "Password AirPlay audio senders must give (RFC 2617 Digest, realm raop); advertised as pw=true."),
        .init(name: "audio_session_timeout", field: \.audioSessionTimeout, allowed: "an integer from 2 to 3600 (seconds)",
              summary: "An audio sender that sends neither RTSP nor RTP for this long is dropped and the output freed; default 30."),
        .init(name: "max_connections", field: \.maxConnections, allowed: "an integer from 2 to 1024",
              summary: "Control connections served at once; the next one gets 503 Service Unavailable; default 32."),
        .init(name: "request_timeout", field: \.requestTimeout, allowed: "an integer from 1 to 300 (seconds)",
              summary: "A request must arrive whole this long after its first byte, or 408 and the connection closes; default 10."),
        .init(name: "idle_timeout", field: \.idleTimeout, allowed: "an integer from 5 to 86400 (seconds)",
              summary: "A control connection with nothing in flight (and no audio session) closes after this long; default 120."),
        .init(name: "audio_takeover", field: \.audioTakeover, allowed: "\"replace\" or \"refuse\"",
              summary: "An audio sender arriving while another streams takes over (default) or is refused with 453."),
        .init(name: "video_max_resolution", field: \.videoMaxResolution, allowed: "WIDTHxHEIGHT, e.g. \"1920x1080\"",
              summary: "The largest video the display shows; HLS variants above it are not played; default 3840x2160."),
        .init(name: "video_hdr", field: \.videoHDR, allowed: "true or false",
              summary: "Whether the display shows HDR; without it, PQ and HLG HLS variants are not played; default false."),
        .init(name: "audio_passthrough", field: \.audioPassthrough, allowed: "true or false",
              summary: "Whether AC-3/E-AC-3 may go to the audio output undecoded (an HDMI receiver); default false: only variants this box decodes."),
        .init(name: "tls_ca_file", field: \.tlsCAFile, allowed: "an absolute path to a PEM file, or empty",
              summary: "Extra certificate authorities trusted for HTTPS playlists and keys, besides the system's; default none."),
        .init(name: "pin", field: \.pin, allowed: "four digits, or \"random\"",
              summary: "PIN a sender types to pair (pair-setup); random (default) makes a new one per pairing, shown in the log and /now-playing."),
        .init(name: "access", field: \.access, allowed: "\"anyone\", \"password\" or \"paired\"",
              summary: "Who may play: anyone (default), senders with the password, or only paired senders (others get 470)."),
        .init(name: "airplay2", field: \.airPlay2, allowed: "true or false",
              summary: "Serve AirPlay 2 beside AirPlay 1 (pairing, plist sessions, realtime and, with ptp, buffered audio, video; features 38, 43, 46, 48, and 40, 41, 47 with PTP); default true."),
        .init(name: "ptp", field: \.ptp, allowed: "true or false",
              summary: "With airplay2: follow AirPlay 2 senders' PTP clocks on UDP 319 and 320 (needs CAP_NET_BIND_SERVICE, which the unit grants); default true."),
        .init(name: "fp_setup", field: \.fairPlaySetup, allowed: "true or false",
              summary: "With airplay2: answer POST /fp-setup, the fixed FairPlay handshake iOS makes before playing to an AirPlay 2 receiver (feature 14; it decrypts nothing); default true."),
        .init(name: "address", field: \.address, allowed: "an IPv4 or IPv6 address of this box",
              summary: "Listen on this address only and announce it under a host name of its own, so senders that tell devices apart by address (pyatv) see each zone of a box as its own device; default none: every address."),
        .init(name: "instance", field: \.instance, allowed: "1 to 32 letters, digits, '-', '_' or '.'",
              summary: "Instance name when several airplayd run on one box (airplayd@NAME.service sets it): the device id is derived from the MAC and this name; default none."),
        .init(name: "mpris", field: \.nowPlaying.mpris, allowed: "\"off\", \"system\" or \"session\"",
              summary: "Show what plays and take play/pause/next/seek/volume over MPRIS 2 (playerctl, desktop widgets) on the system or session D-Bus; default off."),
        .init(name: "metadata_pipe", field: \.nowPlaying.metadataPipe, allowed: "an absolute path, or empty",
              summary: "Write shairport-sync's metadata stream (core DMAP and ssnc items, cover art) to this FIFO for its existing readers; default none."),
        .init(name: "web_listen", field: \.nowPlaying.webListen, allowed: "ADDRESS:PORT, or empty",
              summary: "Serve the now-playing page (cover, title, progress, controls, pairing PIN) here, e.g. 127.0.0.1:8080 for a kiosk browser; default none."),
        .init(name: "mqtt", field: \.nowPlaying.mqtt, allowed: "a table with host, port, topic, username, password, tls_ca_file, discovery_prefix",
              summary: "Publish now-playing and take commands on <topic>/remote through this MQTT broker, with Home Assistant discovery; default none."),
    ]
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
            try configuration.apply(key: key, value: value)
        }
        try configuration.validate()
        return configuration
    }

    private mutating func apply(key: String, value: TOMLDocument.Value) throws(ConfigurationError) {
        let rule = ConfigurationKey.all.first { $0.name == key }!.allowed
        func wrongType() -> ConfigurationError {
            ConfigurationError(key: key, message: "must be \(rule), got \(Self.describe(value))")
        }
        /// An integer key within its range.
        func integer(in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            guard case .integer(let number) = value else { throw wrongType() }
            guard range.contains(number) else { throw ConfigurationError(key: key, message: "must be \(rule), got \(number)") }
            return number
        }
        switch key {
        case "name":
            guard case .string(let text) = value else { throw wrongType() }
            name = text
        case "port":
            guard case .integer(let number) = value else { throw wrongType() }
            port = number
        case "interfaces":
            guard case .array(let array) = value else { throw wrongType() }
            var names: [String] = []
            for item in array {
                guard case .string(let text) = item else { throw wrongType() }
                names.append(text)
            }
            interfaces = names
        case "video":
            guard case .bool(let flag) = value else { throw wrongType() }
            videoEnabled = flag
        case "audio":
            guard case .bool(let flag) = value else { throw wrongType() }
            audioEnabled = flag
        case "audio_output":
            guard case .string(let text) = value else { throw wrongType() }
            audioOutput = text
        case "video_sink":
            guard case .string(let text) = value else { throw wrongType() }
            videoSink = text
        case "state_dir":
            guard case .string(let text) = value else { throw wrongType() }
            stateDirectory = text
        case "log_level":
            guard case .string(let text) = value else { throw wrongType() }
            guard let level = Logger.Level(rawValue: text) else {
                throw ConfigurationError(key: key, message: "must be \(rule), got \"\(text)\"")
            }
            logLevel = level
        case "video_takeover":
            guard case .string(let text) = value else { throw wrongType() }
            guard text == "replace" || text == "refuse" else {
                throw ConfigurationError(key: key, message: "must be \(rule), got \"\(text)\"")
            }
            videoTakeover = text
        case "audio_session_timeout":
            audioSessionTimeout = try integer(in: 2...3600)
        case "max_connections":
            maxConnections = try integer(in: 2...1024)
        case "request_timeout":
            requestTimeout = try integer(in: 1...300)
        case "idle_timeout":
            idleTimeout = try integer(in: 5...86400)
        case "password":
            guard case .string(let text) = value else { throw wrongType() }
            guard text.utf8.count <= 64 else { throw ConfigurationError(key: key, message: "must be at most 64 bytes") }
            password = text
        case "audio_takeover":
            guard case .string(let text) = value else { throw wrongType() }
            guard text == "replace" || text == "refuse" else {
                throw ConfigurationError(key: key, message: "must be \(rule), got \"\(text)\"")
            }
            audioTakeover = text
        case "video_refuse_local_urls":
            guard case .bool(let flag) = value else { throw wrongType() }
            videoRefuseLocalURLs = flag
        case "video_max_resolution":
            guard case .string(let text) = value else { throw wrongType() }
            videoMaxResolution = text
        case "video_hdr":
            guard case .bool(let flag) = value else { throw wrongType() }
            videoHDR = flag
        case "audio_passthrough":
            guard case .bool(let flag) = value else { throw wrongType() }
            audioPassthrough = flag
        case "tls_ca_file":
            guard case .string(let text) = value else { throw wrongType() }
            tlsCAFile = text
        case "pin":
            guard case .string(let text) = value else { throw wrongType() }
            pin = text
        case "access":
            guard case .string(let text) = value else { throw wrongType() }
            access = text
        case "airplay2":
            guard case .bool(let flag) = value else { throw wrongType() }
            airPlay2 = flag
        case "instance":
            guard case .string(let text) = value else { throw wrongType() }
            instance = text
        case "address":
            guard case .string(let text) = value else { throw wrongType() }
            address = text
        case "ptp":
            guard case .bool(let flag) = value else { throw wrongType() }
            ptp = flag
        case "fp_setup":
            guard case .bool(let flag) = value else { throw wrongType() }
            fairPlaySetup = flag
        case "mpris":
            guard case .string(let text) = value else { throw wrongType() }
            nowPlaying.mpris = text
        case "metadata_pipe":
            guard case .string(let text) = value else { throw wrongType() }
            nowPlaying.metadataPipe = text
        case "web_listen":
            guard case .string(let text) = value else { throw wrongType() }
            nowPlaying.webListen = text
        case "mqtt":
            guard case .table(let table) = value else { throw wrongType() }
            nowPlaying.mqtt = try MQTTSettings.parse(table)
        default:
            throw ConfigurationError(key: key, message: "unknown key")
        }
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
        guard !audioOutput.trimmingWhitespace().isEmpty else {
            throw ConfigurationError(key: "audio_output", message: "must be a GStreamer sink description or raw:PATH, got an empty string")
        }
        if audioOutput.hasPrefix("raw:"), audioOutput.dropFirst(4).isEmpty {
            throw ConfigurationError(key: "audio_output", message: "raw: needs a file or FIFO path, e.g. raw:/tmp/airplay.pcm")
        }
        guard !videoSink.trimmingWhitespace().isEmpty else {
            throw ConfigurationError(key: "video_sink", message: "must be a GStreamer sink description, got an empty string")
        }
        let size = videoMaxResolution.lowercased().split(separator: "x")
        guard size.count == 2, let width = Int(size[0]), let height = Int(size[1]), width > 0, height > 0 else {
            throw ConfigurationError(key: "video_max_resolution", message: "must be WIDTHxHEIGHT, e.g. \"1920x1080\", got \"\(videoMaxResolution)\"")
        }
        if !tlsCAFile.isEmpty {
            guard tlsCAFile.hasPrefix("/"), FileManager.default.isReadableFile(atPath: tlsCAFile) else {
                throw ConfigurationError(key: "tls_ca_file", message: "must be an absolute path to a readable PEM file, got \"\(tlsCAFile)\"")
            }
        }
        guard pin == "random" || (pin.count == 4 && pin.allSatisfy { $0.isASCII && $0.isNumber }) else {
            throw ConfigurationError(key: "pin", message: "must be four digits or \"random\", got \"\(pin.prefix(20))\"")
        }
        guard AccessControl(rawValue: access) != nil else {
            throw ConfigurationError(key: "access", message: "must be \"anyone\", \"password\" or \"paired\", got \"\(access.prefix(20))\"")
        }
        if access == "password", password.isEmpty {
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

    private static func describe(_ value: TOMLDocument.Value) -> String {
        switch value {
        case .string(let text): "the string \"\(text)\""
        case .integer(let number): "the integer \(number)"
        case .bool(let flag): "\(flag)"
        case .float(let number): "the number \(number)"
        case .array: "an array"
        case .table: "a table"
        }
    }
}
