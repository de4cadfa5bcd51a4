internal import COpenSSL

/// HKDF (RFC 5869) with SHA-512, as HAP pairing derives every key: the salt and info are ASCII
/// labels such as `Pair-Setup-Encrypt-Salt` / `Pair-Setup-Encrypt-Info`.
public enum HKDF {
    /// `length` bytes of output keying material from `key`, `salt` and `info`.
    public static func sha512(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int = 32) throws(CryptoError) -> [UInt8] {
        // EVP_PKEY_HKDF rather than EVP_KDF: it copies its inputs, so no OSSL_PARAM name pointers
        // outlive a Swift temporary (DESIGN.md, OpenSSL pitfalls).
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new_id(HKDF)") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1,
              EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha512()) == 1,
              EVP_PKEY_CTX_set1_hkdf_salt(context, salt, Int32(salt.count)) == 1,
              EVP_PKEY_CTX_set1_hkdf_key(context, key, Int32(key.count)) == 1,
              EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count)) == 1 else {
            throw CryptoError.openSSL("HKDF set-up")
        }
        var output = [UInt8](repeating: 0, count: length)
        var written = length
        guard EVP_PKEY_derive(context, &output, &written) == 1, written == length else { throw CryptoError.openSSL("HKDF derive") }
        return output
    }

    /// The same with ASCII labels.
    public static func sha512(key: [UInt8], salt: String, info: String, length: Int = 32) throws(CryptoError) -> [UInt8] {
        try sha512(key: key, salt: Array(salt.utf8), info: Array(info.utf8), length: length)
    }
}

/// SHA-512, the hash of SRP-6a in HAP pairing.
public enum SHA512 {
    /// The 64-byte digest of the concatenated parts.
    public static func hash(_ parts: [UInt8]...) -> [UInt8] { hash(parts: parts) }

    /// The 64-byte digest of the concatenated parts.
    public static func hash(parts: [[UInt8]]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        var ok = EVP_DigestInit_ex(context, EVP_sha512(), nil) == 1
        for part in parts where ok { ok = EVP_DigestUpdate(context, part, part.count) == 1 }
        ok = ok && EVP_DigestFinal_ex(context, &digest, &length) == 1
        precondition(ok && length == 64, "OpenSSL SHA-512 failed")
        return digest
    }
}
