import AirPlayDiscovery
import AirPlayNowPlaying
import AirPlayReceiver
import AirPlayTiming
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

// The running daemon as a group of services, each with one job and one way to stop. A
// ServiceGroup shuts its services down one at a time in the reverse of the order they are
// listed in (`ReceiverDaemon.run`), so the list is the shutdown order read backwards: systemd
// hears "stopping" first, then reloads stop, the mDNS records go (senders stop offering the
// box), the sessions close while the surfaces still hear them end, and the control port closes
// last. Start-up order (READY=1 only once the port listens and Avahi has the records; SIGHUP
// trapped before that) is settled before the group starts, in `ReceiverDaemon.run`.

/// The control port: serves until shutdown, then closes, and its event loops with it.
struct ControlPortService: Service {
    let server: ControlServer
    let eventLoops: any EventLoopGroup

    func run() async throws {
        try? await gracefulShutdown()
        await server.shutdown()
        try? await eventLoops.shutdownGracefully()
    }
}

/// The sessions, the PTP follower and the now-playing surfaces: on shutdown every session
/// ends, and the surfaces hear it (MPRIS Stopped, MQTT's last state) before they go.
struct SessionsService: Service {
    let video: VideoSessions?
    let audio: AudioSessions
    let events: EventChannels
    let ptp: (any PTPClock)?
    let nowPlaying: NowPlaying
    let surfaces: [any NowPlayingSurface]

    func run() async throws {
        try? await gracefulShutdown()
        video?.stopAll()
        audio.stopAll()
        events.closeAll()
        ptp?.stop()
        nowPlaying.drain(timeout: 1)
        for surface in surfaces { surface.stop() }
    }
}

/// The mDNS records: published before the group starts, withdrawn on shutdown.
struct PublicationService: Service {
    let publisher: AvahiPublisher
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.info("stopping: withdrawing mDNS records and closing sessions")
        publisher.stop()
    }
}

/// `systemctl reload`: each SIGHUP reads the configuration again (`reload`), between
/// RELOADING=1 and READY=1, until shutdown.
struct ReloadService: Service {
    let hangups: UnixSignalsSequence
    let notifier: SystemdNotifier
    let port: Int
    let reload: @Sendable () -> Void

    func run() async throws {
        for await _ in hangups.cancelOnGracefulShutdown() {
            notifier.send("RELOADING=1\nSTATUS=Reloading configuration")
            reload()
            notifier.send("READY=1\nSTATUS=Serving on port \(port)")
        }
    }
}

/// systemd's side: the watchdog kept fed while running (when the unit asks for one), and
/// STOPPING=1 the moment shutdown begins.
struct SystemdService: Service {
    let notifier: SystemdNotifier

    func run() async throws {
        if let interval = SystemdNotifier.watchdogInterval() {
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                notifier.watchdog()
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            }
        } else {
            try? await gracefulShutdown()
        }
        notifier.stopping()
    }
}
