import AirPlayReceiver
import FoundationEssentials

/// Where the box shows what plays and takes remote control: MPRIS, the shairport-sync
/// metadata pipe, MQTT and the now-playing page (`mpris`, `metadata_pipe`, `[mqtt]`,
/// `web_listen` in the configuration file). Every surface is off by default.
public struct NowPlayingSettings: Hashable, Sendable {
    /// MPRIS 2 on D-Bus (`mpris`): `off`, the `system` bus or the `session` bus.
    public var mpris = MPRISSetting.off
    /// The FIFO shairport-sync's metadata readers read (`metadata_pipe`); empty: none.
    public var metadataPipe = ""
    /// Where the now-playing page listens (`web_listen`, `ADDRESS:PORT`); empty: nowhere.
    public var webListen = ""
    /// The MQTT broker and topic (`[mqtt]`); nil: no MQTT.
    public var mqtt: MQTTSettings?

    /// Every surface off.
    public init() {}
}

/// The `[mqtt]` table: the broker, the topic everything goes under, and how to log in.
public struct MQTTSettings: Hashable, Sendable {
    /// The broker's host name or address (`host`).
    public var host = "localhost"
    /// The broker's port (`port`): 1883, or 8883 with TLS.
    public var port = 1883
    /// The topic everything is published under (`topic`), e.g. `airplayd/living-room`.
    public var topic = "airplayd"
    /// User name (`username`); empty: none.
    public var username = ""
    /// Password (`password`); empty: none.
    public var password = ""
    /// Certificate authorities (PEM) for TLS (`tls_ca_file`); empty: no TLS.
    public var tlsCAFile = ""
    /// Home Assistant's discovery prefix (`discovery_prefix`); empty: no discovery messages.
    public var discoveryPrefix = "homeassistant"

    /// The defaults: a broker on this box, topic `airplayd`.
    public init() {}

    /// The keys the table takes.
    public static let keys = ["host", "port", "topic", "username", "password", "tls_ca_file", "discovery_prefix"]

    /// Reads the `[mqtt]` table strictly: unknown keys and wrong types are errors.
    static func parse(_ table: [String: TOMLDocument.Value]) throws(ConfigurationError) -> MQTTSettings {
        var settings = MQTTSettings()
        for (key, value) in table.sorted(by: { $0.key < $1.key }) {
            let name = "mqtt.\(key)"
            switch (key, value) {
            case ("host", .string(let text)) where !text.isEmpty && text.utf8.count <= 253: settings.host = text
            case ("port", .integer(let port)) where (1...65535).contains(port): settings.port = port
            case ("topic", .string(let text)):
                guard !text.isEmpty, text.utf8.count <= 200, !text.contains(where: { "+#".contains($0) }), !text.hasSuffix("/") else {
                    throw ConfigurationError(key: name, message: "must be a topic of 1 to 200 bytes without + or # or a trailing /")
                }
                settings.topic = text
            case ("username", .string(let text)): settings.username = text
            case ("password", .string(let text)): settings.password = text
            case ("tls_ca_file", .string(let text)):
                guard text.isEmpty || (text.hasPrefix("/") && FileManager.default.isReadableFile(atPath: text)) else {
                    throw ConfigurationError(key: name, message: "must be an absolute path to a readable PEM file, got \"\(text.prefix(80))\"")
                }
                settings.tlsCAFile = text
            case ("discovery_prefix", .string(let text)): settings.discoveryPrefix = text
            default:
                guard keys.contains(key) else {
                    throw ConfigurationError(key: name, message: "unknown key; [mqtt] takes \(keys.joined(separator: ", "))")
                }
                throw ConfigurationError(key: name, message: "has a wrong type or value (host: a string, port: 1 to 65535, the others strings)")
            }
        }
        return settings
    }
}

extension NowPlayingSettings {
    /// Checks the values (after the file and the command line).
    func validate() throws(ConfigurationError) {
        if !metadataPipe.isEmpty, !metadataPipe.hasPrefix("/") {
            throw ConfigurationError(key: "metadata_pipe", message: "must be an absolute path, got \"\(metadataPipe.prefix(80))\"")
        }
        if !webListen.isEmpty, Self.hostAndPort(webListen) == nil {
            throw ConfigurationError(key: "web_listen", message: "must be ADDRESS:PORT, e.g. \"127.0.0.1:8080\" or \"[::]:8080\", got \"\(webListen.prefix(60))\"")
        }
    }

    /// `127.0.0.1:8080`, `[::1]:8080` or `0.0.0.0:8080` split into host and port.
    public static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}
