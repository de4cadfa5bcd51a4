import AirPlayDiscovery
import AirPlayWire
import GStreamerMedia
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The receiver as one service: control port, mDNS publication, systemd notification, watchdog.
///
/// Start-up order matters to systemd: `READY=1` goes out only once the port listens and the
/// services were handed to Avahi. Shutdown withdraws the mDNS records first (so senders stop
/// offering the box), then closes every session.
public final class ReceiverDaemon: Service, Sendable {
    private let configuration: ReceiverConfiguration
    private let logger: Logger
    private let notifier: SystemdNotifier

    /// A daemon for a validated configuration.
    public init(configuration: ReceiverConfiguration, logger: Logger, notifier: SystemdNotifier = SystemdNotifier()) {
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
    }

    /// Capabilities from the configuration, limited to what the installed GStreamer can do.
    public static func detectCapabilities(_ configuration: ReceiverConfiguration, logger: Logger) -> ReceiverCapabilities {
        var video = configuration.videoEnabled
        if video && !GStreamerRuntime.hasElement("playbin") {
            logger.warning("video turned off: GStreamer has no playbin (install gstreamer1.0-plugins-base)")
            video = false
        }
        let hls = video && (GStreamerRuntime.hasElement("hlsdemux") || GStreamerRuntime.hasElement("hlsdemux2"))
        if video && !hls {
            logger.warning("HLS turned off: no hlsdemux element (install gstreamer1.0-plugins-bad)")
        }
        return ReceiverCapabilities(video: video, hls: hls, audio: configuration.audioEnabled)
    }

    /// Runs until graceful shutdown (SIGTERM/SIGINT through the service group).
    public func run() async throws {
        logger.info("starting", metadata: ["gstreamer": "\(GStreamerRuntime.version)"])
        let capabilities = Self.detectCapabilities(configuration, logger: logger)
        let store = DeviceIdentityStore(directory: configuration.stateDirectory)
        let identity: (id: DeviceID, source: DeviceIDSource)
        do {
            identity = try store.loadOrCreate()
        } catch {
            // Without a writable state directory the id would change on every start: refuse.
            throw ConfigurationError(key: "state_dir", message: "cannot keep the device id in \(store.path): \(error)")
        }
        logger.info("device id", metadata: ["device.id": "\(identity.id)", "device.idSource": "\(identity.source.rawValue)"])

        let currentName = NIOLockedValueBox(configuration.name)
        let router = ControlRouter {
            ServerInfo(deviceID: identity.id, name: currentName.withLockedValue { $0 }, capabilities: capabilities)
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = ControlServer(group: group, router: router, logger: logger)
        let port: Int
        do {
            port = try await server.bind(port: configuration.port)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        logger.info("control port listening", metadata: ["port": "\(port)"])

        let advertisement = ReceiverAdvertisement(deviceID: identity.id, port: UInt16(port), capabilities: capabilities)
        let notifier = self.notifier
        let logger = self.logger
        let publisher = try AvahiPublisher(
            deviceName: configuration.name, advertisement: advertisement, interfaces: configuration.interfaces,
            logger: logger
        ) { event in
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
        notifier.ready(status: "Serving on port \(port); mDNS registering as \"\(configuration.name)\"")
        logger.info("ready", metadata: ["port": "\(port)", "name": "\(configuration.name)",
                                        "features": "\(capabilities.features.txtValue)"])

        let watchdog: Task<Void, Never>? = SystemdNotifier.watchdogInterval().map { interval in
            Task {
                while !Task.isCancelled {
                    notifier.watchdog()
                    try? await Task.sleep(for: interval)
                }
            }
        }

        try? await gracefulShutdown()

        logger.info("stopping: withdrawing mDNS records and closing sessions")
        notifier.stopping()
        watchdog?.cancel()
        publisher.stop()
        await server.shutdown()
        try? await group.shutdownGracefully()
        logger.info("stopped")
    }
}
