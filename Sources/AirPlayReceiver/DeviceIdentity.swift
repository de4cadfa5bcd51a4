import AirPlayCrypto
import AirPlayWire
import FoundationEssentials
import Glibc

/// Where the device id comes from, for logs and tests.
public enum DeviceIDSource: String, Hashable, Sendable {
    /// Read back from the state directory.
    case stored
    /// Taken from a network interface's hardware address.
    case interfaceMAC = "interface MAC"
    /// Generated at random (no real interface).
    case generated
}

/// Keeps the device id stable across restarts.
///
/// The first start takes the MAC of the first real (hardware-backed) interface, or makes a
/// random locally-administered id when there is none (containers, VMs with only virtual links),
/// and writes it to `STATE_DIR/device-id`; every later start reads that file back, so the id
/// survives interface renames and hardware changes.
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

    /// Reads the stored id, or creates and stores one.
    /// - Throws: when the state directory cannot be created or written.
    public func loadOrCreate() throws -> (id: DeviceID, source: DeviceIDSource) {
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let id = DeviceID(text.trimmingWhitespace()) {
            return (id, .stored)
        }
        let (id, source) = firstInterfaceMAC().map { ($0, DeviceIDSource.interfaceMAC) } ?? (Self.randomID(), .generated)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try (id.colonForm + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return (id, source)
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
