import COpenSSL

/// Cryptographically strong random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes; traps only if the system entropy source is broken, which OpenSSL reports.
    public static func bytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        let status = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(status == 1, "OpenSSL RAND_bytes failed: the system has no entropy source")
        return output
    }
}

/// The OpenSSL library in use.
public enum CryptoLibrary {
    /// The version text of the linked OpenSSL, e.g. `OpenSSL 3.0.x …`.
    public static var version: String { String(cString: cairplay_openssl_version()) }
}
