/// A DACP remote-control command: what a receiver asks of the sender that streams to it, as
/// `GET /ctrl-int/1/<command>` with the session's `Active-Remote` token. The sender
/// publishes `_dacp._tcp` as `iTunes_Ctrl_<DACP-ID>` (`Protocol/now-playing.md`).
public enum DACPCommand: Hashable, Sendable {
    /// `play`
    case play
    /// `pause`
    case pause
    /// `playpause`
    case playPause
    /// `stop`
    case stop
    /// `nextitem`
    case nextItem
    /// `previtem`
    case previousItem
    /// `volumeup`
    case volumeUp
    /// `volumedown`
    case volumeDown
    /// `setproperty?dmcp.device-volume=DB`: the AirPlay volume (-30...0, -144 muted).
    case setDeviceVolume(Double)
    /// `getproperty?properties=...`: what shairport-sync polls to see that the remote answers.
    case getProperty(String)

    /// The path prefix of every command.
    public static let prefix = "/ctrl-int/1/"

    /// The request path.
    public var path: String {
        let name: String
        switch self {
        case .play: name = "play"
        case .pause: name = "pause"
        case .playPause: name = "playpause"
        case .stop: name = "stop"
        case .nextItem: name = "nextitem"
        case .previousItem: name = "previtem"
        case .volumeUp: name = "volumeup"
        case .volumeDown: name = "volumedown"
        case .setDeviceVolume(let decibels): name = "setproperty?dmcp.device-volume=" + TextFormatting.fixed(decibels, places: 6)
        case .getProperty(let properties): name = "getproperty?properties=" + properties
        }
        return Self.prefix + name
    }

    /// Reads a request path; nil for anything else (answered 501 by a server).
    public init?(path: String) {
        guard path.hasPrefix(Self.prefix) else { return nil }
        let rest = path.dropFirst(Self.prefix.count)
        let parts = rest.split(separator: "?", maxSplits: 1).map(String.init)
        let query = parts.count == 2 ? parts[1] : ""
        switch parts.first?.lowercased() ?? "" {
        case "play", "playresume": self = .play
        case "pause": self = .pause
        case "playpause": self = .playPause
        case "stop": self = .stop
        case "nextitem": self = .nextItem
        case "previtem": self = .previousItem
        case "volumeup": self = .volumeUp
        case "volumedown": self = .volumeDown
        case "setproperty":
            let pairs = query.split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
            guard let pair = pairs.first(where: { $0.first == "dmcp.device-volume" }), pair.count == 2,
                  let decibels = Double(pair[1]), decibels.isFinite, decibels <= 0 else { return nil }
            // Below -144 is muted all the same; to the micro-decibel, as `path` writes it back.
            self = .setDeviceVolume((max(-144, decibels) * 1e6).rounded() / 1e6)
        case "getproperty":
            guard query.hasPrefix("properties="), query.count <= 200 else { return nil }
            self = .getProperty(String(query.dropFirst("properties=".count)))
        default:
            return nil
        }
    }

    /// The DNS-SD instance name of the sender's remote-control service.
    public static func serviceName(dacpID: String) -> String { "iTunes_Ctrl_" + dacpID }

    /// Whether a `_dacp._tcp` instance is the one for `dacpID` (leading zeros and case aside,
    /// as senders differ in both).
    public static func serviceMatches(_ name: String, dacpID: String) -> Bool {
        guard name.hasPrefix("iTunes_Ctrl_") else { return false }
        let normalized = { (text: Substring) in String(text.drop { $0 == "0" }).uppercased() }
        return normalized(name.dropFirst("iTunes_Ctrl_".count)) == normalized(dacpID[...])
    }
}
