internal import COpenSSL
import Synchronization

/// ChaCha20-Poly1305 (RFC 8439) under one 32-byte key: HAP's pairing messages, the encrypted
/// control channel and AirPlay 2 audio. The cipher context is made once and re-keyed per
/// message with its nonce; a 16-byte tag follows the ciphertext.
public final class ChaChaPoly: Sendable {
    /// The tag length.
    public static let tagLength = 16
    private let key: [UInt8]
    private let context: Mutex<CipherContext>

    /// A cipher for a 32-byte key.
    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == 32 else { throw CryptoError(description: "a ChaCha20-Poly1305 key is 32 bytes, not \(key.count)") }
        guard let pointer = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
        self.key = key
        context = Mutex(CipherContext(pointer: pointer))
    }

    /// The 12-byte nonce HAP builds from a counter: 4 zero bytes, then the counter little-endian.
    public static func nonce(counter: UInt64) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { nonce[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
        return nonce
    }

    /// The 12-byte nonce HAP builds from a label such as `PS-Msg05`: 4 zero bytes, then the 8 ASCII bytes.
    public static func nonce(label: String) -> [UInt8] {
        let bytes = Array(label.utf8.prefix(8))
        return [UInt8](repeating: 0, count: 12 - bytes.count) + bytes
    }

    /// Ciphertext followed by the 16-byte tag.
    public func seal(_ plaintext: [UInt8], nonce: [UInt8], aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try run(encrypt: true, input: plaintext, nonce: nonce, aad: aad, tag: nil)
    }

    /// The plaintext of `sealed` (ciphertext + tag); throws when it does not authenticate.
    public func open(_ sealed: [UInt8], nonce: [UInt8], aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.tagLength else { throw CryptoError(description: "sealed data is shorter than its tag") }
        let split = sealed.count - Self.tagLength
        return try run(encrypt: false, input: Array(sealed[..<split]), nonce: nonce, aad: aad, tag: Array(sealed[split...]))
    }

    private func run(encrypt: Bool, input: [UInt8], nonce: [UInt8], aad: [UInt8], tag: [UInt8]?) throws(CryptoError) -> [UInt8] {
        guard nonce.count == 12 else { throw CryptoError(description: "a ChaCha20-Poly1305 nonce is 12 bytes") }
        let result: Result<[UInt8], CryptoError> = context.withLock { holder in
            let context = holder.pointer
            var output = [UInt8](repeating: 0, count: input.count + Self.tagLength)
            var written: Int32 = 0
            // The cipher and key are set once; each message then only sets its nonce and
            // direction (a full init per message fetched the cipher and re-keyed: measured
            // as most of what an AirPlay 2 audio packet cost).
            if !holder.keyed {
                guard EVP_CipherInit_ex(context, EVP_chacha20_poly1305(), nil, key, nil, encrypt ? 1 : 0) == 1 else {
                    return .failure(CryptoError.openSSL("ChaCha20-Poly1305 init"))
                }
                holder.keyed = true
            }
            guard EVP_CipherInit_ex(context, nil, nil, nil, nonce, encrypt ? 1 : 0) == 1 else {
                return .failure(CryptoError.openSSL("ChaCha20-Poly1305 nonce"))
            }
            if !aad.isEmpty, EVP_CipherUpdate(context, nil, &written, aad, Int32(aad.count)) != 1 {
                return .failure(CryptoError.openSSL("ChaCha20-Poly1305 AAD"))
            }
            var length: Int32 = 0
            if !input.isEmpty {
                guard EVP_CipherUpdate(context, &output, &length, input, Int32(input.count)) == 1 else {
                    return .failure(CryptoError.openSSL("ChaCha20-Poly1305 update"))
                }
            }
            if var tag {
                guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagLength), &tag) == 1 else {
                    return .failure(CryptoError.openSSL("ChaCha20-Poly1305 tag"))
                }
            }
            var final: Int32 = 0
            let finished = output.withUnsafeMutableBufferPointer { EVP_CipherFinal_ex(context, $0.baseAddress! + Int(length), &final) }
            guard finished == 1 else {
                ERR_clear_error()
                return .failure(CryptoError(description: "ChaCha20-Poly1305: the data does not authenticate"))
            }
            length += final
            if encrypt {
                let tagged = output.withUnsafeMutableBufferPointer {
                    EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagLength), $0.baseAddress! + Int(length))
                }
                guard tagged == 1 else { return .failure(CryptoError.openSSL("ChaCha20-Poly1305 get tag")) }
                return .success(Array(output.prefix(Int(length) + Self.tagLength)))
            }
            return .success(Array(output.prefix(Int(length))))
        }
        return try result.get()
    }
}

/// Owns an OpenSSL cipher context; only touched under `ChaChaPoly`'s mutex.
struct CipherContext: ~Copyable {
    let pointer: OpaquePointer
    /// Set once the cipher and key are in the context.
    var keyed = false
    deinit { EVP_CIPHER_CTX_free(pointer) }
}
