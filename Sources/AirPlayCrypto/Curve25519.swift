internal import COpenSSL

/// An Ed25519 signing key: a pairing identity's long-term key (LTSK), whose public half (LTPK)
/// the other side stores.
public final class Ed25519SigningKey: @unchecked Sendable {
    // `@unchecked Sendable`: the EVP_PKEY is immutable after init; OpenSSL allows concurrent use.
    private let key: OpaquePointer
    /// The 32-byte private seed (what the state directory stores).
    public let seed: [UInt8]
    /// The 32-byte public key.
    public let publicKey: [UInt8]

    /// The key for a 32-byte seed.
    public init(seed: [UInt8]) throws(CryptoError) {
        guard seed.count == 32 else { throw CryptoError(description: "an Ed25519 seed is 32 bytes, not \(seed.count)") }
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, 32) else { throw CryptoError.openSSL("Ed25519 key") }
        self.key = key
        self.seed = seed
        publicKey = try RawKey.publicKey(of: key)
    }

    /// A new random key.
    public static func generate() -> Ed25519SigningKey {
        // A random 32-byte seed is always a valid Ed25519 key.
        try! Ed25519SigningKey(seed: SecureRandom.bytes(32))
    }

    deinit { EVP_PKEY_free(key) }

    /// The 64-byte signature of `message`.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        // Ed25519 hashes internally: no digest is named.
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1,
              EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64 else {
            throw CryptoError.openSSL("Ed25519 sign")
        }
        return signature
    }
}

/// Ed25519 signature checks against a peer's 32-byte public key.
public enum Ed25519 {
    /// True when `signature` is `publicKey`'s signature of `message`; false for any malformed input.
    public static func isValid(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
              let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, 32) else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
            && EVP_DigestVerify(context, signature, 64, message, message.count) == 1
    }
}

/// An X25519 key pair for one pair-verify exchange (ephemeral, never stored).
public final class X25519KeyAgreement: @unchecked Sendable {
    // `@unchecked Sendable`: the EVP_PKEY is immutable after init.
    private let key: OpaquePointer
    /// The 32-byte public key sent to the peer.
    public let publicKey: [UInt8]

    /// A key from 32 private bytes (tests and vectors) or, by default, random ones.
    public init(privateKey: [UInt8] = SecureRandom.bytes(32)) throws(CryptoError) {
        guard privateKey.count == 32 else { throw CryptoError(description: "an X25519 private key is 32 bytes") }
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, privateKey, 32) else { throw CryptoError.openSSL("X25519 key") }
        self.key = key
        publicKey = try RawKey.publicKey(of: key)
    }

    deinit { EVP_PKEY_free(key) }

    /// The 32-byte shared secret with a peer's public key; throws for a malformed or low-order key.
    public func sharedSecret(with peerPublicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard peerPublicKey.count == 32 else { throw CryptoError(description: "an X25519 public key is 32 bytes, not \(peerPublicKey.count)") }
        guard let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, peerPublicKey, 32) else { throw CryptoError.openSSL("X25519 peer key") }
        defer { EVP_PKEY_free(peer) }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = 32
        // OpenSSL refuses an all-zero result (a low-order peer key), as RFC 7748 advises.
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer) == 1,
              EVP_PKEY_derive(context, &secret, &length) == 1, length == 32 else {
            throw CryptoError.openSSL("X25519 shared secret")
        }
        return secret
    }
}

enum RawKey {
    static func publicKey(of key: OpaquePointer) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &bytes, &length) == 1, length == 32 else { throw CryptoError.openSSL("raw public key") }
        return bytes
    }
}
