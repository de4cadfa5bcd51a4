import AirPlayCrypto
import AirPlayWire

/// How one link's audio packets are made, as one value: the RTP header, then the payload in
/// clear, AES-sealed (RAOP's `rsaaeskey`) or ChaCha20-Poly1305-sealed with the packet's counter
/// as nonce (AirPlay 2's `shk`, the header in clear as its AAD). Realtime packets go as UDP
/// datagrams; buffered ones (type 103) carry a 24-bit sequence with its top bit set and a
/// 2-byte length in front, for the TCP data connection. Used by one streamer thread at a time.
struct AudioPacketWriter {
    /// AirPlay 2's stream cipher (`shk`); nil for RAOP.
    var cipher: AirPlay2AudioCipher?
    /// RAOP's AES encryptor, when the stream is encrypted that way.
    var encryptor: RAOPPacketEncryptor?
    /// The stream's RTP SSRC (AirPlay 2: it names the format of buffered streams).
    var ssrc: UInt32 = 0
    /// Packets sealed by `cipher` so far: the next one's nonce.
    private(set) var sealed: UInt64 = 0

    /// The 24-bit sequence field of buffered packets keeps its top bit set, as Apple's senders do.
    static let bufferedSequenceBit: UInt32 = 0x80_0000

    /// A realtime packet (nil when sealing failed).
    mutating func realtime(sequence: UInt16, timestamp: UInt32, marker: Bool, payload: [UInt8]) -> [UInt8]? {
        if cipher != nil {
            let header = RAOPAudioPacket(sequence: sequence, timestamp: timestamp, marker: marker, ssrc: ssrc, payload: []).bytes
            return seal(header: header, payload: payload)
        }
        return RAOPAudioPacket(sequence: sequence, timestamp: timestamp, marker: marker, payload: encryptor.map { $0.encrypt(payload) } ?? payload).bytes
    }

    /// A buffered packet with its 2-byte length (nil without a cipher, or when sealing failed).
    mutating func buffered(sequence: UInt32, timestamp: UInt32, payload: [UInt8]) -> [UInt8]? {
        let field = (sequence | Self.bufferedSequenceBit) & 0xFF_FFFF
        var header: [UInt8] = [0x80, UInt8(field >> 16), UInt8((field >> 8) & 0xFF), UInt8(field & 0xFF)]
        for value in [timestamp, ssrc] { withUnsafeBytes(of: value.bigEndian) { header += $0 } }
        guard let packet = seal(header: header, payload: payload) else { return nil }
        let length = 2 + packet.count
        return [UInt8(length >> 8), UInt8(length & 0xFF)] + packet
    }

    private mutating func seal(header: [UInt8], payload: [UInt8]) -> [UInt8]? {
        guard let cipher, let packet = try? cipher.seal(header: header, audio: payload, counter: sealed) else { return nil }
        sealed += 1
        return packet
    }
}
