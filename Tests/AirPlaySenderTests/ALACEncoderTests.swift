import AirPlayMedia
@testable import AirPlaySender
import Foundation
import GStreamerMedia
import Testing

/// Our ALAC frames, decoded by FFmpeg's ALAC decoder (GStreamer's avdec_alac): lossless, and
/// smaller than the samples, at 16 bits (RAOP, realtime) and 24 bits (buffered hi-res).
@Suite struct ALACEncoderTests {
    static let fmtp = ALACEncoder.fmtp.split(separator: " ").compactMap { Int($0) }

    /// The fmtp values of an encoder.
    static func fmtp(_ encoder: ALACEncoder) -> [Int] { encoder.fmtp.split(separator: " ").compactMap { Int($0) } }

    /// A sweep with a quiet start (zero runs) and full-scale stretches (escapes in the code), at
    /// `bits` per sample.
    static func signal(frames: Int, start: Int = 0, bits: Int = 16) -> [Int32] {
        let full = Double((1 << (bits - 1)) - 1), top = Int32((1 << (bits - 1)) - 1)
        return (start..<(start + frames)).flatMap { index -> [Int32] in
            let time = Double(index) / 44100
            if index < 500 { return [0, 0] }
            let left = 0.6 * sin(2 * .pi * (200 + 800 * time) * time), right = 0.4 * sin(2 * .pi * 523 * time)
            return [Int32(left * full), index % 4000 < 40 ? (index % 2 == 0 ? top : -top - 1) : Int32(right * full)]
        }
    }

    @Test(arguments: [(16, 44100), (24, 48000)])
    func framesDecodeBitExactAndCompress(bits: Int, rate: Int) throws {
        let encoder = ALACEncoder(bitDepth: bits, sampleRate: rate)
        let decoder = try GStreamerAudioDecoder(alacFmtp: Self.fmtp(encoder))
        var raw = 0, encoded = 0
        for packet in 0..<60 {
            let samples = Self.signal(frames: 352, start: packet * 352, bits: bits)
            let frame = encoder.encode(samples)
            raw += samples.count * bits / 8
            encoded += frame.count
            let decoded = decoder.decodeOrEmpty(frame)
            #expect(decoded == samples, "packet \(packet): \(decoded.count) samples back")
            if decoded != samples { break }
        }
        #expect(Double(encoded) < 0.9 * Double(raw), "\(encoded) of \(raw) bytes")
        print("measure: \(bits)-bit ALAC frames \(String(format: "%.1f", 100 * Double(encoded) / Double(raw))) % of PCM")
    }

    @Test func aShortLastFrameCarriesItsLength() throws {
        let decoder = try GStreamerAudioDecoder(alacFmtp: Self.fmtp)
        let samples = Self.signal(frames: 100, start: 10_000)
        #expect(decoder.decodeOrEmpty(ALACEncoder().encode(samples)) == samples)
    }

    @Test func noiseGoesOutAsAnEscapeFrame() throws {
        var generator = SystemRandomNumberGenerator()
        let samples = (0..<704).map { _ in Int32(Int16.random(in: .min ... .max, using: &generator)) }
        let frame = ALACEncoder().encode(samples)
        #expect(frame.count == 3 + 1408 + 1, "header, samples, end tag: \(frame.count)")
        #expect(try GStreamerAudioDecoder(alacFmtp: Self.fmtp).decode(frame) == samples)
    }

    @Test func noiseOf24BitsGoesOutAsAnEscapeFrame() throws {
        var generator = SystemRandomNumberGenerator()
        let samples = (0..<704).map { _ in Int32.random(in: -8_388_608...8_388_607, using: &generator) }
        let encoder = ALACEncoder(bitDepth: 24, sampleRate: 48000)
        let frame = encoder.encode(samples)
        #expect(frame.count == 3 + 2112 + 1, "header, samples, end tag: \(frame.count)")
        #expect(try GStreamerAudioDecoder(alacFmtp: Self.fmtp(encoder)).decode(frame) == samples)
    }

    @Test func silenceIsAFewBytes() throws {
        let samples = [Int32](repeating: 0, count: 704)
        let frame = ALACEncoder().encode(samples)
        #expect(frame.count < 140)
        #expect(try GStreamerAudioDecoder(alacFmtp: Self.fmtp).decode(frame) == samples)
    }
}

/// The same frames through our own decoder (what airplayd plays ALAC with): lossless too, so
/// `airplay stream` to `airplayd` needs no GStreamer decoder at the receiver.
@Suite struct ALACRoundTripTests {
    @Test(arguments: [16, 24])
    func framesDecodeBitExactWithTheNativeDecoder(bits: Int) throws {
        let encoder = ALACEncoder(bitDepth: bits, sampleRate: bits == 16 ? 44100 : 48000)
        let decoder = try ALACDecoder(fmtp: ALACEncoderTests.fmtp(encoder))
        for packet in 0..<60 {
            let samples = ALACEncoderTests.signal(frames: packet == 59 ? 100 : 352, start: packet * 352, bits: bits)
            #expect(try decoder.decode(encoder.encode(samples)) == samples, "packet \(packet)")
        }
        var generator = SystemRandomNumberGenerator()
        let top = Int32((1 << (bits - 1)) - 1)
        let noise = (0..<704).map { _ in Int32.random(in: -top - 1...top, using: &generator) }
        #expect(try decoder.decode(encoder.encode(noise)) == noise, "an escape frame")
    }
}
