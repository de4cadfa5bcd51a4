import AirPlayMedia
import AirPlaySender
import Testing

/// Which format a buffered stream goes out in: the file's own where every receiver takes it
/// (lossless stays bit-exact), else Apple's own formats, converted; `--rate` forces one.
@Suite struct BufferedFormatChoiceTests {
    static let cd = PCMFormat.cd
    static let hiRes = PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24)
    /// shairport-sync 5's `bufferStream`: ALAC 44.1/16 and 48/24, AAC-LC 44.1 and 48.
    static let shairportSync: UInt64 = 0x40000 | 0x200000 | 0x400000 | 0x800000
    /// A receiver that takes only Apple's lossless format and AAC at 44.1 kHz.
    static let appleOnly: UInt64 = 1 << 21 | 1 << 22

    @Test func theFilesOwnFormatWhenEveryReceiverTakesIt() {
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .alac, offers: [Self.shairportSync, nil]) == Self.cd)
        #expect(BufferedFormatChoice.format(for: Self.hiRes, codec: .alac, offers: [Self.shairportSync]) == Self.hiRes)
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .alac, offers: []) == Self.cd, "nobody said: as before")
    }

    @Test func aCDFileGoesAs48kHz24BitToAReceiverThatTakesNothingCloser() {
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .alac, offers: [Self.shairportSync, Self.appleOnly]) == Self.hiRes)
    }

    @Test func aacGoesAtTheRateEveryReceiverTakes() {
        let only48: UInt64 = 1 << 23
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .aac, offers: [Self.appleOnly]) == Self.cd)
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .aac, offers: [only48])
            == PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16))
        #expect(BufferedFormatChoice.format(for: Self.hiRes, codec: .aac, offers: [nil])
            == PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16), "AAC is 16-bit")
    }

    @Test func whenNoFormatSuitsEveryoneTheFilesGoesAndTheReceiverSaysWhy() {
        let pcmOnly: UInt64 = 1 << 11
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .alac, offers: [pcmOnly]) == Self.cd)
    }

    @Test func rateForcesAppleLosslessOrCD() {
        #expect(BufferedFormatChoice.format(for: Self.cd, codec: .alac, offers: [Self.shairportSync], rate: 48000) == Self.hiRes)
        #expect(BufferedFormatChoice.format(for: Self.hiRes, codec: .alac, offers: [], rate: 44100) == Self.cd)
    }
}
