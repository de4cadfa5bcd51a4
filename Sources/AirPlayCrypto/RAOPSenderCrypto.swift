internal import COpenSSL
import Synchronization
import FoundationEssentials

/// The sender's side of RAOP's RSA: a fresh AES stream key wrapped for the receiver, and the
/// check of a receiver's `Apple-Response`. Both use the public half of the AirPort key.
public final class RAOPSenderCrypto: @unchecked Sendable {
    private let key: OpaquePointer

    /// Loads the AirPort key (only its public operations are used).
    public init() throws(CryptoError) { key = try AirPortKey.load() }

    deinit { EVP_PKEY_free(key) }

    /// `aeskey` wrapped with RSA-OAEP (SHA-1), as `a=rsaaeskey` carries it.
    public func wrap(streamKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_encrypt_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1 else {
            throw CryptoError.openSSL("encrypt init")
        }
        var length = 0
        guard EVP_PKEY_encrypt(context, nil, &length, streamKey, streamKey.count) == 1 else { throw CryptoError.openSSL("encrypt size") }
        var wrapped = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(context, &wrapped, &length, streamKey, streamKey.count) == 1 else { throw CryptoError.openSSL("encrypt") }
        return Array(wrapped.prefix(length))
    }

    /// What a receiver's `Apple-Response` signs, recovered with the public key; nil when it is not
    /// a valid signature by the AirPort key.
    public func signedMessage(appleResponse: String) -> [UInt8]? {
        guard let signature = Base64.decode(appleResponse), signature.count == 256,
              let context = EVP_PKEY_CTX_new(key, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_verify_recover_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1 else {
            return nil
        }
        var length = 0
        guard EVP_PKEY_verify_recover(context, nil, &length, signature, signature.count) == 1 else { return nil }
        var message = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_verify_recover(context, &message, &length, signature, signature.count) == 1 else { return nil }
        return Array(message.prefix(length))
    }

    /// True when `appleResponse` signs our challenge followed by the receiver's address as we
    /// reached it (4 or 16 bytes) and, when known, its 6-byte device id.
    public func verify(appleResponse: String, challenge: [UInt8], receiverAddress: [UInt8], deviceID: [UInt8]?) -> Bool {
        guard let message = signedMessage(appleResponse: appleResponse) else { return false }
        var expected = challenge + receiverAddress + (deviceID ?? [])
        if deviceID != nil, expected.count < 32 { expected += [UInt8](repeating: 0, count: 32 - expected.count) }
        return message.starts(with: expected)
    }
}

/// RAOP packet encryption: AES-128-CBC over the whole 16-byte blocks of each payload, the IV
/// reset for every packet, the bytes after the last whole block left in clear.
public final class RAOPPacketEncryptor: @unchecked Sendable {
    // `@unchecked Sendable`: the OpenSSL context is used only under `lock`.
    private let context: OpaquePointer
    private let lock = Mutex(())
    /// The stream key (16 bytes).
    public let key: [UInt8]
    /// The IV every packet starts from (16 bytes).
    public let iv: [UInt8]

    /// An encryptor with a fresh random key and IV.
    public convenience init() throws(CryptoError) {
        try self.init(key: SecureRandom.bytes(16), iv: SecureRandom.bytes(16))
    }

    /// An encryptor for a given key and IV (16 bytes each).
    public init(key: [UInt8], iv: [UInt8]) throws(CryptoError) {
        guard key.count == 16, iv.count == 16 else { throw CryptoError(description: "AES key and IV must be 16 bytes") }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
        self.context = context
        self.key = key
        self.iv = iv
        guard RAOPPacketCipher.prepare(context: context, key: key, iv: iv, encrypt: true) else {
            throw CryptoError.openSSL("EVP_CipherInit_ex")
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// The encrypted payload.
    public func encrypt(_ payload: [UInt8]) -> [UInt8] {
        lock.withLock { _ in payload.withUnsafeBytes { RAOPPacketCipher.apply(context: context, iv: iv, payload: $0) } }
    }
}
