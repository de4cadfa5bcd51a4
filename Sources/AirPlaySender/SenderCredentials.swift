import AirPlayCrypto
import AirPlayPairing
import Foundation

/// The sender's pairing state: its own identity (made once) and the receivers it paired with,
/// in `$XDG_CONFIG_HOME/airplay/credentials.json` (else `~/.config/airplay/`), mode 0600,
/// replaced atomically.
public struct SenderCredentials: Sendable {
    /// The file.
    public let path: String
    /// This sender's pairing identity.
    public private(set) var identity: PairingIdentity
    /// Receivers paired with, by receiver key (device id, else `host:port`).
    public private(set) var receivers: [String: PairingClient.ReceiverCredentials]

    private struct Stored: Codable {
        struct Identity: Codable {
            var identifier: String
            var seed: String
            var publicKey: String
        }
        struct Receiver: Codable {
            var identifier: String
            var publicKey: String
        }
        var controller: Identity
        var receivers: [String: Receiver]
    }

    /// The default file.
    public static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        return base + "/airplay/credentials.json"
    }

    /// Loads the file, or starts a fresh identity when there is none (written on the first `save`).
    public init(path: String = SenderCredentials.defaultPath) throws(SenderError) {
        self.path = path
        do {
            guard let bytes = try AtomicFile.read(path) else {
                identity = PairingIdentity(identifier: UUID().uuidString.lowercased(), key: Ed25519SigningKey.generate())
                receivers = [:]
                return
            }
            let stored = try JSONDecoder().decode(Stored.self, from: Data(bytes))
            guard let seed = Self.bytes(stored.controller.seed), let key = Self.bytes(stored.controller.publicKey),
                  seed.count == 32, key.count == 32 else { throw SenderError(.badInput, "\(path): the sender's key is damaged") }
            identity = PairingIdentity(identifier: stored.controller.identifier, seed: seed, publicKey: key)
            receivers = try stored.receivers.mapValues { receiver throws(SenderError) in
                guard let key = Self.bytes(receiver.publicKey), key.count == 32 else { throw SenderError(.badInput, "\(path): a receiver key is damaged") }
                return PairingClient.ReceiverCredentials(identifier: receiver.identifier, publicKey: key)
            }
        } catch let error as SenderError {
            throw error
        } catch {
            throw SenderError(.badInput, "\(path): \(error)")
        }
    }

    /// Records a receiver paired with.
    public mutating func remember(_ receiver: PairingClient.ReceiverCredentials, as key: String) { receivers[key] = receiver }

    /// Forgets a receiver; true when it was known.
    @discardableResult
    public mutating func forget(_ key: String) -> Bool { receivers.removeValue(forKey: key) != nil }

    /// Writes the file (creating its directory, mode 0700).
    public func save() throws(SenderError) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let stored = Stored(
                controller: .init(identifier: identity.identifier, seed: Self.hex(identity.seed), publicKey: Self.hex(identity.publicKey)),
                receivers: receivers.mapValues { .init(identifier: $0.identifier, publicKey: Self.hex($0.publicKey)) })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try AtomicFile.write(Array(try encoder.encode(stored)), to: path)
        } catch {
            throw SenderError(.badInput, "cannot write \(path): \(error)")
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private static func bytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }
}

extension ReceiverConnection {
    /// What every command does after connecting: pair-verify when this sender paired with the
    /// receiver (its stored credentials), else transient pairing when the receiver offers it.
    public func secure(for key: String, features: FeatureSetHint, credentials: SenderCredentials) async throws(SenderError) {
        if let receiver = credentials.receivers[key] {
            try await pairVerify(identity: credentials.identity, receiver: receiver)
        } else if features.offersTransientPairing {
            try await pairTransient(identity: credentials.identity)
        }
    }
}

/// What the sender knows of a receiver's pairing offer before connecting (from discovery).
public struct FeatureSetHint: Sendable {
    /// The receiver advertises transient pairing (features bit 43 or 48).
    public var offersTransientPairing: Bool

    /// A hint from its parts.
    public init(offersTransientPairing: Bool) { self.offersTransientPairing = offersTransientPairing }
}
