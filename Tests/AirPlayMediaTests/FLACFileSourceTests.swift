import AirPlayMedia
import AirPlayTesting
import FLACMedia
import Foundation
import Testing

/// `airplay stream`'s FLAC path: libFLAC decodes 44.1 kHz 16-bit files to exactly the PCM that
/// went in (stereo, and mono doubled), with their tags and cover, from a start offset; hi-res
/// files (24-bit, 48 kHz) only for buffered mode, other rates are left to GStreamer.
@Suite struct FLACFileSourceTests {
    /// A 3 s two-tone file made by ffmpeg: the raw PCM and its FLAC encoding with tags.
    static func make(channels: Int = 2, rate: Int = 44100, bits: Int = 16) throws -> (flac: String, pcm: [Int32]) {
        let raw = bits == 24 ? "s24le" : "s16le"
        let ffmpeg = try #require(TestHost.which("ffmpeg"), "ffmpeg is a test dependency (tools/setup-deps --test)")
        let directory = Products.scratchDirectory("flac")
        let rawPath = directory + "/tone.raw", flac = directory + "/tone.flac"
        let tone = "aevalsrc=0.5*sin(2*PI*440*t)|0.3*sin(2*PI*660*t):s=\(rate):d=3"
        let render = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-f", "lavfi", "-i", tone, "-ac", "\(channels)",
                                             "-f", raw, "-c:a", "pcm_" + raw, rawPath])
        #expect(render.status == 0, "\(render.stderr)")
        let encode = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-f", raw, "-ar", "\(rate)", "-ac", "\(channels)", "-i", rawPath,
                                             "-metadata", "title=Two Tones", "-metadata", "artist=The Testers", "-metadata", "album=Vectors",
                                             "-c:a", "flac", flac])
        #expect(encode.status == 0, "\(encode.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: rawPath))
        let pcm = PCMFormat(sampleRate: rate, channels: channels, bitsPerSample: bits).samples(littleEndian: Array(data))
        return (flac, pcm)
    }

    static func readAll(_ source: FLACFileSource) -> [Int32] {
        var out: [Int32] = []
        for _ in 0..<10_000 {
            let chunk = source.read(frames: 352)
            if chunk.isEmpty { break }
            out += chunk
        }
        return out
    }

    @Test func stereoDecodesBitExactWithItsTags() throws {
        let (flac, pcm) = try Self.make()
        #expect(FLACFileSource.isFLAC(path: flac))
        let source = try FLACFileSource(path: flac)
        #expect(Self.readAll(source) == pcm)
        #expect(source.tags.title == "Two Tones" && source.tags.artist == "The Testers" && source.tags.album == "Vectors")
        #expect(abs((source.tags.duration ?? 0) - 3) < 0.001)
    }

    @Test func monoIsPlayedOnBothChannels() throws {
        let (flac, pcm) = try Self.make(channels: 1)
        let stereo = Self.readAll(try FLACFileSource(path: flac))
        #expect(stereo.count == 2 * pcm.count)
        let doubled = pcm.flatMap { sample -> [Int32] in [sample, sample] }
        #expect(stereo == doubled)
    }

    @Test func aStartOffsetSkipsThatMuch() throws {
        let (flac, pcm) = try Self.make()
        let source = try FLACFileSource(path: flac, start: 1)
        #expect(Self.readAll(source) == Array(pcm[(44100 * 2)...]))
    }

    @Test func hiResFilesPlayAsTheyAreWhereAllowed() throws {
        let (flac, pcm) = try Self.make(rate: 48000, bits: 24)
        #expect(throws: MediaError.self) { try FLACFileSource(path: flac) }
        let source = try FLACFileSource(path: flac, allowHiRes: true)
        #expect(source.format == PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        let decoded = Self.readAll(source)
        #expect(decoded == pcm)
        #expect(decoded.contains { abs($0) > 32767 } && decoded.contains { $0 & 0xFF != 0 }, "all 24 bits are there")
        #expect(abs((source.tags.duration ?? 0) - 3) < 0.001)
    }

    @Test func otherRatesAndOtherFilesAreLeftToGStreamer() throws {
        let (flac, _) = try Self.make(rate: 48000)
        #expect(throws: MediaError.self) { try FLACFileSource(path: flac) }
        let text = Products.scratchDirectory("notflac") + "/a.flac"
        try "not audio".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(!FLACFileSource.isFLAC(path: text))
        #expect(throws: MediaError.self) { try FLACFileSource(path: text) }
    }
}
