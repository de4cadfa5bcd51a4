import AirPlayPairing
import AirPlayReceiver
import AirPlayWire
import FoundationEssentials
import Logging

/// Who one airplayd instance is, held for the process's life: its state directory (locked), its
/// device id and its pairing identity (each reserved on the host, see `HostReservation`).
///
/// Several instances on one box (one per zone) must each look like a device of their own: a
/// sender keys devices by `deviceid` and pairings by `pi`/`pk`, so two instances publishing the
/// same one would merge into one device behind two names. A collision found at start (a copied
/// state directory, two unnamed instances taking the same MAC) is logged and resolved here, by
/// giving this instance a new id, before anything is published.
public final class InstanceIdentity: Sendable {
    /// The device id published as `deviceid` and the RAOP name prefix.
    public let deviceID: DeviceID
    /// Where the device id came from.
    public let deviceIDSource: DeviceIDSource
    /// The pairing identity and pairings of this instance.
    public let pairingStore: PairingStore
    /// What keeps the identity ours: released when the instance goes away.
    private let lock: StateDirectoryLock
    private let reservations: [HostReservation]

    private init(deviceID: DeviceID, source: DeviceIDSource, pairingStore: PairingStore,
                 lock: StateDirectoryLock, reservations: [HostReservation]) {
        self.deviceID = deviceID
        self.deviceIDSource = source
        self.pairingStore = pairingStore
        self.lock = lock
        self.reservations = reservations
    }

    /// The most ids tried before giving up (only reached if something squats on random ids).
    static let attempts = 8

    /// Locks the state directory and claims a device id and pairing identity no other instance
    /// on this host holds, replacing stored ones that another instance holds.
    /// - Parameter interfacesRoot: where network interfaces are listed (tests point it elsewhere).
    public static func claim(stateDirectory: String, instance: String?, interfacesRoot: String = "/sys/class/net",
                             logger: Logger) throws(ConfigurationError) -> InstanceIdentity {
        let lock: StateDirectoryLock
        do {
            lock = try StateDirectoryLock.lock(stateDirectory)
        } catch {
            throw ConfigurationError(key: "state_dir", message: "\(stateDirectory) \(error)")
        }
        let store = DeviceIdentityStore(directory: stateDirectory, interfacesRoot: interfacesRoot)
        var reservations: [HostReservation] = []
        let (id, source): (DeviceID, DeviceIDSource)
        do {
            (id, source) = try claimDeviceID(store: store, instance: instance, into: &reservations, logger: logger)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            // Without a writable state directory the id would change on every start: refuse.
            throw ConfigurationError(key: "state_dir", message: "cannot keep the device id in \(store.path): \(error)")
        }
        let pairingStore: PairingStore
        do {
            pairingStore = try PairingStore(directory: stateDirectory) { identity in
                reserve(kind: "pairing-id", value: identity.identifier, into: &reservations, logger: logger)
            }
        } catch {
            throw ConfigurationError(key: "state_dir", message: "cannot keep the pairing identity and pairings: \(error)")
        }
        if let old = pairingStore.replacedIdentity {
            logger.warning("pairing identity in use by another airplayd on this host; made a new one (senders paired with the old one must pair again)",
                           metadata: ["pairing.oldIdentity": "\(old)", "pairing.identity": "\(pairingStore.identity.identifier)"])
        }
        return InstanceIdentity(deviceID: id, source: source, pairingStore: pairingStore, lock: lock, reservations: reservations)
    }

    /// The stored (or first) device id, reserved; a new one in its place while another instance holds it.
    private static func claimDeviceID(store: DeviceIdentityStore, instance: String?, into reservations: inout [HostReservation],
                                      logger: Logger) throws -> (DeviceID, DeviceIDSource) {
        var (id, source) = try store.loadOrCreate(instance: instance)
        for _ in 0..<attempts {
            if reserve(kind: "device-id", value: id.compactForm, into: &reservations, logger: logger) { return (id, source) }
            let taken = id
            id = try store.reassign(avoiding: taken)
            source = .reassigned
            logger.warning("device id in use by another airplayd on this host; this instance takes a new one",
                           metadata: ["device.takenID": "\(taken)", "device.id": "\(id)", "state_dir": "\(store.directory)"])
        }
        throw ConfigurationError(key: "state_dir", message: "no free device id after \(attempts) tries")
    }

    /// Reserves one name; false only when another process holds it. When the host refuses
    /// reservations altogether (a sandbox without Unix sockets) the identity is used unchecked.
    private static func reserve(kind: String, value: String, into reservations: inout [HostReservation], logger: Logger) -> Bool {
        switch HostReservation.reserve(HostReservation.name(kind: kind, value: value)) {
        case .reserved(let reservation):
            reservations.append(reservation)
            return true
        case .heldElsewhere:
            return false
        case .unavailable(let code):
            logger.warning("cannot check that no other airplayd on this host uses this identity",
                           metadata: ["identity.kind": "\(kind)", "errno": "\(code)"])
            return true
        }
    }
}
