import AirPlayHLS
import AirPlayReceiver
import Logging

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
    /// Reads the key's TOML value into a configuration, or says what is wrong with it.
    let apply: @Sendable (inout ReceiverConfiguration, TOMLDocument.Value) throws(ConfigurationError) -> Void

    /// A key stored at `field`, read from TOML by `read`.
    init<Value: Equatable & Sendable>(name: String, field: WritableKeyPath<ReceiverConfiguration, Value> & Sendable, appliesOnReload: Bool = false,
                                      allowed: String, summary: String, read: ConfigurationReader<Value>) {
        self.name = name
        self.allowed = allowed
        self.summary = summary
        self.appliesOnReload = appliesOnReload
        differs = { old, new in old[keyPath: field] != new[keyPath: field] }
        apply = { configuration, value throws(ConfigurationError) in
            do throws(ConfigurationReader<Value>.Refusal) {
                configuration[keyPath: field] = try read.read(value)
            } catch {
                switch error {
                case .wrongType: throw ConfigurationError(key: name, message: "must be \(allowed), got \(value.shownInErrors)")
                case .notAllowed(let shown): throw ConfigurationError(key: name, message: "must be \(allowed), got \(shown)")
                case .message(let message): throw ConfigurationError(key: name, message: message)
                case .error(let error): throw error
                }
            }
        }
    }

    /// The keys by name.
    static let named = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// Every key airplayd accepts.
    public static let all: [ConfigurationKey] = [
        .init(name: "name", field: \.name, allowed: "a string of 1 to 50 bytes",
              summary: "Name shown in senders' device pickers; default: the host name.", read: .string),
        .init(name: "port", field: \.port, allowed: "an integer from 0 to 65535",
              summary: "TCP port for HTTP and RTSP control sessions; default 7000; 0 picks a free port.", read: .integer(in: 0...65535)),
        .init(name: "interfaces", field: \.interfaces, allowed: "an array of existing network interface names",
              summary: "Interfaces to announce the receiver on; default [] = every interface avahi-daemon uses.", read: .strings),
        .init(name: "video", field: \.videoEnabled, appliesOnReload: true, allowed: "true or false",
              summary: "Offer video playback (features bits 0, 3, 4); default true.", read: .bool),
        .init(name: "audio", field: \.audioEnabled, appliesOnReload: true, allowed: "true or false",
              summary: "Offer RAOP audio (the _raop._tcp service, features bit 9 and metadata bits); default true.", read: .bool),
        .init(name: "audio_output", field: \.audioOutput, allowed: "a GStreamer sink description, alsa:DEVICE or raw:PATH",
              summary: "Where audio goes: autoaudiosink (default), alsa:hw:CARD=Device (ALSA directly, on the card's own clock), alsasink device=hw:0, pulsesink, or raw:PATH for S16LE PCM.", read: .audioOutput),
        .init(name: "audio_drift_correction", field: \.audioDriftCorrection, allowed: "\"stuff\", \"resample\" or \"off\"",
              summary: "How a room follows its sound card's crystal and the sender's clock: stuff (default) adds or removes single frames where the audio is quietest, resample plays a packet a frame longer or shorter through libsoxr, off follows only jumps past 20 ms.", read: .choice),
        .init(name: "alsa_mixer", field: \.alsaMixer, allowed: "an ALSA simple mixer element name, or empty",
              summary: "With audio_output = \"alsa:DEVICE\": the card's mixer element the sender's volume sets (e.g. \"PCM\", \"Master\"), so samples reach the card bit-perfect; default none: volume scales the samples.", read: .string),
        .init(name: "alsa_mixer_device", field: \.alsaMixerDevice, allowed: "an ALSA control device name, or empty",
              summary: "The control device alsa_mixer is on; default: the card of audio_output (hw:1 for alsa:plughw:1,0).", read: .string),
        .init(name: "video_sink", field: \.videoSink, allowed: "a GStreamer sink description",
              summary: "Where video goes: autovideosink (default), kmssink on a console-only box, fakesink sync=true headless.", read: .string),
        .init(name: "state_dir", field: \.stateDirectory, allowed: "an absolute path",
              summary: "Directory for persistent state such as the device id; default /var/lib/airplayd.", read: .string),
        .init(name: "log_level", field: \.logLevel, allowed: "one of trace, debug, info, notice, warning, error, critical",
              summary: "Least severe level logged; default info.", read: .choice),
        .init(name: "video_takeover", field: \.videoTakeover, allowed: "\"replace\" or \"refuse\"",
              summary: "A /play from another sender replaces the current video (default, as Apple TV does) or is refused with 409.", read: .choice),
        .init(name: "video_refuse_local_urls", field: \.videoRefuseLocalURLs, allowed: "true or false",
              summary: "Refuse media URLs whose host resolves to a loopback or link-local address; default false.", read: .bool),
        .init(name: "password", field: \.password, allowed: "a string of at most 64 bytes (empty: no password)",
              summary: "Password AirPlay audio senders must give (RFC 2617 Digest, realm raop); advertised as pw=true.", read: .string(maxBytes: 64)),
        .init(name: "audio_session_timeout", field: \.audioSessionTimeout, allowed: "an integer from 2 to 3600 (seconds)",
              summary: "An audio sender that sends neither RTSP nor RTP for this long is dropped and the output freed; default 30.", read: .integer(in: 2...3600)),
        .init(name: "max_connections", field: \.maxConnections, allowed: "an integer from 2 to 1024",
              summary: "Control connections served at once; beyond them a newcomer takes the place of one that has sent nothing whole (a flood's first), else gets 503 Service Unavailable; default 32.", read: .integer(in: 2...1024)),
        .init(name: "request_timeout", field: \.requestTimeout, allowed: "an integer from 1 to 300 (seconds)",
              summary: "A request must arrive whole this long after its first byte, or 408 and the connection closes; default 10.", read: .integer(in: 1...300)),
        .init(name: "idle_timeout", field: \.idleTimeout, allowed: "an integer from 5 to 86400 (seconds)",
              summary: "A control connection with nothing in flight (and no audio session) closes after this long; default 120.", read: .integer(in: 5...86400)),
        .init(name: "audio_takeover", field: \.audioTakeover, allowed: "\"replace\" or \"refuse\"",
              summary: "An audio sender arriving while another streams takes over (default) or is refused with 453.", read: .choice),
        .init(name: "video_max_resolution", field: \.videoMaxResolution, allowed: "WIDTHxHEIGHT, e.g. \"1920x1080\"",
              summary: "The largest video the display shows; HLS variants above it are not played; default 3840x2160.", read: .text { Resolution($0) }),
        .init(name: "video_hdr", field: \.videoHDR, allowed: "true or false",
              summary: "Whether the display shows HDR; without it, PQ and HLG HLS variants are not played; default false.", read: .bool),
        .init(name: "video_language", field: \.videoLanguage, allowed: "language tags separated by colons (\"de:en\"), or empty",
              summary: "The audio language a video's master playlist plays in, most wanted first (pt matches pt-BR); default: the system's LANGUAGE or LANG, else the master's own default.",
              read: .text { RenditionLanguages.valid($0) }),
        .init(name: "video_subtitles", field: \.videoSubtitles, allowed: "language tags separated by colons, or empty",
              summary: "The subtitle language shown when a video's master playlist has it, most wanted first; default none: subtitles as the master says.",
              read: .text { RenditionLanguages.valid($0) }),
        .init(name: "audio_passthrough", field: \.audioPassthrough, allowed: "true or false",
              summary: "Whether AC-3/E-AC-3 may go to the audio output undecoded (an HDMI receiver); default false: only variants this box decodes.", read: .bool),
        .init(name: "tls_ca_file", field: \.tlsCAFile, allowed: "an absolute path to a PEM file, or empty",
              summary: "Extra certificate authorities trusted for HTTPS playlists and keys, besides the system's; default none.", read: .string),
        .init(name: "pin", field: \.pin, allowed: "four digits, or \"random\"",
              summary: "PIN a sender types to pair (pair-setup); random (default) makes a new one per pairing, shown in the log and /now-playing.", read: .text(PairingPIN.init(parsing:))),
        .init(name: "access", field: \.access, allowed: "\"anyone\", \"password\" or \"paired\"",
              summary: "Who may play: anyone (default), senders with the password, or only paired senders (others get 470).", read: .choice),
        .init(name: "airplay2", field: \.airPlay2, allowed: "true or false",
              summary: "Serve AirPlay 2 beside AirPlay 1 (pairing, plist sessions, realtime and, with ptp, buffered audio, video; features 38, 43, 46, 48, and 40, 41, 47 with PTP); default true.", read: .bool),
        .init(name: "ptp", field: \.ptp, allowed: "true or false",
              summary: "With airplay2: follow AirPlay 2 senders' PTP clocks on UDP 319 and 320 (needs CAP_NET_BIND_SERVICE, which the unit grants); default true.", read: .bool),
        .init(name: "buffered_audio", field: \.bufferedAudio, allowed: "true or false",
              summary: "With ptp: offer buffered AirPlay 2 audio (feature 40), seconds sent ahead for multi-room; false keeps PTP (41) and AirPlay 2 senders stream realtime instead, as to speakers without a buffer; default true.", read: .bool),
        .init(name: "fp_setup", field: \.fairPlaySetup, allowed: "true or false",
              summary: "With airplay2: answer POST /fp-setup, the fixed FairPlay handshake iOS makes before playing to an AirPlay 2 receiver (feature 14; it decrypts nothing); default true.", read: .bool),
        .init(name: "address", field: \.address, allowed: "an IPv4 or IPv6 address of this box",
              summary: "Listen on this address only and announce it under a host name of its own, so senders that tell devices apart by address (pyatv) see each zone of a box as its own device; default none: every address.", read: .optionalString),
        .init(name: "instance", field: \.instance, allowed: "1 to 32 letters, digits, '-', '_' or '.'",
              summary: "Instance name when several airplayd run on one box (airplayd@NAME.service sets it): the device id is derived from the MAC and this name; default none.", read: .optionalString),
        .init(name: "mpris", field: \.nowPlaying.mpris, allowed: "\"off\", \"system\" or \"session\"",
              summary: "Show what plays and take play/pause/next/seek/volume over MPRIS 2 (playerctl, desktop widgets) on the system or session D-Bus; default off.", read: .choice),
        .init(name: "metadata_pipe", field: \.nowPlaying.metadataPipe, allowed: "an absolute path, or empty",
              summary: "Write shairport-sync's metadata stream (core DMAP and ssnc items, cover art) to this FIFO for its existing readers; default none.", read: .string),
        .init(name: "web_listen", field: \.nowPlaying.webListen, allowed: "ADDRESS:PORT, or empty",
              summary: "Serve the now-playing page (cover, title, progress, controls, pairing PIN) here, e.g. 127.0.0.1:8080 for a kiosk browser; default none.", read: .string),
        .init(name: "mqtt", field: \.nowPlaying.mqtt, allowed: "a table with host, port, topic, username, password, tls_ca_file, discovery_prefix",
              summary: "Publish now-playing and take commands on <topic>/remote through this MQTT broker, with Home Assistant discovery; default none.", read: .mqtt),
    ]
}

