import AirPlayMedia
import AirPlayTesting
import Foundation
import Testing

/// Our ALAC decoder against FFmpeg's encoder and decoder: ALAC is lossless, so every frame FFmpeg
/// writes must come back as exactly the PCM it was given, whatever predictor orders, stereo
/// mixing, zero runs and escapes the encoder chose.
@Suite struct ALACDecoderTests {
    struct VectorFile: Decodable {
        struct Packet: Decodable {
            var what: String
            var frames: Int
            var alac: String
            var pcm: String
        }
        var fmtpValues: [Int]
        var packets: [Packet]
    }

    /// Protocol/vectors/raop-alac-frames.json: iTunes-style fmtp, packets of 352 frames encoded
    /// by FFmpeg (LPC, escapes, a short final packet), each with the PCM it decodes to.
    @Test func vectorPacketsDecodeToTheirPCM() throws {
        let file = try ProtocolVectors.load(VectorFile.self, from: "raop-alac-frames.json")
        let decoder = try ALACDecoder(fmtp: file.fmtpValues)
        for packet in file.packets {
            let alac = Array(try #require(Data(base64Encoded: packet.alac)))
            let expected = ProtocolVectors.samples(littleEndian: Array(try #require(Data(base64Encoded: packet.pcm))))
            #expect(try decoder.decode(alac) == expected, "\(packet.what)")
        }
    }

    /// A mix FFmpeg encodes with every kind of ALAC frame: silence (zero runs), quiet and loud
    /// tones, correlated stereo (mid/side weights), pink and full-scale white noise (escapes).
    static let mix = "anullsrc=r=44100:cl=stereo:d=0.3[s];"
        + "aevalsrc=0.6*sin(2*PI*440*t)|0.59*sin(2*PI*440*t+0.05):s=44100:d=0.6[a];"
        + "aevalsrc=0.001*sin(2*PI*50*t)|0.3*sin(2*PI*(200+900*t)*t):s=44100:d=0.6[b];"
        + "anoisesrc=r=44100:c=pink:a=0.4:d=0.6,aformat=channel_layouts=stereo[c];"
        + "anoisesrc=r=44100:c=white:a=1:d=0.3,aformat=channel_layouts=stereo[d];"
        + "[s][a][b][c][d]concat=n=5:v=0:a=1"

    /// Packets of 4096 frames at each compression level and predictor order range, mono, and
    /// 24-bit (which FFmpeg codes with its low byte shifted out, as Apple's encoder does).
    @Test(arguments: [
        ["-compression_level", "0"],
        ["-compression_level", "1", "-min_prediction_order", "1", "-max_prediction_order", "4"],
        ["-compression_level", "2", "-min_prediction_order", "8", "-max_prediction_order", "30"],
        ["-compression_level", "2", "-ac", "1"],
        ["-compression_level", "2", "-sample_fmt", "s32p"],
        ["-compression_level", "0", "-sample_fmt", "s32p"],
    ])
    func ffmpegEncodedStreamsDecodeLosslessly(options: [String]) throws {
        let ffmpeg = try #require(TestHost.which("ffmpeg"), "ffmpeg is a test dependency (tools/setup-deps --test)")
        let directory = Products.scratchDirectory("alac")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let channels = options.contains("-ac") ? 1 : 2
        let pcmPath = directory + "/in.raw", cafPath = directory + "/out.caf"
        let format = PCMFormat(sampleRate: 44100, channels: channels, bitsPerSample: options.contains("s32p") ? 24 : 16)
        let raw = format.bitsPerSample == 24 ? "s24le" : "s16le"
        let render = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-filter_complex", Self.mix, "-ac", "\(channels)",
                                             "-f", raw, "-c:a", "pcm_" + raw, pcmPath], timeout: 60)
        #expect(render.status == 0, "\(render.stderr)")
        let encode = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-f", raw, "-ar", "44100", "-ac", "\(channels)",
                                             "-i", pcmPath, "-c:a", "alac"] + options + [cafPath], timeout: 60)
        #expect(encode.status == 0, "\(encode.stderr)")
        let reference = format.samples(littleEndian: Array(try Data(contentsOf: URL(fileURLWithPath: pcmPath))))
        let caf = try CAFPackets(path: cafPath)
        let fmtp = try #require(caf.alacFmtp, "the CAF cookie holds an ALACSpecificConfig")
        #expect(fmtp[6] == channels && fmtp[2] == format.bitsPerSample)
        let decoder = try ALACDecoder(fmtp: fmtp)
        var decoded: [Int32] = []
        for (index, packet) in caf.packets.enumerated() {
            do {
                decoded += try decoder.decode(packet)
            } catch {
                Issue.record("packet \(index) of \(caf.packets.count): \(error)")
                return
            }
        }
        #expect(decoded.count == reference.count)
        #expect(decoded == reference, "first difference at \(Array(zip(decoded, reference)).firstIndex { $0 != $1 } ?? -1)")
    }

    /// PulseAudio's and PipeWire's RAOP sinks send every packet as an escape frame with its frame
    /// count and no END element (it would not fit the last byte): 23 header bits, 32 bits of
    /// count, 352 × 2 big-endian samples, one bit of padding.
    @Test func aLinuxSinkEscapeFrameWithoutEndDecodes() throws {
        let samples = (0..<704).map { Int32(Int16(truncatingIfNeeded: $0 &* 97 &- 30000)) }
        var bits = TestBitWriter()
        bits.write(1, 3)          // channel pair
        bits.write(0, 4 + 12)     // instance tag, unused
        bits.write(1, 1)          // has size
        bits.write(0, 2)          // no shifted bytes
        bits.write(1, 1)          // escape: samples as they are
        bits.write(352, 32)
        for sample in samples { bits.write(UInt64(UInt16(truncatingIfNeeded: sample)), 16) }
        let frame = bits.bytes
        #expect(frame.count == 1415, "the 1427-byte datagram less its 12-byte RTP header")
        let decoder = try ALACDecoder(fmtp: [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100])
        #expect(try decoder.decode(frame) == samples)
    }

    /// Hostile input never traps: random bytes, truncations of a real packet and single-bit flips
    /// either decode to at most one packet of frames or throw.
    @Test func garbageThrowsOrDecodesButNeverTraps() throws {
        let file = try ProtocolVectors.load(VectorFile.self, from: "raop-alac-frames.json")
        let decoder = try ALACDecoder(fmtp: file.fmtpValues)
        var generator = SeededGenerator(seed: 0x5EED)
        var outcomes = (decoded: 0, thrown: 0)
        func attempt(_ bytes: [UInt8]) {
            do {
                let samples = try decoder.decode(bytes)
                #expect(samples.count <= 352 * 2)
                outcomes.decoded += 1
            } catch {
                outcomes.thrown += 1
            }
        }
        for _ in 0..<2000 {
            attempt((0..<Int.random(in: 0...1500, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let sample = try #require(file.packets.first { $0.frames == 352 && $0.what.contains("sine") } ?? file.packets.first)
        let real = Array(try #require(Data(base64Encoded: sample.alac)))
        for length in 0..<real.count { attempt(Array(real.prefix(length))) }
        for _ in 0..<2000 {
            var flipped = real
            let bit = Int.random(in: 0..<(real.count * 8), using: &generator)
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            attempt(flipped)
        }
        #expect(outcomes.thrown > 0 && outcomes.decoded > 0, "\(outcomes)")
    }

    /// The fmtp values a decoder refuses, each with a reason.
    @Test func unsupportedParametersAreRefused() {
        #expect(throws: AudioDecodeError.self) { try ALACDecoder(fmtp: [352, 0, 16]) }
        #expect(throws: AudioDecodeError.self) { try ALACDecoder(fmtp: [352, 0, 32, 40, 10, 14, 2, 255, 0, 0, 44100]) }
        #expect(throws: AudioDecodeError.self) { try ALACDecoder(fmtp: [352, 0, 16, 40, 10, 14, 6, 255, 0, 0, 44100]) }
        #expect(throws: AudioDecodeError.self) { try ALACDecoder(fmtp: [0, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]) }
    }
}

/// Bits written most significant first (a test's own, to build frames by hand).
struct TestBitWriter {
    private(set) var bytes: [UInt8] = []
    private var used = 0

    mutating func write(_ value: UInt64, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) {
            if used == 0 { bytes.append(0) }
            if (value >> UInt64(shift)) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80 >> used) }
            used = (used + 1) % 8
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failure repeats.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
