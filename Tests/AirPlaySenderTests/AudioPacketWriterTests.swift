import AirPlayCrypto
@testable import AirPlaySender
import AirPlayWire
import Testing

/// One value makes a link's audio packets: the RTP header, the payload in clear or sealed, and
/// for buffered streams the top-bit sequence and the 2-byte length. What it seals, the
/// receiver's own cipher opens. `Protocol/airplay2.md` §6 and §12.
@Suite struct AudioPacketWriterTests {
    static let key = [UInt8](repeating: 7, count: 32)
    static let audio: [UInt8] = Array(0..<40)

    @Test func aClearPacketIsTheRTPPacket() {
        var writer = AudioPacketWriter()
        #expect(writer.realtime(sequence: 5, timestamp: 1000, marker: true, payload: Self.audio)
            == RAOPAudioPacket(sequence: 5, timestamp: 1000, marker: true, payload: Self.audio).bytes)
        #expect(writer.buffered(sequence: 1, timestamp: 0, payload: Self.audio) == nil, "a buffered stream is always sealed")
    }

    /// AirPlay 2 realtime: each packet sealed with the next nonce, and the receiver opens them in turn.
    @Test func sealedPacketsOpenWithTheReceiversCipher() throws {
        var writer = AudioPacketWriter()
        writer.cipher = try AirPlay2AudioCipher(streamKey: Self.key)
        writer.ssrc = 0x1234_5678
        let receiver = try AirPlay2AudioCipher(streamKey: Self.key)
        for sequence in UInt16(0)..<3 {
            let made = writer.realtime(sequence: sequence, timestamp: 352 * UInt32(sequence), marker: false, payload: Self.audio)
            let packet = try #require(made)
            #expect(Array(packet[8..<12]) == [0x12, 0x34, 0x56, 0x78], "the SSRC in the clear header")
            #expect(try receiver.open(packet) == Self.audio)
        }
        #expect(writer.sealed == 3)
    }

    /// Buffered: a 2-byte length, the 24-bit sequence with its top bit set, then what opens.
    @Test func aBufferedFrameCarriesItsLengthAndTheTopBit() throws {
        var writer = AudioPacketWriter()
        writer.cipher = try AirPlay2AudioCipher(streamKey: Self.key)
        let made = writer.buffered(sequence: 2, timestamp: 704, payload: Self.audio)
        let frame = try #require(made)
        #expect(Int(frame[0]) << 8 | Int(frame[1]) == frame.count)
        #expect(Array(frame[2..<6]) == [0x80, 0x80, 0x00, 0x02])
        #expect(try AirPlay2AudioCipher(streamKey: Self.key).open(Array(frame.dropFirst(2))) == Self.audio)
    }
}
