/// AirPlay 2 realtime audio (stream type 96): each RTP packet is the 12-byte header, the audio
/// sealed with ChaCha20-Poly1305 under the stream's key (`shk` from SETUP), the 16-byte tag,
/// and an 8-byte trailer. The nonce is 4 zero bytes and the trailer (the sender's
/// little-endian counter); the AAD is the header's bytes 4–12 (RTP timestamp and SSRC), so a
/// packet cannot be replayed under another timestamp.
public struct AirPlay2AudioCipher: Sendable {
    /// Header, tag and trailer around the audio.
    public static let overhead = 12 + ChaChaPoly.tagLength + 8
    private let cipher: ChaChaPoly

    /// A cipher for a 32-byte stream key.
    public init(streamKey: [UInt8]) throws(CryptoError) { cipher = try ChaChaPoly(key: streamKey) }

    /// The clear audio of a whole packet; throws when it is too short or does not authenticate.
    public func open(_ packet: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard packet.count >= 12 else { throw CryptoError(description: "AirPlay 2 audio packet of \(packet.count) bytes is too short") }
        let field = { (at: Int) in packet[at..<(at + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let result = packet.withUnsafeBytes { bytes in
            Result { () throws(CryptoError) in
                try open(sealed: UnsafeRawBufferPointer(rebasing: bytes[12...]), timestamp: field(4), ssrc: field(8))
            }
        }
        return try result.get()
    }

    /// The clear audio from what follows a packet's 12-byte header (sealed audio, tag, trailer),
    /// with the header's RTP timestamp and SSRC, which the tag authenticates.
    public func open(sealed: UnsafeRawBufferPointer, timestamp: UInt32, ssrc: UInt32) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= Self.overhead - 12 else {
            throw CryptoError(description: "AirPlay 2 audio packet of \(sealed.count + 12) bytes is too short")
        }
        let trailer = sealed.count - 8
        let aad = withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        return try cipher.open(Array(sealed[..<trailer]), nonce: [0, 0, 0, 0] + sealed[trailer...], aad: aad)
    }

    /// A whole packet for a header and audio, with `counter` as its nonce.
    public func seal(header: [UInt8], audio: [UInt8], counter: UInt64) throws(CryptoError) -> [UInt8] {
        guard header.count == 12 else { throw CryptoError(description: "an RTP header is 12 bytes") }
        let nonce = ChaChaPoly.nonce(counter: counter)
        return header + (try cipher.seal(audio, nonce: nonce, aad: Array(header[4..<12]))) + nonce[4...]
    }
}
