/// One DNS-SD service to publish: instance name, type, port and TXT record.
public struct ServiceRegistration: Hashable, Sendable {
    /// The service type, e.g. `_airplay._tcp`.
    public var type: String
    /// The instance name, e.g. `Living Room` or `AABBCCDDEEFF@Living Room`.
    public var name: String
    /// The TCP port.
    public var port: UInt16
    /// The TXT record.
    public var txt: TXTRecord

    /// A registration from its parts.
    public init(type: String, name: String, port: UInt16, txt: TXTRecord) {
        self.type = type
        self.name = name
        self.port = port
        self.txt = txt
    }
}

/// The services of one device, derived from its (possibly renamed) device name.
///
/// Name collisions rename the device as a whole, so `_airplay._tcp` and `_raop._tcp`
/// always carry the same device name.
public protocol DeviceAdvertisement: Sendable {
    /// The services to publish under this device name.
    func services(deviceName: String) -> [ServiceRegistration]
}

/// What the publisher reports as it goes.
public enum PublisherEvent: Hashable, Sendable {
    /// Waiting for avahi-daemon (absent, restarting, or no system bus).
    case waitingForDaemon(reason: String)
    /// The services were handed to avahi-daemon, which now probes them.
    case registering(deviceName: String)
    /// The services are established on the network.
    case established(deviceName: String)
    /// The wanted name is taken; the device continues under a new one.
    case renamed(from: String, to: String)
    /// A TXT record was updated in place.
    case txtUpdated(type: String)
    /// Something failed; the publisher retries.
    case failed(reason: String)
}
