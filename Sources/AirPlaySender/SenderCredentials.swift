import AirPlayCrypto
import AirPlayPairing
import AirPlayWire
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
            guard let seed = TextFormatting.bytes(hex: stored.controller.seed), let key = TextFormatting.bytes(hex: stored.controller.publicKey),
                  seed.count == 32, key.count == 32 else { throw SenderError(.badInput, "\(path): the sender's key is damaged") }
            identity = PairingIdentity(identifier: stored.controller.identifier, seed: seed, publicKey: key)
            receivers = try stored.receivers.mapValues { receiver throws(SenderError) in
                guard let key = TextFormatting.bytes(hex: receiver.publicKey), key.count == 32 else { throw SenderError(.badInput, "\(path): a receiver key is damaged") }
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
                controller: .init(identifier: identity.identifier, seed: TextFormatting.hex(identity.seed), publicKey: TextFormatting.hex(identity.publicKey)),
                receivers: receivers.mapValues { .init(identifier: $0.identifier, publicKey: TextFormatting.hex($0.publicKey)) })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try AtomicFile.write(Array(try encoder.encode(stored)), to: path)
        } catch {
            throw SenderError(.badInput, "cannot write \(path): \(error)")
        }
    }
}

extension ReceiverConnection {
    /// What every command does after connecting: pair-verify when this sender paired with the
    /// receiver (its stored credentials), else transient pairing when the receiver offers it.
    public func secure(for key: String, offersTransientPairing: Bool, credentials: SenderCredentials) async throws(SenderError) {
        if let receiver = credentials.receivers[key] {
            try await pairVerify(identity: credentials.identity, receiver: receiver)
        } else if offersTransientPairing {
            try await pairTransient(identity: credentials.identity)
        }
    }
}
