import AirPlayWire
import Testing

/// `text/parameters`, the `name: value` lines of RAOP's SET_PARAMETER and GET_PARAMETER and of
/// the video protocol's `/play` and `/scrub`: written with CRLF as iTunes writes them, read
/// whatever the line ends and spacing.
@Suite struct TextParametersTests {
    @Test func volumeAndProgressAreWrittenAsITunesWritesThem() {
        #expect(TextParameters.volume(decibels: -15).encoded == Array("volume: -15.000000\r\n".utf8))
        #expect(TextParameters.volume(decibels: -144).encoded == Array("volume: -144.000000\r\n".utf8))
        #expect(TextParameters.progress(start: 352_000, current: 352_000, end: 2_998_000).encoded
                    == Array("progress: 352000/352000/2998000\r\n".utf8))
        #expect(TextParameters.asking("volume").encoded == Array("volume\r\n".utf8))
    }

    @Test func linesAreReadWhateverTheirEndsAndSpacing() {
        let body = TextParameters(parsing: Array("Content-Location: http://box/a.m3u8\nStart-Position:0.5\r\n\r\nvolume\r\n".utf8))
        #expect(body.lines == [.init(name: "Content-Location", value: "http://box/a.m3u8"),
                               .init(name: "Start-Position", value: "0.5"), .init(name: "volume", value: nil)])
        // A value keeps its own colons (a URL's); the name is matched in any case.
        #expect(body["content-location"] == "http://box/a.m3u8" && body["volume"] == nil)
    }

    @Test func whatIsWrittenReadsBack() {
        let body = TextParameters([.init(name: "duration", value: "30.000000"), .init(name: "position", value: "1.500000")])
        #expect(TextParameters(parsing: body.encoded) == body)
    }
}
