import AirPlayPairing
import Foundation
import Testing

/// The pairing identity and the paired controllers on disk.
@Suite struct PairingStoreTests {
    private func directory() -> String {
        let path = NSTemporaryDirectory() + "pairing-store-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private let alice = ControllerPairing(identifier: "alice", publicKey: [UInt8](repeating: 1, count: 32), admin: true)
    private let bob = ControllerPairing(identifier: "bob", publicKey: [UInt8](repeating: 2, count: 32), admin: false)

    @Test func theIdentityIsMadeOnceAndKeptOwnerOnly() throws {
        let path = directory()
        let first = try PairingStore(directory: path)
        let again = try PairingStore(directory: path)
        #expect(first.identity.identifier == again.identity.identifier)
        #expect(first.identity.publicKey == again.identity.publicKey && first.identity.publicKey.count == 32)
        let mode = try FileManager.default.attributesOfItem(atPath: path + "/pairing-identity")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The stored key signs: what M6 and pair-verify need.
        let signature = try again.identity.sign([1, 2, 3])
        #expect(signature.count == 64)
    }

    @Test func pairingsAreAddedUpdatedRemovedAndSurviveARestart() throws {
        let path = directory()
        let store = try PairingStore(directory: path)
        try store.add(alice)
        try store.add(bob)
        try store.add(ControllerPairing(identifier: "bob", publicKey: bob.publicKey, admin: true))
        #expect(try PairingStore(directory: path).all.map(\.identifier) == ["alice", "bob"])
        #expect(store.pairing("bob")?.admin == true)
        // A known identifier with another key is refused (HAP's add-pairing rule).
        #expect(throws: PairingStore.Failure.self) {
            try store.add(ControllerPairing(identifier: "alice", publicKey: [UInt8](repeating: 9, count: 32), admin: true))
        }
        #expect(try store.remove("alice"))
        #expect(try !store.remove("alice"))
        #expect(try PairingStore(directory: path).all == [store.pairing("bob")!])
        let mode = try FileManager.default.attributesOfItem(atPath: path + "/pairings.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func anotherProcessesChangeIsSeen() throws {
        let path = directory()
        let daemon = try PairingStore(directory: path)
        try daemon.add(alice)
        // `airplayd pairings remove` is another store on the same directory.
        let command = try PairingStore(directory: path)
        try command.removeAll()
        #expect(daemon.publicKey(of: "alice") == nil)
    }

    @Test func aBrokenFileIsAnErrorNotAnEmptyList() throws {
        let path = directory()
        _ = try PairingStore(directory: path)
        try Data("[{\"identifier\": 1".utf8).write(to: URL(fileURLWithPath: path + "/pairings.json"))
        #expect(throws: PairingStore.Failure.self) { try PairingStore(directory: path) }
    }
}
