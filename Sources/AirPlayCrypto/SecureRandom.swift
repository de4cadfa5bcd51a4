internal import COpenSSL
import Glibc
import LinuxIO

/// Cryptographically strong random bytes from the kernel's generator (getrandom(2)), the source
/// OpenSSL's own DRBG seeds from; asking the kernel keeps libcrypto unloaded until a session
/// needs it (a device ID made at the first start needs six random bytes and nothing else).
public enum SecureRandom {
    /// `count` random bytes. Blocks only while the kernel's generator is not yet seeded (early
    /// boot); traps only if the kernel refuses getrandom, which a supported kernel never does.
    public static func bytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        output.withUnsafeMutableBytes { buffer in
            var filled = 0
            // Reads above 256 bytes may return short; signals may interrupt: both mean "again".
            while filled < count {
                guard let got = LinuxIO.randomBytes(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])) else {
                    precondition(errno == EINTR, "getrandom failed: errno \(errno)")
                    continue
                }
                filled += got
            }
        }
        return output
    }
}

/// The OpenSSL library in use.
public enum CryptoLibrary {
    /// The version text of the loaded OpenSSL, e.g. `OpenSSL 3.0.x …` (loads it).
    public static var version: String { String(cString: cairplay_openssl_version()) }
}
