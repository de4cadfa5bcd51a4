import AirPlayWire

/// Merges announced services into devices and ranks them the way a picker should show them.
public enum ReceiverDirectory {
    /// Groups services by device: the same device id (AirPlay `deviceid` or RAOP name prefix);
    /// services without an id stand alone.
    public static func merge(_ services: [DiscoveredReceiver.Service]) -> [DiscoveredReceiver] {
        var byID: [DeviceID: [DiscoveredReceiver.Service]] = [:]
        var order: [DeviceID] = []
        var loners: [DiscoveredReceiver] = []
        for service in services {
            guard let id = service.record.deviceID else {
                loners.append(DiscoveredReceiver(services: [service]))
                continue
            }
            if byID[id] == nil { order.append(id) }
            byID[id, default: []].append(service)
        }
        return order.map { DiscoveredReceiver(services: byID[$0]!) } + loners
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
