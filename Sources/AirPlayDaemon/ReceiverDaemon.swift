import ALSAMedia
import AirPlayDiscovery
import AirPlayHLS
import AirPlayHLSGateway
import AirPlayMedia
import AirPlayNowPlaying
import AirPlayPairing
import AirPlayReceiver
import AirPlayTiming
import AirPlayWire
import FoundationEssentials
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import SoxrMedia
import UnixSignals
import LinuxIO

/// The receiver as one service: control port, mDNS publication, systemd notification, watchdog.
///
/// Start-up order matters to systemd: `READY=1` goes out only once the port listens and the
/// services were handed to Avahi. Shutdown withdraws the mDNS records first (so senders stop
/// offering the box), then closes every session.
public final class ReceiverDaemon: Service, Sendable {
    let configuration: ReceiverConfiguration
    let logger: Logger
    private let notifier: SystemdNotifier
    private let reloadConfiguration: @Sendable () throws -> ReceiverConfiguration
    private let media: any ReceiverMediaEngine
    private let makeSurfaces: NowPlayingSurfaceFactory?
    /// The box's now-playing state: every session posts to it, every surface hears it.
    public let nowPlaying = NowPlaying()

    /// A daemon for a validated configuration, playing through `media`.
    /// - Parameters:
    ///   - makeSurfaces: builds the now-playing surfaces of other modules (MPRIS, MQTT).
    ///   - reloadConfiguration: reads the configuration again on SIGHUP (`systemctl reload`).
    public init(configuration: ReceiverConfiguration, media: any ReceiverMediaEngine, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier(), makeSurfaces: NowPlayingSurfaceFactory? = nil,
                reloadConfiguration: @escaping @Sendable () throws -> ReceiverConfiguration) {
        self.media = media
        self.makeSurfaces = makeSurfaces
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
        self.reloadConfiguration = reloadConfiguration
    }

    /// Capabilities from the configuration, limited to what the installed media stack can do.
    public static func detectCapabilities(_ configuration: ReceiverConfiguration, media: any ReceiverMediaEngine,
                                          logger: Logger) -> ReceiverCapabilities {
        var video = configuration.videoEnabled
        if video && !media.canPlayURLs {
            logger.warning("video turned off: GStreamer has no playbin (install gstreamer1.0-plugins-base)")
            video = false
        }
        let hls = video && media.canPlayHLS
        if video && !hls {
            logger.warning("HLS turned off: no hlsdemux element (install gstreamer1.0-plugins-bad)")
        }
        return ReceiverCapabilities(video: video, hls: hls, audio: configuration.audioEnabled,
                                    passwordRequired: !configuration.password.isEmpty && (configuration.audioEnabled || configuration.access == .password),
                                    alac: true, aac: media.canDecodeAAC)
    }

    /// Video sessions playing through GStreamer with the configured sinks.
    private func makeVideoSessions(events: EventChannels, gateway: HLSGateway, fcup: FCUPBroker) -> VideoSessions {
        let (media, videoSink, audioOutput) = (self.media, configuration.videoSink, configuration.audioOutput.description)
        let followRedirects = !configuration.videoRefuseLocalURLs
        return VideoSessions(
            makePlayer: { () throws(MediaError) -> any MediaPlayer in
                try media.makePlayer(videoSink: videoSink, audioOutput: audioOutput, classicPlaybin: false, followRedirects: followRedirects)
            },
            policy: MediaURLPolicy(refusingLocalTargetsWith: configuration.videoRefuseLocalURLs
                ? HTTPMediaURLScreen(caFile: configuration.tlsCAFile.isEmpty ? nil : configuration.tlsCAFile) : nil),
            takeover: configuration.videoTakeover,
            events: events, gateway: gateway,
            makeClassicPlayer: { () throws(MediaError) -> any MediaPlayer in
                try media.makePlayer(videoSink: videoSink, audioOutput: audioOutput, classicPlaybin: true, followRedirects: followRedirects)
            }, nowPlaying: nowPlaying, fcup: fcup, logger: logger)
    }

    /// The HLS gateway: variants within the configured display and the installed decoders; keys
    /// over HTTPS with the sender's headers, or from the sender over its event channel; the
    /// playlists of a handed-over video (`mlhls://`) from the sender's phone over FCUP.
    private func makeHLSGateway(events: EventChannels, fcup: FCUPBroker) -> HLSGateway {
        let policy = VariantPolicy(
            maximumResolution: configuration.videoMaxResolution, hdr: configuration.videoHDR,
            passthrough: configuration.audioPassthrough,
            canDecode: { [media] codec in media.canDecode(codec: codec) })
        return HLSGateway(policy: policy, caFile: configuration.tlsCAFile.isEmpty ? nil : configuration.tlsCAFile,
                          refuseLocalTargets: configuration.videoRefuseLocalURLs,
                          requestKey: { sessionID, uri in await events.requestKey(sessionID: sessionID, uri: uri) },
                          requestPlaylist: { sessionID, url in await fcup.requestPlaylist(sessionID: sessionID, url: url) },
                          preferences: RenditionPreferences(audio: configuration.videoLanguage, subtitles: configuration.videoSubtitles,
                                                            environment: ProcessInfo.processInfo.environment),
                          logger: logger)
    }

    /// The audio output rooms play to: the configured one, or for `pipewiresink` PipeWire's ALSA
    /// plugin (which follows the card) when installed.
    private var playedOutput: (output: AudioOutput, note: String?) {
        configuration.audioOutput.followingTheCard(pipewireALSAPlugin: Self.hasPipeWireALSAPlugin)
    }

    /// Whether PipeWire's ALSA plugin (package pipewire-alsa) is set up: its PCM `pipewire` is
    /// in alsa-lib's configuration, as the package's `50-pipewire.conf` puts it.
    static func hasPipeWireALSAPlugin() -> Bool { ALSAConfiguration.definesPCM("pipewire") }

    /// RAOP sessions playing to the configured audio output.
    private func makeAudioSessions(group: any EventLoopGroup, deviceID: DeviceID, ptp: (any PTPClock)?) -> AudioSessions {
        let (output, media, logger) = (playedOutput.output, self.media, self.logger)
        return AudioSessions(
            group: group, deviceID: deviceID, password: configuration.password,
            makeOutput: { format throws -> any PCMOutput in
                switch output {
                case .raw(let path): return RawPCMOutput(path: path, format: format)
                case .sink(let description): return try media.makePCMOutput(sink: description, format: format)
                case .alsa(let device):
                    return try ALSAPCMOutput(device: device, format: format, events: { logger.warning("\($0)") })
                }
            },
            decoders: media.raopDecoders,
            takeover: configuration.audioTakeover,
            sessionTimeout: Double(configuration.audioSessionTimeout), nowPlaying: nowPlaying,
            faultDropPercent: Self.faultDropPercent(logger: logger), faultRefuseRealtimeStreams: Self.faultRefuseRealtimeStreams(logger: logger),
            ptp: ptp, driftCorrection: makeDriftCorrection(), hardwareVolume: makeHardwareVolume(), logger: logger)
    }

    /// `audio_drift_correction` as the playouts take it; `resample` without libsoxr stuffs
    /// frames instead, and says why.
    private func makeDriftCorrection() -> DriftCorrection {
        switch configuration.audioDriftCorrection {
        case .stuff: return .stuff
        case .off: return .off
        case .resample:
            do {
                return .resample(try SoxrPacketResampler())
            } catch {
                logger.error("audio_drift_correction = \"resample\" needs libsoxr; stuffing frames instead", metadata: ["reason": "\(error)"])
                return .stuff
            }
        }
    }

    /// The card's mixer (`alsa_mixer`), opened now so a wrong name is said at start.
    private func makeHardwareVolume() -> (any HardwareVolume)? {
        guard !configuration.alsaMixer.isEmpty,
              let device = configuration.alsaMixerDevice.isEmpty ? configuration.audioOutput.mixerDevice : configuration.alsaMixerDevice
        else { return nil }
        let logger = self.logger
        let mixer = ALSAMixer(device: device, element: configuration.alsaMixer, events: { logger.warning("\($0)") })
        if mixer.open() == nil {
            logger.info("volume on the card's mixer", metadata: ["mixer": "\(mixer.element)", "device": "\(device)", "range": "\(mixer.range ?? "?")"])
        }
        return mixer
    }

    /// Test-only: `AIRPLAYD_TEST_PTP_HOLDOVER_SECONDS=N` (1 to 30) shortens how long a silent PTP
    /// master's clock is still used, so a test can see a buffered session end without waiting
    /// half a minute. Never set in production.
    static func testHoldoverSeconds(logger: Logger) -> Int? {
        guard let text = ProcessInfo.processInfo.environment["AIRPLAYD_TEST_PTP_HOLDOVER_SECONDS"],
              let seconds = Int(text), (1...30).contains(seconds) else { return nil }
        logger.warning("test setting: PTP holdover shortened", metadata: ["seconds": "\(seconds)"])
        return seconds
    }

    /// Test-only: `AIRPLAYD_FAULT_DROP_AUDIO_PERCENT=N` drops N % of first-time audio packets on
    /// arrival, so tests can show that resend requests recover them. Never set in production.
    static func faultDropPercent(logger: Logger) -> Int {
        guard let text = ProcessInfo.processInfo.environment["AIRPLAYD_FAULT_DROP_AUDIO_PERCENT"],
              let percent = Int(text), (1...50).contains(percent) else { return 0 }
        logger.warning("test fault injection: dropping audio packets on arrival", metadata: ["percent": "\(percent)"])
        return percent
    }

    /// Test-only: `AIRPLAYD_FAULT_REFUSE_REALTIME_STREAMS=1` refuses AirPlay 2 realtime streams
    /// with 400, as Sonos speakers do, so tests can show a sender falling back to AirPlay 1.
    static func faultRefuseRealtimeStreams(logger: Logger) -> Bool {
        guard ProcessInfo.processInfo.environment["AIRPLAYD_FAULT_REFUSE_REALTIME_STREAMS"] == "1" else { return false }
        logger.warning("test fault injection: refusing AirPlay 2 realtime streams with 400")
        return true
    }

    /// HAP pairing over the instance's identity and pairings, with the configured PIN and access rule.
    private func makePairing(store: PairingStore) -> ReceiverPairing {
        ReceiverPairing(store: store, pin: configuration.pin.source, access: configuration.access, logger: logger)
    }

    /// The PTP follower for AirPlay 2 senders' clocks, on UDP 319/320. Without the privilege to
    /// bind them (no CAP_NET_BIND_SERVICE) the daemon runs on without PTP, and says so.
    /// The box's PTP follower, or why it could not start (UDP 319/320 held by another program).
    private func startPTP(deviceID: DeviceID) -> (clock: (any PTPClock)?, failure: String?) {
        // The clock identity is the device id as an EUI-64 (FF FE in the middle), as PTP derives it from a MAC.
        let bytes = deviceID.bytes
        let eui64 = (bytes[0..<3] + [0xFF, 0xFE] + bytes[3..<6]).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        var follower = PTPFollower.Configuration()
        if let seconds = Self.testHoldoverSeconds(logger: logger) { follower.holdover = Int64(seconds) * 1_000_000_000 }
        do {
            // One follower for every instance on the box (zones), run by whichever came first.
            let service = try SharedPTPClock(identity: eui64, configuration: follower, logger: logger)
            logger.info("PTP follower listening on UDP 319 and 320")
            return (service, nil)
        } catch {
            logger.warning("PTP unavailable: \(error)")
            return (nil, "\(error)")
        }
    }

    /// Test-only: `AIRPLAYD_TEST_INTERFACES_ROOT=DIR` reads network interfaces from DIR instead of
    /// `/sys/class/net`, so tests can give several instances one hardware MAC. Never set in production.
    static func interfacesRoot(logger: Logger) -> String {
        guard let root = ProcessInfo.processInfo.environment["AIRPLAYD_TEST_INTERFACES_ROOT"], !root.isEmpty else { return "/sys/class/net" }
        logger.warning("test setting: network interfaces read from \(root)")
        return root
    }

    /// What the advertisement says of pairing: `pi` and `pk`, the AirPlay 2 pairing bits when
    /// `airplay2` is on, and "pairing required" under `access = "paired"`.
    static func describe(_ pairing: ReceiverPairing, airPlay2: Bool, in capabilities: inout ReceiverCapabilities) {
        let identity = pairing.store.identity
        capabilities.pairingIdentity = (identity.identifier, TextFormatting.hex(identity.publicKey))
        capabilities.airPlay2Pairing = airPlay2
        capabilities.pairingRequired = pairing.access == .paired
    }

    /// Keys whose change a reload cannot apply to a running daemon (`ConfigurationKey.appliesOnReload`).
    static func keysNeedingRestart(old: ReceiverConfiguration, new: ReceiverConfiguration) -> [String] {
        ConfigurationKey.all.filter { !$0.appliesOnReload && $0.differs(old, new) }.map(\.name)
    }

    /// Runs until graceful shutdown (SIGTERM/SIGINT through the service group).
    public func run() async throws {
        logger.info("starting", metadata: ["media": "\(media.versionDescription)"])
        let played = playedOutput
        if let note = played.note {
            if played.output == configuration.audioOutput { logger.warning("audio_output: \(note)") } else { logger.notice("audio_output: \(note)") }
        }
        // Before any child process starts: systemd's sockets (PTP's ports) are ours alone.
        let inherited = InheritedSockets.adopt()
        if inherited > 0 { logger.info("sockets from systemd", metadata: ["count": "\(inherited)"]) }
        let instance = try InstanceIdentity.claim(stateDirectory: configuration.stateDirectory, instance: configuration.instance,
                                                  interfacesRoot: Self.interfacesRoot(logger: logger), logger: logger)
        let identity = (id: instance.deviceID, source: instance.deviceIDSource)
        let pairing = makePairing(store: instance.pairingStore)
        var capabilities = Self.detectCapabilities(configuration, media: media, logger: logger)
        Self.describe(pairing, airPlay2: configuration.airPlay2, in: &capabilities)
        capabilities.fairPlaySetup = configuration.airPlay2 && configuration.fairPlaySetup
        logger.info("device id", metadata: ["device.id": "\(identity.id)", "device.idSource": "\(identity.source.rawValue)",
                                            "instance": "\(configuration.instance ?? "-")"])

        let currentName = NIOLockedValueBox(configuration.name)
        let currentCapabilities = NIOLockedValueBox(capabilities)
        let playbackPossible = media.canPlayURLs
        if capabilities.video {
            // A sink description that does not parse is a configuration error, caught at start.
            do {
                try media.validateSink(configuration.videoSink)
            } catch {
                throw ConfigurationError(key: "video_sink", message: error.message)
            }
        }
        if capabilities.video || capabilities.audio, let sink = configuration.audioOutput.sinkDescription {
            do {
                try media.validateSink(sink)
            } catch {
                throw ConfigurationError(key: "audio_output", message: error.message)
            }
        }
        let events = EventChannels(logger: logger)
        let fcup = FCUPBroker(events: events, logger: logger)
        let gateway = playbackPossible ? makeHLSGateway(events: events, fcup: fcup) : nil
        let video = gateway.map { makeVideoSessions(events: events, gateway: $0, fcup: fcup) }
        var router = ControlRouter(serverInfo: {
            ServerInfo(deviceID: identity.id, name: currentName.withLockedValue { $0 },
                       capabilities: currentCapabilities.withLockedValue { $0 })
        }, video: video, videoEnabled: { currentCapabilities.withLockedValue { $0.video } })
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (ptp, ptpFailure) = configuration.airPlay2 && configuration.ptp ? startPTP(deviceID: identity.id) : (nil, nil)
        router.ptpUnavailable = ptpFailure
        // Buffered audio is advertised only while a PTP follower runs to play it on.
        capabilities.ptpTiming = ptp != nil
        capabilities.bufferedAudio = ptp != nil && configuration.bufferedAudio
        currentCapabilities.withLockedValue { [capabilities] in $0 = capabilities }
        let audio = makeAudioSessions(group: group, deviceID: identity.id, ptp: ptp)
        let remoteControl = ReceiverRemoteControl(nowPlaying: nowPlaying, video: video, events: audio, findDACP: AvahiDACPFinder.find, logger: logger)
        nowPlaying.setRemoteControl(remoteControl)
        nowPlaying.attach(remoteControl)
        var surfaces: [any NowPlayingSurface] = []
        do {
            surfaces = try Self.attachSurfaces(
                NowPlayingContext(nowPlaying: nowPlaying, settings: configuration.nowPlaying, name: configuration.name,
                                  instance: configuration.instance, deviceID: identity.id.description,
                                  stateDirectory: configuration.stateDirectory, logger: logger),
                makeSurfaces: makeSurfaces)
            if let page = try await startPage(group: group, pairing: pairing) { surfaces.append(page) }
        } catch {
            for surface in surfaces { surface.stop() }
            try? await group.shutdownGracefully()
            throw error
        }
        router.audio = audio
        router.audioEnabled = { currentCapabilities.withLockedValue { $0.audio } }
        router.hlsGateway = video?.gateway
        router.pairing = pairing
        if let ptp { router.ptpStatus = { ptp.status() } }
        let clock = SystemClock()
        let publication = NIOLockedValueBox(PublicationStatus(name: configuration.name, now: clock.now()))
        router.publicationStatus = { publication.withLockedValue { $0.json(now: clock.now()) } }
        if pairing.access == .password, !configuration.password.isEmpty {
            router.videoPassword = DigestAuthenticator(password: configuration.password)
        }
        let policy = ControlConnectionPolicy(
            maxConnections: configuration.maxConnections,
            timeouts: .init(requestTimeout: Double(configuration.requestTimeout), idleTimeout: Double(configuration.idleTimeout)))
        let server = ControlServer(group: group, router: router, events: events, policy: policy, logger: logger)
        let port: Int
        do {
            port = try await server.bind(host: configuration.address ?? "::", port: configuration.port)
        } catch {
            try? await group.shutdownGracefully()
            if let address = configuration.address, (error as? IOError)?.errnoCode == EADDRNOTAVAIL {
                throw ConfigurationError(key: "address", message: "\(address) is not an address of this box")
            }
            throw error
        }
        logger.info("control port listening", metadata: ["port": "\(port)", "address": "\(configuration.address ?? "any")"])
        gateway?.setPort(port, host: configuration.address)

        let advertisement = ReceiverAdvertisement(deviceID: identity.id, port: UInt16(port), capabilities: capabilities)
        let notifier = self.notifier
        let logger = self.logger
        let publisher = try AvahiPublisher(
            deviceName: configuration.name, advertisement: advertisement, interfaces: configuration.interfaces,
            host: configuration.address.map { ("airplayd-\(identity.id.compactForm.lowercased()).local", $0) }, logger: logger
        ) { event in
            publication.withLockedValue { $0.note(event, now: clock.now()) }
            switch event {
            case .renamed(_, let newName):
                currentName.withLockedValue { $0 = newName }
                notifier.status("Serving on port \(port) as \"\(newName)\" (renamed after an mDNS collision)")
            case .established(let name):
                notifier.status("Serving on port \(port); published as \"\(name)\"")
            case .waitingForDaemon:
                notifier.status("Serving on port \(port); waiting for avahi-daemon")
            default:
                break
            }
        }
        try publisher.start()
        // Trap SIGHUP before announcing readiness, so an early `systemctl reload` cannot kill us.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        notifier.ready(status: "Serving on port \(port); mDNS registering as \"\(configuration.name)\"")
        logger.info("ready", metadata: ["port": "\(port)", "name": "\(configuration.name)",
                                        "features": "\(capabilities.features.txtValue)"])

        let reload: @Sendable () -> Void = { [configuration, reloadConfiguration, media] in
            do {
                let fresh = try reloadConfiguration()
                var newCapabilities = Self.detectCapabilities(fresh, media: media, logger: logger)
                // Pairing settings only change with a restart (listed below when they differ).
                Self.describe(pairing, airPlay2: configuration.airPlay2, in: &newCapabilities)
                (newCapabilities.ptpTiming, newCapabilities.bufferedAudio) = currentCapabilities.withLockedValue { ($0.ptpTiming, $0.bufferedAudio) }
                // The password itself only changes with a restart, so the pw flag stays as it is.
                newCapabilities.passwordRequired = currentCapabilities.withLockedValue { $0.passwordRequired } && newCapabilities.audio
                for key in Self.keysNeedingRestart(old: configuration, new: fresh) {
                    logger.warning("configuration change needs a restart to take effect", metadata: ["config.key": "\(key)"])
                }
                currentCapabilities.withLockedValue { $0 = newCapabilities }
                if !newCapabilities.video { video?.stopAll() }
                if !newCapabilities.audio { audio.stopAll() }
                publisher.update(advertisement: ReceiverAdvertisement(
                    deviceID: identity.id, port: UInt16(port), capabilities: newCapabilities))
                logger.info("configuration reloaded", metadata: ["features": "\(newCapabilities.features.txtValue)"])
            } catch {
                logger.error("reload failed; keeping the running configuration", metadata: ["error": "\(error)"])
            }
        }

        // Listed in start order; shut down in reverse, one at a time (ReceiverServices.swift).
        let services = ServiceGroup(configuration: .init(services: [
            .init(service: ControlPortService(server: server, eventLoops: group)),
            .init(service: SessionsService(video: video, audio: audio, events: events, ptp: ptp, nowPlaying: nowPlaying,
                                           surfaces: surfaces)),
            .init(service: PublicationService(publisher: publisher, logger: logger)),
            .init(service: ReloadService(hangups: hangups, notifier: notifier, port: port, reload: reload)),
            .init(service: SystemdService(notifier: notifier)),
        ], logger: logger))
        try await services.run()
        // The identity stays reserved until the records are gone and the sessions closed.
        withExtendedLifetime(instance) {}
        logger.info("stopped")
    }
}
