internal import COpenSSL
import Synchronization
import FoundationEssentials

/// Why a cryptographic operation failed (OpenSSL's error queue, summarised).
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed.
    public let description: String

    static func openSSL(_ operation: String) -> CryptoError {
        var text = ""
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return CryptoError(description: text.isEmpty ? operation : "\(operation): \(text)")
    }
}

/// The receiver's side of RAOP's RSA: answering `Apple-Challenge` and unwrapping stream keys.
public final class RAOPIdentity: @unchecked Sendable {
    private let key: OpaquePointer

    /// Loads the AirPort key.
    public init() throws(CryptoError) { key = try AirPortKey.load() }

    /// The one identity of this process, made on first use (Swift runs the initialiser once,
    /// thread-safely).
    public static let shared: Result<RAOPIdentity, CryptoError> = Result { () throws(CryptoError) in try RAOPIdentity() }

    deinit { EVP_PKEY_free(key) }

    /// The `Apple-Response` for a challenge: the challenge bytes, our IP address (4 or 16 bytes)
    /// and our 6-byte device id, zero-padded to 32 bytes, signed with PKCS#1 v1.5 (type 1, no
    /// digest), base64 without padding.
    public func appleResponse(challengeBase64: String, localAddress: [UInt8], deviceID: [UInt8]) throws(CryptoError) -> String {
        guard let challenge = Base64.decode(challengeBase64), !challenge.isEmpty, challenge.count <= 32 else {
            throw CryptoError(description: "Apple-Challenge is not base64 of at most 32 bytes")
        }
        var message = challenge + localAddress + deviceID
        if message.count < 32 { message += [UInt8](repeating: 0, count: 32 - message.count) }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_sign_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1 else {
            throw CryptoError.openSSL("sign init")
        }
        var length = 0
        guard EVP_PKEY_sign(context, nil, &length, message, message.count) == 1 else { throw CryptoError.openSSL("sign size") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &signature, &length, message, message.count) == 1 else { throw CryptoError.openSSL("sign") }
        return String(Base64.encode(Array(signature.prefix(length))).filter { $0 != "=" })
    }

    /// Unwraps an `a=rsaaeskey` value (RSA-OAEP with SHA-1) into the 16-byte AES key.
    public func unwrapStreamKey(_ wrapped: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(key, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_decrypt_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1 else {
            throw CryptoError.openSSL("decrypt init")
        }
        var length = 0
        guard EVP_PKEY_decrypt(context, nil, &length, wrapped, wrapped.count) == 1 else { throw CryptoError.openSSL("decrypt size") }
        var plain = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_decrypt(context, &plain, &length, wrapped, wrapped.count) == 1 else {
            throw CryptoError.openSSL("rsaaeskey does not decrypt with the AirPort key")
        }
        guard length == 16 else { throw CryptoError(description: "the stream key is \(length) bytes, not 16") }
        return Array(plain.prefix(length))
    }
}

/// RAOP packet decryption: AES-128-CBC over the whole 16-byte blocks of each payload, the IV
/// reset for every packet, the bytes after the last whole block left in clear.
public final class RAOPPacketDecryptor: @unchecked Sendable {
    // `@unchecked Sendable`: the OpenSSL context is used only under `lock` (audio comes on the
    // playout thread, retransmissions on an event loop).
    private let context: OpaquePointer
    private let iv: [UInt8]
    private let lock = Mutex(())

    /// A decryptor for a stream key and IV (16 bytes each).
    public init(key: [UInt8], iv: [UInt8]) throws(CryptoError) {
        guard key.count == 16, iv.count == 16 else { throw CryptoError(description: "AES key and IV must be 16 bytes") }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("EVP_CIPHER_CTX_new") }
        self.context = context
        self.iv = iv
        guard RAOPPacketCipher.prepare(context: context, key: key, iv: iv, encrypt: false) else {
            throw CryptoError.openSSL("EVP_CipherInit_ex")
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// The clear payload.
    public func decrypt(_ payload: [UInt8]) -> [UInt8] {
        payload.withUnsafeBytes { decrypt($0) }
    }

    /// The clear payload of bytes read in place (the receive buffer of the audio port).
    public func decrypt(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        lock.withLock { _ in RAOPPacketCipher.apply(context: context, iv: iv, payload: payload) }
    }
}

/// RAOP's per-packet AES-128-CBC, both ways: the whole 16-byte blocks from the stream IV, the
/// tail past the last whole block untouched. The key schedule is made once per stream
/// (`prepare`); each packet only restarts from the IV.
enum RAOPPacketCipher {
    /// Sets the cipher, key and direction once; false when OpenSSL refuses.
    static func prepare(context: OpaquePointer, key: [UInt8], iv: [UInt8], encrypt: Bool) -> Bool {
        EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key, iv, encrypt ? 1 : 0) == 1 && EVP_CIPHER_CTX_set_padding(context, 0) == 1
    }

    /// One packet: restarts at `iv` with the prepared key; one output array, the tail copied
    /// after the whole blocks.
    static func apply(context: OpaquePointer, iv: [UInt8], payload: UnsafeRawBufferPointer) -> [UInt8] {
        let whole = payload.count & ~15
        guard whole > 0, let input = payload.baseAddress else { return Array(payload) }
        // EVP_CipherUpdate may write up to a block more than it is given.
        var output = [UInt8](repeating: 0, count: payload.count + 16)
        let written = output.withUnsafeMutableBytes { out -> Int32 in
            var written: Int32 = 0
            guard EVP_CipherInit_ex(context, nil, nil, nil, iv, -1) == 1,
                  EVP_CipherUpdate(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
                                   input.assumingMemoryBound(to: UInt8.self), Int32(whole)) == 1, written == Int32(whole) else { return -1 }
            out.baseAddress!.advanced(by: whole).copyMemory(from: input.advanced(by: whole), byteCount: payload.count - whole)
            return written
        }
        guard written >= 0 else { return Array(payload) }
        output.removeLast(16)
        return output
    }
}

/// RAOP's base64: standard alphabet, padding optional on input.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8) | UInt32(chunk.count > 2 ? chunk[2] : 0)
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(chunk.count > 1 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            out.append(chunk.count > 2 ? alphabet[Int(value & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes, with or without padding; nil on any other character.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "=") && byte != UInt8(ascii: " ") {
            guard let index = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt8(index))
        }
        var out: [UInt8] = []
        var index = 0
        while index + 1 < values.count {
            let a = UInt32(values[index]), b = UInt32(values[index + 1])
            let c = index + 2 < values.count ? UInt32(values[index + 2]) : 0
            let d = index + 3 < values.count ? UInt32(values[index + 3]) : 0
            let value = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(value >> 16 & 0xFF))
            if index + 2 < values.count { out.append(UInt8(value >> 8 & 0xFF)) }
            if index + 3 < values.count { out.append(UInt8(value & 0xFF)) }
            index += 4
        }
        return out
    }
}

/// Hash helpers through OpenSSL.
public enum Hash {
    /// MD5 of UTF-8 text as lower-case hex (HTTP Digest authentication, RFC 2617).
    public static func md5Hex(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let bytes = Array(text.utf8)
        _ = EVP_Digest(bytes, bytes.count, &digest, &length, EVP_md5(), nil)
        return digest.prefix(Int(length)).map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
        }.joined()
    }
}
