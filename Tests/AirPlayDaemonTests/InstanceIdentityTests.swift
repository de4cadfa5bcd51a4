@testable import AirPlayDaemon
import AirPlayReceiver
import AirPlayWire
import Foundation
import Logging
import Testing

/// Several airplayd on one box (one per zone) each publish an identity of their own: a device
/// id and a pairing identity no other instance on the host holds, and a state directory no
/// other instance uses.
@Suite struct InstanceIdentityTests {
    private let logger = Logger(label: "test")

    private func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "airplayd-instance-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A fake `/sys/class/net` with one hardware interface of a MAC no other test uses.
    private func interfaces() throws -> (root: String, mac: DeviceID) {
        let root = temporaryDirectory()
        let mac = DeviceIdentityStore.randomID()
        try FileManager.default.createDirectory(atPath: root + "/eth0/device", withIntermediateDirectories: true)
        try (mac.colonForm.lowercased() + "\n").write(toFile: root + "/eth0/address", atomically: true, encoding: .utf8)
        return (root, mac)
    }

    @Test func aNameReservedOnTheHostIsHeldUntilItsHolderGoesAway() throws {
        let name = HostReservation.name(kind: "test", value: UUID().uuidString)
        var first: HostReservation? = nil
        if case .reserved(let reservation) = HostReservation.reserve(name) { first = reservation }
        #expect(first != nil)
        guard case .heldElsewhere = HostReservation.reserve(name) else {
            Issue.record("a held name must not be reserved twice")
            return
        }
        first = nil
        guard case .reserved = HostReservation.reserve(name) else {
            Issue.record("a released name is free again")
            return
        }
    }

    @Test func namedInstancesDeriveDistinctStableIDsFromTheMAC() throws {
        let (sys, mac) = try interfaces()
        let kitchen = DeviceIdentityStore(directory: temporaryDirectory(), interfacesRoot: sys)
        let hall = DeviceIdentityStore(directory: temporaryDirectory(), interfacesRoot: sys)
        let kitchenID = try kitchen.loadOrCreate(instance: "kitchen")
        let hallID = try hall.loadOrCreate(instance: "hall")
        #expect(kitchenID.source == .instanceDerived)
        #expect(kitchenID.id != hallID.id && kitchenID.id != mac && hallID.id != mac)
        #expect(kitchenID.id == DeviceIdentityStore.instanceID(mac: mac, instance: "kitchen"))
        #expect(kitchenID.id.bytes[0] & 0x03 == 0x02, "unicast, locally administered")
        // A lost state directory gives the same id back: senders still know the zone.
        let rebuilt = DeviceIdentityStore(directory: temporaryDirectory(), interfacesRoot: sys)
        #expect(try rebuilt.loadOrCreate(instance: "kitchen").id == kitchenID.id)
        // An unnamed instance keeps taking the MAC itself.
        #expect(try DeviceIdentityStore(directory: temporaryDirectory(), interfacesRoot: sys).loadOrCreate().id == mac)
    }

    @Test func twoUnnamedInstancesGetTwoIDsAndKeepThem() throws {
        let (sys, mac) = try interfaces()
        let (firstState, secondState) = (temporaryDirectory(), temporaryDirectory())
        var first: InstanceIdentity? = try InstanceIdentity.claim(stateDirectory: firstState, instance: nil, interfacesRoot: sys, logger: logger)
        let second = try InstanceIdentity.claim(stateDirectory: secondState, instance: nil, interfacesRoot: sys, logger: logger)
        #expect(first?.deviceID == mac && first?.deviceIDSource == .interfaceMAC)
        #expect(second.deviceID != mac && second.deviceIDSource == .reassigned)
        #expect(first?.pairingStore.identity.identifier != second.pairingStore.identity.identifier)
        first = nil
        // Restarted, the first gets its own id back even though the second still runs.
        let again = try InstanceIdentity.claim(stateDirectory: firstState, instance: nil, interfacesRoot: sys, logger: logger)
        #expect(again.deviceID == mac && again.deviceIDSource == .stored)
    }

    @Test func aCopiedStateDirectoryGetsANewDeviceIDAndPairingIdentity() throws {
        let (sys, _) = try interfaces()
        let original = temporaryDirectory()
        let running = try InstanceIdentity.claim(stateDirectory: original, instance: "kitchen", interfacesRoot: sys, logger: logger)
        let copy = temporaryDirectory()
        for file in ["device-id", "pairing-identity"] {
            try FileManager.default.copyItem(atPath: original + "/" + file, toPath: copy + "/" + file)
        }
        let copied = try InstanceIdentity.claim(stateDirectory: copy, instance: "hall", interfacesRoot: sys, logger: logger)
        #expect(copied.deviceID != running.deviceID && copied.deviceIDSource == .reassigned)
        #expect(copied.pairingStore.identity.identifier != running.pairingStore.identity.identifier)
        #expect(copied.pairingStore.identity.publicKey != running.pairingStore.identity.publicKey)
        #expect(copied.pairingStore.replacedIdentity == running.pairingStore.identity.identifier)
        // The new identity is what the copy keeps from now on.
        let stored = try String(contentsOfFile: copy + "/device-id", encoding: .utf8)
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == copied.deviceID.colonForm)
    }

    @Test func oneStateDirectoryServesOneInstance() throws {
        let (sys, _) = try interfaces()
        let state = temporaryDirectory()
        let running = try InstanceIdentity.claim(stateDirectory: state, instance: nil, interfacesRoot: sys, logger: logger)
        do {
            _ = try InstanceIdentity.claim(stateDirectory: state, instance: nil, interfacesRoot: sys, logger: logger)
            Issue.record("a second instance on one state directory must be refused")
        } catch {
            #expect(error.key == "state_dir")
            #expect(error.message.contains("in use by another running airplayd"), "\(error)")
        }
        withExtendedLifetime(running) {}
    }

    @Test func instanceNamesAreCheckedLikeSystemdInstanceNames() throws {
        #expect(try ReceiverConfiguration.parse(toml: "instance = \"kitchen-2\"\n").instance == "kitchen-2")
        #expect(throws: ConfigurationError.self) { try ReceiverConfiguration.parse(toml: "instance = \"\"\n") }
        #expect(throws: ConfigurationError.self) { try ReceiverConfiguration.parse(toml: "instance = \"a/b\"\n") }
        #expect(throws: ConfigurationError.self) { try ReceiverConfiguration.parse(toml: "instance = \"\(String(repeating: "x", count: 33))\"\n") }
    }
}
