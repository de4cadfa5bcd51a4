import AirPlayMedia
@testable import AirPlaySender
import Foundation
import GStreamerMedia
import Testing

/// Our ALAC frames, decoded by FFmpeg's ALAC decoder (GStreamer's avdec_alac, what airplayd
/// uses too): lossless, and smaller than the samples.
@Suite struct ALACEncoderTests {
    static let fmtp = ALACEncoder.fmtp.split(separator: " ").compactMap { Int($0) }

    /// A sweep with a quiet start (zero runs) and full-scale stretches (escapes in the code).
    static func signal(frames: Int, start: Int = 0) -> [Int16] {
        (start..<(start + frames)).flatMap { index -> [Int16] in
            let time = Double(index) / 44100
            if index < 500 { return [0, 0] }
            let left = 0.6 * sin(2 * .pi * (200 + 800 * time) * time), right = 0.4 * sin(2 * .pi * 523 * time)
            return [Int16(left * 32767), Int16(index % 4000 < 40 ? (index % 2 == 0 ? 32767 : -32768) : Int(right * 32767))]
        }
    }

    @Test func framesDecodeBitExactAndCompress() throws {
        let decoder = try GStreamerAudioDecoder(alacFmtp: Self.fmtp)
        let encoder = ALACEncoder()
        var raw = 0, encoded = 0
        for packet in 0..<60 {
            let samples = Self.signal(frames: 352, start: packet * 352)
            let frame = encoder.encode(samples)
            raw += samples.count * 2
            encoded += frame.count
            let decoded = decoder.decodeOrEmpty(frame)
            #expect(decoded == samples, "packet \(packet): \(decoded.count) samples back")
            if decoded != samples { break }
        }
        #expect(Double(encoded) < 0.9 * Double(raw), "\(encoded) of \(raw) bytes")
        print("measure: ALAC frames \(String(format: "%.1f", 100 * Double(encoded) / Double(raw))) % of L16")
    }

    @Test func aShortLastFrameCarriesItsLength() throws {
        let decoder = try GStreamerAudioDecoder(alacFmtp: Self.fmtp)
        let samples = Self.signal(frames: 100, start: 10_000)
        #expect(decoder.decodeOrEmpty(ALACEncoder().encode(samples)) == samples)
    }

    @Test func noiseGoesOutAsAnEscapeFrame() throws {
        var generator = SystemRandomNumberGenerator()
        let samples = (0..<704).map { _ in Int16.random(in: .min ... .max, using: &generator) }
        let frame = ALACEncoder().encode(samples)
        #expect(frame.count == 3 + 1408 + 1, "header, samples, end tag: \(frame.count)")
        #expect(try GStreamerAudioDecoder(alacFmtp: Self.fmtp).decode(frame) == samples)
    }

    @Test func silenceIsAFewBytes() throws {
        let samples = [Int16](repeating: 0, count: 704)
        let frame = ALACEncoder().encode(samples)
        #expect(frame.count < 140)
        #expect(try GStreamerAudioDecoder(alacFmtp: Self.fmtp).decode(frame) == samples)
    }
}

/// The same frames through our own decoder (what airplayd plays ALAC with): lossless too, so
/// `airplay stream` to `airplayd` needs no GStreamer decoder at the receiver.
@Suite struct ALACRoundTripTests {
    @Test func framesDecodeBitExactWithTheNativeDecoder() throws {
        let decoder = try ALACDecoder(fmtp: ALACEncoderTests.fmtp)
        for packet in 0..<60 {
            let samples = ALACEncoderTests.signal(frames: packet == 59 ? 100 : 352, start: packet * 352)
            #expect(try decoder.decode(ALACEncoder().encode(samples)) == samples, "packet \(packet)")
        }
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<704).map { _ in Int16.random(in: .min ... .max, using: &generator) }
        #expect(try decoder.decode(ALACEncoder().encode(noise)) == noise, "an escape frame")
    }
}
