import AirPlayWire
import Testing

/// The SSRC of a buffered packet names its format (`Protocol/airplay2.md`, buffered audio).
@Suite struct BufferedFormatCodeTests {
    @Test func applesCodesNameALAC48k24AndAACLC() {
        #expect(BufferedFormatCode.ssrc(compression: 2, sampleRate: 48000, bitsPerSample: 24) == 0x1500_0000)
        #expect(BufferedFormatCode.ssrc(compression: 4, sampleRate: 44100, bitsPerSample: 16) == 0x1600_0000)
        #expect(BufferedFormatCode.ssrc(compression: 4, sampleRate: 48000, bitsPerSample: 16) == 0x1700_0000)
    }

    @Test func shairportSyncsOwnCodeNamesALAC44k16() {
        #expect(BufferedFormatCode.ssrc(compression: 2, sampleRate: 44100, bitsPerSample: 16) == 0xFACE)
    }

    @Test func formatsNoReceiverIsKnownToReadHaveNoCode() {
        #expect(BufferedFormatCode.ssrc(compression: 2, sampleRate: 44100, bitsPerSample: 24) == nil)
        #expect(BufferedFormatCode.ssrc(compression: 2, sampleRate: 48000, bitsPerSample: 16) == nil)
        #expect(BufferedFormatCode.ssrc(compression: 1, sampleRate: 44100, bitsPerSample: 16) == nil)
    }

    @Test func everyCodeReadsBackAsItsFormat() throws {
        for code in [BufferedFormatCode.alac48k24, BufferedFormatCode.alac44k16, BufferedFormatCode.aacLC44k, BufferedFormatCode.aacLC48k] {
            let format = try #require(BufferedFormatCode.format(ofSSRC: code))
            #expect(BufferedFormatCode.ssrc(compression: format.compression, sampleRate: format.sampleRate, bitsPerSample: format.bitsPerSample) == code)
        }
        #expect(BufferedFormatCode.format(ofSSRC: 0x1234_5678) == nil, "older builds of ours sent a random SSRC")
    }
}
