import AirPlayWire

/// One receiver device as the sender sees it: its `_airplay._tcp` and `_raop._tcp` records merged.
public struct DiscoveredReceiver: Hashable, Sendable {
    /// One announced service of the device.
    public struct Service: Hashable, Sendable {
        /// Which service.
        public var kind: ReceiverRecord.Kind
        /// The full instance name.
        public var instanceName: String
        /// The host name it resolved to.
        public var hostName: String
        /// Its addresses, IPv4 first.
        public var addresses: [String]
        /// Its port.
        public var port: UInt16
        /// What its TXT record says.
        public var record: ReceiverRecord

        /// A service from its parts.
        public init(kind: ReceiverRecord.Kind, instanceName: String, hostName: String, addresses: [String],
                    port: UInt16, record: ReceiverRecord) {
            self.kind = kind
            self.instanceName = instanceName
            self.hostName = hostName
            self.addresses = addresses
            self.port = port
            self.record = record
        }
    }

    /// The device's services, AirPlay first.
    public var services: [Service]

    /// A device from its services.
    public init(services: [Service]) {
        self.services = services.sorted { $0.kind == .airPlay && $1.kind != .airPlay }
    }

    /// The `_airplay._tcp` service, if announced.
    public var airPlay: Service? { services.first { $0.kind == .airPlay } }
    /// The `_raop._tcp` service, if announced.
    public var raop: Service? { services.first { $0.kind == .raop } }

    /// The service that addresses the device as a whole: AirPlay when present.
    public var primary: Service { airPlay ?? services[0] }

    /// The device name.
    public var name: String { primary.record.deviceName }
    /// The device id.
    public var deviceID: DeviceID? { services.lazy.compactMap(\.record.deviceID).first }
    /// The model.
    public var model: String? { services.lazy.compactMap(\.record.model).first }
    /// The first address of the primary service.
    public var address: String? { primary.addresses.first }
    /// The port of the primary service.
    public var port: UInt16 { primary.port }
    /// The features (AirPlay's `features`, else RAOP's `ft`).
    public var features: FeatureSet { airPlay?.record.features ?? raop?.record.features ?? [] }

    /// Plays video URLs.
    public var supportsVideo: Bool { services.contains { $0.record.supportsVideo } }
    /// Plays audio.
    public var supportsAudio: Bool { services.contains { $0.record.supportsAudio } }
    /// Shows photos.
    public var supportsPhoto: Bool { services.contains { $0.record.supportsPhoto } }
    /// Asks for a password.
    public var passwordRequired: Bool { services.contains { $0.record.passwordRequired } }
    /// Asks for PIN or one-time pairing.
    public var pairingRequired: Bool { services.contains { $0.record.pairingRequired } }

    /// What it can do, in the order the list shows: `video`, `audio`, `photo`.
    public var abilities: [String] {
        var result: [String] = []
        if supportsVideo { result.append("video") }
        if supportsAudio { result.append("audio") }
        if supportsPhoto { result.append("photo") }
        return result
    }

    /// What it asks of a sender before use.
    public var requirements: [String] {
        var result: [String] = []
        if passwordRequired { result.append("password required") }
        if pairingRequired { result.append("pairing required") }
        return result
    }
}
