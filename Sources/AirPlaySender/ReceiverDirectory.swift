import AirPlayWire

/// Merges announced services into devices and ranks them the way a picker should show them.
public enum ReceiverDirectory {
    /// Groups services by device: the same device id (AirPlay `deviceid` or RAOP name prefix)
    /// and the same device name; services without an id stand alone. The name is part of the
    /// key because receivers that share an id by mistake (two daemons on one box deriving it
    /// from one MAC) are still two devices to the user, each with its own name and port.
    public static func merge(_ services: [DiscoveredReceiver.Service]) -> [DiscoveredReceiver] {
        struct Key: Hashable {
            var id: DeviceID
            var name: String
        }
        var byKey: [Key: [DiscoveredReceiver.Service]] = [:]
        var order: [Key] = []
        var loners: [DiscoveredReceiver] = []
        for service in services {
            guard let id = service.record.deviceID else {
                loners.append(DiscoveredReceiver(services: [service]))
                continue
            }
            let key = Key(id: id, name: service.record.deviceName.lowercased())
            if byKey[key] == nil { order.append(key) }
            byKey[key, default: []].append(service)
        }
        return order.map { DiscoveredReceiver(services: byKey[$0]!) } + loners
    }

    /// Video-capable receivers first (features bit 0 or 49), then audio-only ones;
    /// within each group by name (case-insensitive), then device id for a stable order.
    public static func rank(_ receivers: [DiscoveredReceiver]) -> [DiscoveredReceiver] {
        receivers.sorted { left, right in
            if left.supportsVideo != right.supportsVideo { return left.supportsVideo }
            let leftName = left.name.lowercased()
            let rightName = right.name.lowercased()
            if leftName != rightName { return leftName < rightName }
            return (left.deviceID?.compactForm ?? "") < (right.deviceID?.compactForm ?? "")
        }
    }
}
