import AirPlayCrypto

/// The HKDF-SHA-512 labels of HAP pairing: each key is `HKDF(secret, salt, info, 32)`.
public enum PairingLabel {
    /// Seals M5/M6 of pair-setup (from the SRP key).
    public static let setupEncrypt = ("Pair-Setup-Encrypt-Salt", "Pair-Setup-Encrypt-Info")
    /// What the controller signs in M5, with its id and key.
    public static let controllerSign = ("Pair-Setup-Controller-Sign-Salt", "Pair-Setup-Controller-Sign-Info")
    /// What the accessory signs in M6, with its id and key.
    public static let accessorySign = ("Pair-Setup-Accessory-Sign-Salt", "Pair-Setup-Accessory-Sign-Info")
    /// Seals M2/M3 of pair-verify (from the X25519 secret).
    public static let verifyEncrypt = ("Pair-Verify-Encrypt-Salt", "Pair-Verify-Encrypt-Info")

    /// The 32-byte key for a label pair.
    public static func key(_ secret: [UInt8], _ label: (String, String)) throws(CryptoError) -> [UInt8] {
        try HKDF.sha512(key: secret, salt: label.0, info: label.1)
    }
}

/// The two keys of the encrypted control connection, from the secret a pair-verify (the X25519
/// secret) or a transient pair-setup (the 64-byte SRP key) ends with.
public struct ControlChannelKeys: Equatable, Sendable {
    /// What the sender writes and the receiver reads (`Control-Write-Encryption-Key`).
    public let senderToReceiver: [UInt8]
    /// What the receiver writes and the sender reads (`Control-Read-Encryption-Key`).
    public let receiverToSender: [UInt8]
    /// The secret the keys came from (AirPlay 2's event and audio keys derive from it too).
    public let sharedSecret: [UInt8]

    /// The keys for a secret.
    public init(sharedSecret: [UInt8]) throws(CryptoError) {
        self.sharedSecret = sharedSecret
        senderToReceiver = try HKDF.sha512(key: sharedSecret, salt: "Control-Salt", info: "Control-Write-Encryption-Key")
        receiverToSender = try HKDF.sha512(key: sharedSecret, salt: "Control-Salt", info: "Control-Read-Encryption-Key")
    }
}

/// The keys of AirPlay 2's event channel (the TCP connection the sender opens to SETUP's
/// `eventPort`), from the same secret as the control channel, salt `Events-Salt`. The
/// receiver writes with `Events-Write-Encryption-Key`, though the sender dialled.
public struct EventChannelKeys: Equatable, Sendable {
    /// What the receiver writes (`Events-Write-Encryption-Key`).
    public let receiverToSender: [UInt8]
    /// What the sender writes (`Events-Read-Encryption-Key`).
    public let senderToReceiver: [UInt8]

    /// The keys for a pairing's shared secret.
    public init(sharedSecret: [UInt8]) throws(CryptoError) {
        receiverToSender = try HKDF.sha512(key: sharedSecret, salt: "Events-Salt", info: "Events-Write-Encryption-Key")
        senderToReceiver = try HKDF.sha512(key: sharedSecret, salt: "Events-Salt", info: "Events-Read-Encryption-Key")
    }
}

/// The keys of an AirPlay 2 data stream (a type-130 stream: MediaRemote messages between an
/// iPhone and the box), from the pairing's shared secret and the stream's `seed`: salt
/// `DataStream-Salt` followed by the seed in decimal (the seed read as unsigned: senders draw it
/// from 0 to 2^64).
public struct DataStreamKeys: Equatable, Sendable {
    /// What the sender writes (`DataStream-Output-Encryption-Key`).
    public let senderToReceiver: [UInt8]
    /// What the receiver writes (`DataStream-Input-Encryption-Key`).
    public let receiverToSender: [UInt8]

    /// The keys for a pairing's shared secret and a stream's seed.
    public init(sharedSecret: [UInt8], seed: UInt64) throws(CryptoError) {
        let salt = "DataStream-Salt" + String(seed)
        senderToReceiver = try HKDF.sha512(key: sharedSecret, salt: salt, info: "DataStream-Output-Encryption-Key")
        receiverToSender = try HKDF.sha512(key: sharedSecret, salt: salt, info: "DataStream-Input-Encryption-Key")
    }
}

/// A long-term Ed25519 identity: the receiver's (accessory) or the sender's (controller).
///
/// It keeps the seed and public key as bytes and makes the OpenSSL key only to sign, so a
/// receiver that is only waiting never loads OpenSSL's providers (about 2 MiB).
public struct PairingIdentity: Sendable {
    /// The pairing identifier (an upper-case UUID for ours, whatever the peer chose for theirs).
    public let identifier: String
    /// The Ed25519 public key (32 bytes).
    public let publicKey: [UInt8]
    /// The Ed25519 seed (32 bytes).
    public let seed: [UInt8]

    /// An identity from a key.
    public init(identifier: String, key: Ed25519SigningKey) {
        self.identifier = identifier
        publicKey = key.publicKey
        seed = key.seed
    }

    /// An identity from stored bytes (the public key is trusted to match the seed).
    public init(identifier: String, seed: [UInt8], publicKey: [UInt8]) {
        self.identifier = identifier
        self.seed = seed
        self.publicKey = publicKey
    }

    /// The 64-byte Ed25519 signature of `message`.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Ed25519SigningKey(seed: seed).sign(message)
    }
}

/// A controller that completed pair-setup: what a pair-verify is checked against.
public struct ControllerPairing: Codable, Equatable, Sendable {
    /// Its pairing identifier (pyatv: a lower-case UUID; iOS: a UUID).
    public var identifier: String
    /// Its Ed25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// Whether it may add, remove and list pairings.
    public var admin: Bool

    /// A pairing from its parts.
    public init(identifier: String, publicKey: [UInt8], admin: Bool) {
        self.identifier = identifier
        self.publicKey = publicKey
        self.admin = admin
    }
}

/// One answer of a receiver's pairing machine: the TLV8 reply and what the connection does
/// after sending it.
public struct PairingStep<Outcome: Sendable>: Sendable {
    /// The TLV8 reply.
    public var reply: TLV8
    /// What to do after sending it.
    public var outcome: Outcome
}

/// How a pairing message failed, as HAP answers it: the state to reply with and the error code.
public struct PairingFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The reply's state (the request's plus one).
    public let state: UInt8
    /// HAP's error code.
    public let code: TLV8.ErrorCode
    /// Why, for the log.
    public let reason: String
    /// Seconds until the sender may try again (HAP's RetryDelay, with the Backoff error).
    public let retryDelay: Int?

    /// A failure from its parts.
    public init(state: UInt8, code: TLV8.ErrorCode, reason: String, retryDelay: Int? = nil) {
        self.state = state
        self.code = code
        self.reason = reason
        self.retryDelay = retryDelay
    }

    /// The TLV8 reply: state and error, and the retry delay when there is one (a little-endian
    /// integer of as few bytes as it takes, as HAP writes integers).
    public var reply: TLV8 {
        var reply = TLV8([(.state, [state]), (.error, [code.rawValue])])
        if let retryDelay {
            var value = UInt64(max(0, retryDelay)), bytes: [UInt8] = []
            repeat {
                bytes.append(UInt8(value & 0xFF))
                value >>= 8
            } while value > 0
            reply.append(.retryDelay, bytes)
        }
        return reply
    }

    /// The reason.
    public var description: String { reason }
}

extension TLV8 {
    /// The sub-TLV of identifier, public key and signature that M5, M6 and pair-verify seal.
    static func signedIdentity(identifier: [UInt8], publicKey: [UInt8]? = nil, signature: [UInt8]) -> TLV8 {
        var tlv = TLV8()
        tlv.append(.identifier, identifier)
        if let publicKey { tlv.append(.publicKey, publicKey) }
        tlv.append(.signature, signature)
        return tlv
    }
}
