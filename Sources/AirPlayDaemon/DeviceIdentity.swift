import AirPlayCrypto
import AirPlayReceiver
import AirPlayWire
import FoundationEssentials
import Glibc

/// Where the device id comes from, for logs and tests.
public enum DeviceIDSource: String, Hashable, Sendable {
    /// Read back from the state directory.
    case stored
    /// Taken from a network interface's hardware address.
    case interfaceMAC = "interface MAC"
    /// Derived from a network interface's hardware address and the instance name.
    case instanceDerived = "interface MAC and instance name"
    /// Generated at random (no real interface).
    case generated
    /// Generated at random because another instance on this host held the id.
    case reassigned = "reassigned after a collision"
}

/// Keeps the device id stable across restarts.
///
/// The first start of an unnamed instance takes the MAC of the first real (hardware-backed)
/// interface; a named instance (`instance = "kitchen"`, one zone of several) takes an id derived
/// from that MAC and its name (`instanceID(mac:instance:)`), so zones never start on the same
/// id. With no real interface (containers, VMs with only virtual links) the id is random. It is
/// written to `STATE_DIR/device-id`; every later start reads that file back, so the id survives
/// interface renames and hardware changes. `reassign()` replaces it when another instance on the
/// host turns out to hold it (a copied state directory, two unnamed instances).
public struct DeviceIdentityStore: Sendable {
    /// The state directory holding `device-id`.
    public let directory: String
    /// Where interfaces are listed (`/sys/class/net`); tests point it elsewhere.
    public let interfacesRoot: String

    /// A store in a state directory.
    public init(directory: String, interfacesRoot: String = "/sys/class/net") {
        self.directory = directory
        self.interfacesRoot = interfacesRoot
    }

    /// The file the id is kept in.
    public var path: String { directory.hasSuffix("/") ? directory + "device-id" : directory + "/device-id" }

    /// Reads the stored id, or creates and stores one (for the named `instance`, if any).
    /// - Throws: when the state directory cannot be created or written.
    public func loadOrCreate(instance: String? = nil) throws -> (id: DeviceID, source: DeviceIDSource) {
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let id = DeviceID(text.trimmingWhitespace()) {
            return (id, .stored)
        }
        let (id, source): (DeviceID, DeviceIDSource)
        switch (firstInterfaceMAC(), instance) {
        case (let mac?, let name?): (id, source) = (Self.instanceID(mac: mac, instance: name), .instanceDerived)
        case (let mac?, nil): (id, source) = (mac, .interfaceMAC)
        case (nil, _): (id, source) = (Self.randomID(), .generated)
        }
        try store(id)
        return (id, source)
    }

    /// Replaces the stored id with a new random one, different from `avoiding`.
    /// - Throws: when the file cannot be written.
    public func reassign(avoiding: DeviceID) throws -> DeviceID {
        var id = Self.randomID()
        while id == avoiding { id = Self.randomID() }
        try store(id)
        return id
    }

    private func store(_ id: DeviceID) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try (id.colonForm + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The id of a named instance: the first six bytes of HKDF-SHA-512 over the MAC's six bytes
    /// (salt `airplayd-instance-device-id`, info the instance name in UTF-8), made a unicast,
    /// locally administered address so it can clash with no vendor's MAC. The same box and name
    /// always give the same id, even after the state directory is lost.
    public static func instanceID(mac: DeviceID, instance: String) -> DeviceID {
        var bytes = (try? HKDF.sha512(key: mac.bytes, salt: "airplayd-instance-device-id", info: instance, length: 6))
            ?? SecureRandom.bytes(6)
        bytes[0] = (bytes[0] & 0xFC) | 0x02
        return DeviceID(bytes: bytes)!
    }

    /// The MAC of the first interface (by name) that has a hardware device behind it.
    public func firstInterfaceMAC() -> DeviceID? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: interfacesRoot)) ?? []).sorted()
        for name in names where name != "lo" {
            let base = interfacesRoot + "/" + name
            // Virtual links (veth, bridges, tunnels) have no `device` entry.
            guard FileManager.default.fileExists(atPath: base + "/device"),
                  let text = try? String(contentsOfFile: base + "/address", encoding: .utf8),
                  let id = DeviceID(text.trimmingWhitespace()),
                  id.bytes != [0, 0, 0, 0, 0, 0]
            else { continue }
            return id
        }
        return nil
    }

    /// Six random bytes as a unicast, locally administered MAC (so it cannot clash with a vendor's).
    public static func randomID() -> DeviceID {
        var bytes = SecureRandom.bytes(6)
        bytes[0] = (bytes[0] & 0xFC) | 0x02
        return DeviceID(bytes: bytes)!
    }
}
