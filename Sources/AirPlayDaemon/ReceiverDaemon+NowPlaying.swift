import AirPlayNowPlaying
import AirPlayReceiver
import Logging
import NIOCore

/// What the composition root needs to build the surfaces that live in other modules (MPRIS on
/// D-Bus, MQTT): the now-playing hub and the settings.
public struct NowPlayingContext: Sendable {
    /// The hub to attach to and send commands through.
    public var nowPlaying: NowPlaying
    /// The surfaces' settings.
    public var settings: NowPlayingSettings
    /// The receiver's name (MPRIS Identity, the page's heading, MQTT's device name).
    public var name: String
    /// The instance name when several daemons run (a suffix for bus names and client ids).
    public var instance: String?
    /// The device id (MQTT's unique ids).
    public var deviceID: String
    /// Where covers are written for MPRIS `mpris:artUrl`.
    public var stateDirectory: String
    /// Where to log.
    public var logger: Logger
}

/// Builds the surfaces that live outside this module; throws to stop start-up with a reason.
public typealias NowPlayingSurfaceFactory = @Sendable (NowPlayingContext) throws -> [any NowPlayingSurface]

extension ReceiverDaemon {
    /// Attaches the surfaces the configuration turns on: the metadata pipe here, the others
    /// from `makeSurfaces`. Every surface hears the same events in the same order.
    static func attachSurfaces(_ context: NowPlayingContext, makeSurfaces: NowPlayingSurfaceFactory?) throws -> [any NowPlayingSurface] {
        var surfaces: [any NowPlayingSurface] = []
        let settings = context.settings
        if !settings.metadataPipe.isEmpty {
            do {
                surfaces.append(try MetadataPipe(path: settings.metadataPipe))
            } catch {
                throw ConfigurationError(key: "metadata_pipe", message: "\(error)")
            }
            context.logger.info("metadata pipe", metadata: ["path": "\(settings.metadataPipe)"])
        }
        do {
            surfaces += try makeSurfaces?(context) ?? []
        } catch {
            // Nothing half started stays: a bus name taken, a pipe open.
            for surface in surfaces { surface.stop() }
            throw error
        }
        for surface in surfaces { context.nowPlaying.attach(surface) }
        return surfaces
    }

    /// The now-playing page on `web_listen`, when set; it shows the pairing PIN as it comes.
    func startPage(group: any EventLoopGroup, pairing: ReceiverPairing) async throws -> NowPlayingPage? {
        let nowPlaying = self.nowPlaying
        pairing.onPINShown { pin in nowPlaying.post(.pairingPIN(pin)) }
        guard let (host, port) = NowPlayingSettings.hostAndPort(configuration.nowPlaying.webListen) else { return nil }
        do {
            let page = try await NowPlayingPage.start(host: host, port: port, nowPlaying: nowPlaying, name: configuration.name,
                                                      pin: { pairing.displayedPIN }, group: group, logger: logger)
            nowPlaying.attach(page)
            return page
        } catch {
            throw ConfigurationError(key: "web_listen", message: "cannot listen on \(configuration.nowPlaying.webListen): \(error)")
        }
    }
}
