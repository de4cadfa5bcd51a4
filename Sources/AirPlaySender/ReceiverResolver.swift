import AirPlayDiscovery
import AirPlayWire
import Foundation

/// A receiver to talk to: where it is and what to call it.
public struct ReceiverAddress: Hashable, Sendable {
    /// Host or address.
    public var host: String
    /// Control port.
    public var port: Int
    /// A stable key for per-receiver state: the device id, else `host:port`.
    public var key: String
    /// A display name.
    public var name: String
    /// The `_raop._tcp` TXT record, when the receiver was discovered (audio senders read it).
    public var raopTXT: TXTRecord?
    /// The device id, when known.
    public var deviceID: DeviceID?
    /// The `_airplay._tcp` TXT record, when the receiver was discovered (its group keys say
    /// whether it insists on its own PTP clock: `ReceiverClockRule`).
    public var airPlayTXT: TXTRecord?

    /// An address from its parts.
    public init(host: String, port: Int, key: String, name: String, raopTXT: TXTRecord? = nil, deviceID: DeviceID? = nil,
                airPlayTXT: TXTRecord? = nil) {
        self.host = host
        self.port = port
        self.key = key
        self.name = name
        self.raopTXT = raopTXT
        self.deviceID = deviceID
        self.airPlayTXT = airPlayTXT
    }
}

/// Turns `--to NAME|ID|HOST:PORT` (or nothing) into a receiver.
public enum ReceiverResolver {
    /// `HOST:PORT` or `[V6]:PORT`, else nil.
    public static func parseHostPort(_ text: String) -> (host: String, port: Int)? {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return (host, port)
        }
        guard let colon = text.lastIndex(of: ":"), text.filter({ $0 == ":" }).count == 1,
              let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        let host = String(text[..<colon])
        return host.isEmpty ? nil : (host, port)
    }

    /// Picks a receiver. With a target: a HOST:PORT, or the discovered receiver with that name or id.
    /// Without: the best video-capable (or, for audio, audio-capable) receiver that needs no pairing;
    /// when several are equally good, `choose` decides (it asks on a terminal) or the call fails with the list.
    public static func resolve(_ target: String?, needVideo: Bool, timeoutSeconds: Double = 5,
                               discover: () throws -> [DiscoveredReceiver] = { try ReceiverBrowser.discover(timeoutSeconds: 5) },
                               choose: ([DiscoveredReceiver]) -> DiscoveredReceiver? = { _ in nil })
        throws(SenderError) -> ReceiverAddress {
        if let target, let direct = parseHostPort(target) {
            return ReceiverAddress(host: direct.host, port: direct.port, key: "\(direct.host):\(direct.port)", name: target)
        }
        let receivers: [DiscoveredReceiver]
        do {
            receivers = try discover()
        } catch let error as AvahiError where error.isDaemonUnavailable {
            throw SenderError(.notFound, "cannot reach avahi-daemon to find receivers (\(error)); give --to HOST:PORT")
        } catch {
            throw SenderError(.notFound, "discovery failed: \(error)")
        }
        if let target {
            let wanted = target.lowercased()
            let wantedID = DeviceID(target)
            guard let match = receivers.first(where: { $0.name.lowercased() == wanted || (wantedID != nil && $0.deviceID == wantedID) })
            else {
                throw SenderError(.notFound, "no receiver named \"\(target)\"; found: "
                                  + (receivers.isEmpty ? "none" : receivers.map(\.name).joined(separator: ", ")))
            }
            return try address(of: match, audio: !needVideo)
        }
        let usable = receivers.filter { (needVideo ? $0.supportsVideo : $0.supportsAudio) && !$0.pairingRequired }
        switch usable.count {
        case 0:
            throw SenderError(.notFound, "no \(needVideo ? "video" : "audio") receiver found"
                              + (receivers.isEmpty ? "" : " (found: \(receivers.map(\.name).joined(separator: ", ")))"))
        case 1:
            return try address(of: usable[0], audio: !needVideo)
        default:
            if let chosen = choose(usable) { return try address(of: chosen, audio: !needVideo) }
            throw SenderError(.notFound, "several receivers fit; pick one with --to:\n"
                              + usable.map { "  \($0.name)  \($0.address ?? "?"):\($0.port)" }.joined(separator: "\n"))
        }
    }

    /// Where to reach a discovered receiver: its AirPlay service for video, its RAOP service
    /// (which may listen elsewhere, like shairport-sync's or an AirPort Express's) for audio.
    static func address(of receiver: DiscoveredReceiver, audio: Bool = false) throws(SenderError) -> ReceiverAddress {
        let service = audio ? (receiver.raop ?? receiver.primary) : receiver.primary
        guard let host = service.addresses.first else { throw SenderError(.notFound, "\(receiver.name) has no address") }
        return ReceiverAddress(host: host, port: Int(service.port), key: receiver.deviceID?.colonForm ?? "\(host):\(service.port)",
                               name: receiver.name, raopTXT: receiver.raop?.record.txt, deviceID: receiver.deviceID,
                               airPlayTXT: receiver.airPlay?.record.txt)
    }
}

/// Remembers the session id of the last `play` per receiver, so later commands address it.
public struct SessionStore: Sendable {
    /// The JSON file.
    public let path: String

    /// The store at `$XDG_STATE_HOME/airplay/sessions.json` (default `~/.local/state/...`).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.local/state")
        path = base + "/airplay/sessions.json"
    }

    /// A store at an explicit path.
    public init(path: String) { self.path = path }

    /// The stored session for a receiver.
    public func session(for key: String) -> String? { load()[key] }

    /// Stores a session for a receiver.
    public func save(session: String, for key: String) {
        var all = load()
        all[key] = session
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        if let data = try? JSONSerialization.data(withJSONObject: all, options: [.sortedKeys, .prettyPrinted]) {
            try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    private func load() -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: String] else { return [:] }
        return object
    }
}
