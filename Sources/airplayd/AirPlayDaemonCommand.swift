import AirPlayDaemon
import AirPlayWire
import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import ServiceLifecycle

/// `airplayd`: the AirPlay receiver daemon.
@main
struct AirPlayDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "airplayd",
        abstract: "AirPlay receiver: plays video URLs and RAOP audio sent from AirPlay senders.",
        discussion: """
            Settings come from the TOML file (default \(ReceiverConfiguration.defaultPath)); flags override it. Exit code 78 means a configuration error.
            `airplayd pairings list|remove ID|clear` manages the senders paired with this box (see `airplayd pairings --help`).
            """,
        version: SwiftAirPlay.version)

    /// `airplayd pairings …` goes to its own command: its `--state-dir` must not be taken for the daemon's.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == PairingsCommand.configuration.commandName {
            PairingsCommand.main(Array(arguments.dropFirst()))
            return
        }
        do {
            var command = try parseAsRoot(arguments)
            if let daemon = command as? AirPlayDaemonCommand {
                try await daemon.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    @Option(name: .long, help: "Configuration file (TOML).")
    var config: String?

    @Option(name: .long, help: "Device name shown in senders' pickers.")
    var name: String?

    @Option(name: .long, help: "TCP control port (0 = any free port).")
    var port: Int?

    @Option(name: .customLong("interface"), help: "Announce on this interface (repeatable).")
    var interfaces: [String] = []

    @Option(name: .long, help: "Video: on or off.")
    var video: Toggle?

    @Option(name: .long, help: "Audio: on or off.")
    var audio: Toggle?

    @Option(name: .long, help: "AirPlay 2 (pairing, plist sessions, ChaCha20 audio) beside AirPlay 1: on or off.")
    var airplay2: Toggle?

    @Option(name: .customLong("audio-output"), help: "alsa:DEVICE, a GStreamer audio sink description, or raw:PATH.")
    var audioOutput: String?

    @Option(name: .customLong("audio-drift-correction"), help: "Following a drifting card or sender: stuff, resample or off.")
    var audioDriftCorrection: String?

    @Option(name: .customLong("alsa-mixer"), help: "With --audio-output alsa:DEVICE: the card's mixer element for volume (e.g. PCM).")
    var alsaMixer: String?

    @Option(name: .customLong("video-sink"), help: "GStreamer video sink description.")
    var videoSink: String?

    @Option(name: .customLong("state-dir"), help: "Directory for persistent state (device id).")
    var stateDir: String?

    @Option(name: .long, help: "With --airplay2 on: follow senders' PTP clocks on UDP 319/320: on or off.")
    var ptp: Toggle?

    @Option(name: .customLong("buffered-audio"), help: "With PTP: offer buffered AirPlay 2 audio (off: senders stream realtime on PTP): on or off.")
    var bufferedAudio: Toggle?

    @Option(name: .customLong("fp-setup"), help: "With --airplay2 on: answer POST /fp-setup, the FairPlay handshake iOS makes first: on or off.")
    var fpSetup: Toggle?

    @Option(name: .long, help: "Listen on this IP address only and announce it under a host name of its own (one zone of several).")
    var address: String?

    @Option(name: .long, help: "Instance name when several airplayd run on one box (one per zone); the device id derives from it.")
    var instance: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Flag(name: .customLong("probe-media"), help: .hidden)
    var probeMedia = false

    @Flag(name: .customLong("video-player"), help: .hidden)
    var videoPlayer = false

    @Flag(name: .customLong("audio-decoder"), help: .hidden)
    var audioDecoder = false

    @Option(name: .customLong("probe-sink"), help: .hidden)
    var probeSinks: [String] = []

    /// Prints airplayd.toml(5) for `tools/man-pages` (the date its `.Dd` shows) and exits.
    @Option(name: .customLong("print-configuration-manual"), help: .hidden)
    var configurationManualDate: String?

    enum Toggle: String, ExpressibleByArgument { case on, off }

    func run() async throws {
        if let date = configurationManualDate {
            print(ConfigurationManual.page(date: date), terminator: "")
            return
        }
        if videoPlayer {
            // The daemon's video player process (see VideoPlayerHost): its socket is descriptor 3.
            VideoPlayerProcess.run()
        }
        if audioDecoder {
            // An AAC stream's decoder process (see ChildAudioDecoder): its socket is descriptor 3.
            AudioDecoderProcess.run()
        }
        if probeMedia {
            // The child the daemon asks what GStreamer can do (see MediaProbe).
            print(MediaProbe.here(sinks: probeSinks).json)
            return
        }
        let settings: ReceiverConfiguration
        do {
            settings = try resolveConfiguration()
        } catch {
            let message = Array("airplayd: \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            throw ExitCode(ConfigurationError.exitCode)
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in JournalAwareLogHandler(label: label, level: level) }
        let logger = Logger(label: "airplayd")
        OpenFileLimit.raise(toServe: settings.maxConnections, logger: logger)
        let command = self
        PairingsCommand.Create.ensureIdentity(in: settings.stateDirectory)
        let sinks = [settings.videoSink] + (settings.audioOutput.sinkDescription.map { [$0] } ?? [])
        let daemon = ReceiverDaemon(configuration: settings, media: GStreamerEngine(sinks: sinks, logger: logger), logger: logger,
                                    makeSurfaces: ReceiverSurfaces.make) {
            try command.resolveConfiguration()
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch let error as ConfigurationError {
            logger.critical("\(error)")
            throw ExitCode(ConfigurationError.exitCode)
        } catch {
            logger.critical("airplayd failed: \(error)")
            throw ExitCode.failure
        }
    }

    private func resolveConfiguration() throws(ConfigurationError) -> ReceiverConfiguration {
        var settings = try ReceiverConfiguration.load(path: config ?? ReceiverConfiguration.defaultPath,
                                                      required: config != nil)
        if let name { settings.name = name }
        if let port { settings.port = port }
        if !interfaces.isEmpty { settings.interfaces = interfaces }
        if let video { settings.videoEnabled = video == .on }
        if let audio { settings.audioEnabled = audio == .on }
        if let airplay2 { settings.airPlay2 = airplay2 == .on }
        if let audioOutput { settings.audioOutput = try AudioOutput(parsing: audioOutput) }
        if let audioDriftCorrection {
            guard let mode = DriftCorrectionMode(rawValue: audioDriftCorrection) else {
                throw ConfigurationError(key: "audio_drift_correction", message: "must be \"stuff\", \"resample\" or \"off\", got \"\(audioDriftCorrection)\"")
            }
            settings.audioDriftCorrection = mode
        }
        if let alsaMixer { settings.alsaMixer = alsaMixer }
        if let videoSink { settings.videoSink = videoSink }
        if let stateDir { settings.stateDirectory = stateDir }
        if let instance { settings.instance = instance }
        if let address { settings.address = address }
        if let ptp { settings.ptp = ptp == .on }
        if let fpSetup { settings.fairPlaySetup = fpSetup == .on }
        if let bufferedAudio { settings.bufferedAudio = bufferedAudio == .on }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ConfigurationError(key: "log_level",
                                         message: "must be one of trace, debug, info, notice, warning, error, critical, got \"\(logLevel)\"")
            }
            settings.logLevel = level
        }
        try settings.validate()
        return settings
    }
}
