import AirPlayDiscovery
import AirPlayWire

/// Finds AirPlay receivers on the network through avahi-daemon.
public enum ReceiverBrowser {
    /// Browses both service types for at most `timeoutSeconds`, then merges and ranks.
    /// - Throws: `AvahiError` (check `isDaemonUnavailable`) when avahi-daemon cannot be reached.
    public static func discover(timeoutSeconds: Double) throws -> [DiscoveredReceiver] {
        let types = [ReceiverRecord.Kind.airPlay.rawValue, ReceiverRecord.Kind.raop.rawValue]
        let resolved = try AvahiBrowser().browse(types: types, timeoutSeconds: timeoutSeconds)
        let services = resolved.compactMap { service -> DiscoveredReceiver.Service? in
            guard let record = ReceiverRecord(serviceType: service.type, instanceName: service.name, txt: service.txt),
                  let kind = ReceiverRecord.Kind(rawValue: service.type)
            else { return nil }
            return DiscoveredReceiver.Service(kind: kind, instanceName: service.name, hostName: service.hostName,
                                              addresses: service.addresses, port: service.port, record: record)
        }
        return ReceiverDirectory.rank(ReceiverDirectory.merge(services))
    }
}
