import AirPlayCrypto

/// HAP's encrypted stream, one direction: each frame is a 2-byte little-endian length (also
/// the AAD), that many bytes of ChaCha20-Poly1305 ciphertext and a 16-byte tag; the nonce is
/// 4 zero bytes and a per-direction 64-bit little-endian counter from 0. Writers cut at 1024
/// plaintext bytes; readers take any length a u16 holds.
public enum EncryptedFrames {
    /// The plaintext per frame this side writes.
    public static let maximumWrite = 1024
    /// Bytes of length and tag around each frame's ciphertext.
    public static let overhead = 2 + ChaChaPoly.tagLength

    /// Seals outgoing bytes into frames.
    public struct Sealer: Sendable {
        private let cipher: ChaChaPoly
        private var counter: UInt64 = 0

        /// A sealer for a 32-byte key.
        public init(key: [UInt8]) throws(CryptoError) { cipher = try ChaChaPoly(key: key) }

        /// The frames carrying `plaintext` (none for none).
        public mutating func seal(_ plaintext: [UInt8]) throws(CryptoError) -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(plaintext.count + (plaintext.count / Self.block + 1) * EncryptedFrames.overhead)
            var start = 0
            while start < plaintext.count {
                let end = min(start + Self.block, plaintext.count)
                let length = [UInt8(truncatingIfNeeded: end - start), UInt8(truncatingIfNeeded: (end - start) >> 8)]
                out += length
                out += try cipher.seal(Array(plaintext[start..<end]), nonce: ChaChaPoly.nonce(counter: counter), aad: length)
                counter += 1
                start = end
            }
            return out
        }

        private static let block = EncryptedFrames.maximumWrite
    }

    /// Opens incoming frames; bytes of a frame not yet complete wait for the next read.
    public struct Opener: Sendable {
        private let cipher: ChaChaPoly
        private var counter: UInt64 = 0
        private var pending: [UInt8] = []

        /// An opener for a 32-byte key.
        public init(key: [UInt8]) throws(CryptoError) { cipher = try ChaChaPoly(key: key) }

        /// Bytes waiting for the rest of their frame (at most one frame's worth).
        public var pendingCount: Int { pending.count }

        /// The plaintext of every frame `incoming` completes; throws when a frame does not
        /// authenticate (the connection must then close: the stream cannot be resynchronised).
        public mutating func open(_ incoming: [UInt8]) throws(CryptoError) -> [UInt8] {
            pending += incoming
            var out: [UInt8] = []
            var start = 0
            while pending.count - start >= 2 {
                let length = Int(pending[start]) | Int(pending[start + 1]) << 8
                let frameEnd = start + 2 + length + ChaChaPoly.tagLength
                guard pending.count >= frameEnd else { break }
                let aad = Array(pending[start..<(start + 2)])
                out += try cipher.open(Array(pending[(start + 2)..<frameEnd]), nonce: ChaChaPoly.nonce(counter: counter), aad: aad)
                counter += 1
                start = frameEnd
            }
            pending.removeFirst(start)
            return out
        }
    }
}
