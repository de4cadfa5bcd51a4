@testable import AirPlayDaemon
import Testing

/// What airplayd and an audio decoder process say to each other: every message reads back as
/// written, and the child's answers are held to the same bounds as the network's bytes (a
/// compromised decoder must not hand the daemon an oversized or malformed answer).
@Suite struct DecoderMessageTests {
    @Test func everyMessageReadsBackAsWritten() {
        let messages: [DecoderMessage] = [
            .configure(config: [0x12, 0x10], sampleRate: 44100, channels: 2),
            .packet(sequence: 1, bytes: [0x21, 0x00, 0x49, 0x90]), .packet(sequence: .max, bytes: []),
            .ready(error: nil), .ready(error: "no AAC decoder: install gstreamer1.0-libav"),
            .samples(sequence: 7, [0, 1, -1, .max, .min]), .samples(sequence: 8, []),
            .failed(sequence: 9, reason: "decoder gave no output"),
        ]
        for message in messages {
            #expect(DecoderMessage(bytes: message.bytes) == message, "\(message)")
        }
    }

    /// Samples go little-endian after a tag and a big-endian sequence number.
    @Test func samplesAreLaidOutAsDocumented() {
        #expect(DecoderMessage.samples(sequence: 0x0102_0304, [1, -2]).bytes == [4, 1, 2, 3, 4, 1, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF])
    }

    @Test func outOfBoundsDatagramsAreNotMessages() {
        #expect(DecoderMessage(bytes: []) == nil)
        #expect(DecoderMessage(bytes: [99, 0, 0, 0, 0]) == nil, "an unknown tag")
        #expect(DecoderMessage(bytes: [4, 0, 0, 0, 1, 0xFF]) == nil, "a partial sample")
        #expect(DecoderMessage(bytes: [4, 0, 0, 0] + [UInt8](repeating: 0, count: 4 * DecoderMessage.maximumSamples + 5)) == nil, "too many samples")
        #expect(DecoderMessage(bytes: [1, 0, 0, 0xAC, 0x44, 0]) == nil, "no channels")
        #expect(DecoderMessage(bytes: [1, 0, 0, 0, 1, 2]) == nil, "a rate of 1 Hz")
        #expect(DecoderMessage(bytes: [1, 0, 0, 0xAC, 0x44, 2] + [UInt8](repeating: 0, count: 65)) == nil, "an oversized config")
        #expect(DecoderMessage(bytes: [2, 0, 0]) == nil, "a packet without its sequence")
        #expect(DecoderMessage(bytes: [3] + [UInt8](repeating: 0x41, count: 513)) == nil, "an oversized reason")
    }
}
