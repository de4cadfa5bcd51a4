import AirPlayCrypto
import AirPlayWire
import FoundationEssentials
import Glibc
import Synchronization

/// The receiver's pairing state on disk, in its state directory: its own identity
/// (`pairing-identity`, made once) and the controllers paired with it (`pairings.json`), each
/// file mode 0600 and replaced atomically.
public final class PairingStore: Sendable {
    /// Why the store cannot be used.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public let description: String
    }

    /// The most controllers kept (HAP's accessories hold at least 16).
    public static let capacity = 32

    /// The receiver's identity, published as `pi` and `pk`.
    public let identity: PairingIdentity
    /// The identifier of the identity found on disk and refused by `accept` (another instance
    /// on the host publishes it: a copied state directory), replaced by a new one; nil normally.
    public let replacedIdentity: String?
    private let pairingsPath: String
    /// The `flock` file that orders the read-modify-write cycles of the daemon and the command.
    private let lockPath: String
    /// The pairings and the file's change time when they were read (`airplayd pairings`
    /// edits the file while the daemon runs: a newer file is read again).
    private let pairings: Mutex<(list: [ControllerPairing], changed: FileVersion)>

    /// Opens the store in `directory`, creating the identity on first use, or anew when
    /// `accept` refuses the stored one (it reserves the identity on the host for the daemon).
    public init(directory: String, accept: (PairingIdentity) -> Bool = { _ in true }) throws(Failure) {
        let base = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        _ = mkdir(base, 0o700)
        // Temporary files of writers killed mid-write (the real files are intact).
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
            where name.hasPrefix("pairings.json.tmp.") || name.hasPrefix("pairing-identity.tmp.") {
            _ = unlink(base + "/" + name)
        }
        let found = try Self.loadOrCreateIdentity(path: base + "/pairing-identity")
        if accept(found) {
            identity = found
            replacedIdentity = nil
        } else {
            identity = try Self.createIdentity(path: base + "/pairing-identity")
            replacedIdentity = found.identifier
            _ = accept(identity)
        }
        pairingsPath = base + "/pairings.json"
        lockPath = base + "/pairings.lock"
        pairings = Mutex((try Self.loadPairings(path: pairingsPath), Self.changeTime(pairingsPath)))
    }

    /// The controllers, in the order they were paired.
    public var all: [ControllerPairing] { current() }

    /// A controller's public key.
    public func publicKey(of identifier: String) -> [UInt8]? {
        current().first { $0.identifier == identifier }?.publicKey
    }

    /// The stored pairing of a controller.
    public func pairing(_ identifier: String) -> ControllerPairing? {
        current().first { $0.identifier == identifier }
    }

    /// The list, read again when another process changed the file.
    private func current() -> [ControllerPairing] {
        pairings.withLock { state in
            Self.refresh(&state, path: pairingsPath)
            return state.list
        }
    }

    /// Reads the file again when it changed. A file that no longer reads (unreadable, broken)
    /// leaves no controller authorised rather than the old list: failing closed.
    private static func refresh(_ state: inout (list: [ControllerPairing], changed: FileVersion), path: String) {
        let changed = changeTime(path)
        guard changed != state.changed else { return }
        state = ((try? loadPairings(path: path)) ?? [], changed)
    }

    /// Which version of the file is on disk: every atomic replace makes a new inode, and the
    /// change time alone is too coarse (the kernel stamps it a few milliseconds at a time).
    struct FileVersion: Equatable {
        var inode: UInt64 = 0
        var size: Int64 = 0
        var changed: Int64 = 0
    }

    /// The file's version; all zero when it does not exist.
    private static func changeTime(_ path: String) -> FileVersion {
        var info = stat()
        guard stat(path, &info) == 0 else { return FileVersion() }
        return FileVersion(inode: UInt64(info.st_ino), size: Int64(info.st_size),
                           changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    /// Adds a controller, or updates its admin flag. Throws `.maxPeers`-worthy failures when
    /// full, and refuses a known identifier with a different key (HAP's `add pairing` rule).
    public func add(_ pairing: ControllerPairing) throws(Failure) {
        let result: Result<[ControllerPairing], Failure> = AtomicFile.withLock(lockPath) { pairings.withLock { state in
            Self.refresh(&state, path: pairingsPath)
            var next = state.list
            if let index = next.firstIndex(where: { $0.identifier == pairing.identifier }) {
                guard next[index].publicKey == pairing.publicKey else {
                    return .failure(Failure(description: "\(pairing.identifier) is paired with another key"))
                }
                next[index].admin = pairing.admin
            } else {
                guard next.count < Self.capacity else { return .failure(Failure(description: "the receiver holds \(Self.capacity) pairings")) }
                next.append(pairing)
            }
            if let failure = Self.saveFailure(next, to: pairingsPath) { return .failure(failure) }
            state = (next, Self.changeTime(pairingsPath))
            return .success(next)
        } }
        _ = try result.get()
    }

    /// Removes a controller (nothing when unknown); true when one was removed.
    @discardableResult
    public func remove(_ identifier: String) throws(Failure) -> Bool {
        try update { $0.removeAll { $0.identifier == identifier } }
    }

    /// Removes every controller; true when there were any.
    @discardableResult
    public func removeAll() throws(Failure) -> Bool {
        try update { $0.removeAll() }
    }

    private func update(_ change: (inout [ControllerPairing]) -> Void) throws(Failure) -> Bool {
        let result: Result<Bool, Failure> = AtomicFile.withLock(lockPath) { pairings.withLock { state in
            Self.refresh(&state, path: pairingsPath)
            var next = state.list
            change(&next)
            guard next != state.list else { return .success(false) }
            if let failure = Self.saveFailure(next, to: pairingsPath) { return .failure(failure) }
            state = (next, Self.changeTime(pairingsPath))
            return .success(true)
        } }
        return try result.get()
    }

    // MARK: Files

    private struct StoredIdentity: Codable {
        var identifier: String
        var seed: String
        var publicKey: String
    }

    private struct StoredPairing: Codable {
        var identifier: String
        var publicKey: String
        var admin: Bool
    }

    private static func loadOrCreateIdentity(path: String) throws(Failure) -> PairingIdentity {
        do {
            if let bytes = try AtomicFile.read(path) {
                let stored = try JSONDecoder().decode(StoredIdentity.self, from: Data(bytes))
                guard let seed = hexBytes(stored.seed), seed.count == 32, let publicKey = hexBytes(stored.publicKey), publicKey.count == 32,
                      !stored.identifier.isEmpty else {
                    throw Failure(description: "\(path) holds no usable identity")
                }
                return PairingIdentity(identifier: stored.identifier, seed: seed, publicKey: publicKey)
            }
            return try createIdentity(path: path)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "pairing identity \(path): \(error)")
        }
    }

    /// Makes a new identity (a fresh Ed25519 key and identifier) and writes it to `path`.
    private static func createIdentity(path: String) throws(Failure) -> PairingIdentity {
        do {
            let key = Ed25519SigningKey.generate()
            let identity = PairingIdentity(identifier: UUID().uuidString, key: key)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let stored = StoredIdentity(identifier: identity.identifier, seed: TextFormatting.hex(key.seed), publicKey: TextFormatting.hex(key.publicKey))
            try AtomicFile.write(Array(try encoder.encode(stored)), to: path)
            return identity
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "pairing identity \(path): \(error)")
        }
    }

    private static func loadPairings(path: String) throws(Failure) -> [ControllerPairing] {
        do {
            guard let bytes = try AtomicFile.read(path) else { return [] }
            let stored = try JSONDecoder().decode([StoredPairing].self, from: Data(bytes))
            return try stored.map { item throws(Failure) in
                guard let key = hexBytes(item.publicKey), key.count == 32 else { throw Failure(description: "\(path): a key is not 32 bytes") }
                return ControllerPairing(identifier: item.identifier, publicKey: key, admin: item.admin)
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "pairings \(path): \(error)")
        }
    }

    /// Writes the list; the failure, or nil when it is on disk.
    private static func saveFailure(_ list: [ControllerPairing], to path: String) -> Failure? {
        do {
            try save(list, to: path)
            return nil
        } catch {
            return error
        }
    }

    private static func save(_ list: [ControllerPairing], to path: String) throws(Failure) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let stored = list.map { StoredPairing(identifier: $0.identifier, publicKey: TextFormatting.hex($0.publicKey), admin: $0.admin) }
            try AtomicFile.write(Array(try encoder.encode(stored)), to: path)
        } catch let failure as AtomicFile.Failure {
            throw Failure(description: failure.description)
        } catch {
            throw Failure(description: "pairings \(path): \(error)")
        }
    }

    private static func hexBytes(_ text: String) -> [UInt8]? { TextFormatting.bytes(hex: text) }
}
