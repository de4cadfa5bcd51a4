import AirPlayCrypto

/// How a session's audio payloads are opened: RAOP's AES-CBC (the key ANNOUNCE wrapped in RSA)
/// or AirPlay 2's ChaCha20-Poly1305 (the `shk` of SETUP). One type, so the packet path is the
/// same for both kinds of session.
enum AudioPacketCipher: Sendable {
    /// RAOP `et=1`: AES-128-CBC over the whole 16-byte blocks, the tail in clear.
    case aes(RAOPPacketDecryptor)
    /// AirPlay 2 realtime audio: sealed audio, tag and nonce trailer after the header.
    case chacha(AirPlay2AudioCipher)

    /// The clear payload of a packet (what follows its 12-byte header), or nil when it does not
    /// authenticate (AES has no tag: it always opens).
    func open(_ payload: UnsafeRawBufferPointer, timestamp: UInt32, ssrc: UInt32) -> [UInt8]? {
        switch self {
        case .aes(let decryptor):
            return decryptor.decrypt(payload)
        case .chacha(let cipher):
            return try? cipher.open(sealed: payload, timestamp: timestamp, ssrc: ssrc)
        }
    }
}
