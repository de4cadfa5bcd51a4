import AirPlayDBus
import AirPlayMQTT
import AirPlayNowPlaying
import AirPlayReceiver

/// The now-playing surfaces that live in modules of their own, built from the configuration.
public enum ReceiverSurfaces {
    /// MPRIS on D-Bus and the MQTT surface, as `context.settings` asks.
    @Sendable public static func make(_ context: NowPlayingContext) throws -> [any NowPlayingSurface] {
        var surfaces: [any NowPlayingSurface] = []
        if let bus = DBusBus(rawValue: context.settings.mpris.rawValue) {
            surfaces.append(MPRISService(bus: bus, instance: context.instance, identity: "\(context.name) (AirPlay)",
                                         stateDirectory: context.stateDirectory, nowPlaying: context.nowPlaying, logger: context.logger))
            context.logger.info("MPRIS", metadata: ["dbus.bus": "\(bus.rawValue)"])
        }
        if let mqtt = context.settings.mqtt {
            let connection = MQTTConnection(
                host: mqtt.host, port: mqtt.port, topic: mqtt.topic, username: mqtt.username.isEmpty ? nil : mqtt.username,
                password: mqtt.password.isEmpty ? nil : mqtt.password, tlsCAFile: mqtt.tlsCAFile.isEmpty ? nil : mqtt.tlsCAFile,
                discoveryPrefix: mqtt.discoveryPrefix.isEmpty ? nil : mqtt.discoveryPrefix,
                clientID: "airplayd-" + context.deviceID.filter { $0.isHexDigit }.lowercased())
            do {
                surfaces.append(try MQTTSurface(connection: connection, deviceID: context.deviceID, name: context.name,
                                                nowPlaying: context.nowPlaying, logger: context.logger))
            } catch {
                throw ConfigurationError(key: "mqtt", message: error.description)
            }
        }
        return surfaces
    }
}
