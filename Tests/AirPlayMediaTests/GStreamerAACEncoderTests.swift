import AirPlayMedia
import Foundation
import GStreamerMedia
import Testing

/// The sender's AAC-LC (what Apple's senders use for buffered music): raw access units of 1024
/// frames that FFmpeg's decoder (avdec_aac, as airplayd decodes them) turns back into the tone,
/// late by the encoder's priming, within AAC's loss.
@Suite struct GStreamerAACEncoderTests {
    @Test(arguments: [44100, 48000])
    func accessUnitsDecodeBackToTheTone(rate: Int) throws {
        let format = PCMFormat(sampleRate: rate, channels: 2, bitsPerSample: 16)
        let encoder = try GStreamerAACEncoder(format: format)
        let frames = 2 * rate
        let tone = (0..<frames).flatMap { index -> [Int32] in
            let time = Double(index) / Double(rate)
            return [Int32(12_000 * sin(2 * .pi * 440 * time)), Int32(9_000 * sin(2 * .pi * 660 * time))]
        }
        var units: [[UInt8]] = []
        for start in stride(from: 0, to: tone.count, by: 2048) {
            units += encoder.encode(Array(tone[start..<min(start + 2048, tone.count)]))
        }
        units += encoder.finish()
        let chunks = (frames + 1023) / 1024
        #expect(units.count >= chunks && units.count <= chunks + 3, "\(units.count) access units for \(chunks) chunks")
        #expect(units.allSatisfy { !$0.isEmpty && $0.count < 1536 && $0[0] >> 4 != 0xF }, "raw units, no ADTS sync word")

        let decoder = try GStreamerAudioDecoder(aacConfig: encoder.audioSpecificConfig, sampleRate: rate, channels: 2)
        let decoded = units.flatMap { decoder.decodeOrEmpty($0) }
        // The encoder's priming delays the tone by up to a few thousand frames: find it, then
        // compare the left channel over a second.
        func error(at delay: Int) -> Double {
            var sum = 0.0
            for frame in stride(from: rate / 4, to: rate / 4 + rate, by: 7) {
                let difference = Double(decoded[2 * (frame + delay)] - tone[2 * frame])
                sum += difference * difference
            }
            return sum
        }
        try #require(decoded.count >= 2 * (rate / 4 + rate + 4096), "\(decoded.count / 2) frames decoded")
        let delay = (0...4096).min { error(at: $0) < error(at: $1) }!
        var signal = 0.0, noise = 0.0
        for frame in (rate / 4)..<(rate / 4 + rate) {
            for channel in 0..<2 {
                let original = Double(tone[2 * frame + channel]), got = Double(decoded[2 * (frame + delay) + channel])
                signal += original * original
                noise += (got - original) * (got - original)
            }
        }
        let snr = 10 * log10(signal / max(noise, 1))
        #expect(snr > 40, "SNR \(snr) dB at a delay of \(delay) frames")
        print("measure: AAC-LC \(rate) Hz round trip, SNR \(String(format: "%.1f", snr)) dB, priming \(delay) frames, \(units.count) units")
    }
}
