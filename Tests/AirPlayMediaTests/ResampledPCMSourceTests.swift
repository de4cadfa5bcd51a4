import AirPlayMedia
import Foundation
import Testing

/// A CD-quality source as 48 kHz/24-bit (Apple's lossless buffered format): as many frames as
/// the rates say, and the same tones at the new rate, aligned to the sample.
@Suite struct ResampledPCMSourceTests {
    /// Two tones, one per channel, at `format`.
    final class Tones: PCMSource, @unchecked Sendable {
        let format: PCMFormat
        let tags = TrackTags()
        let frames: Int
        var next = 0
        init(format: PCMFormat, seconds: Double) {
            self.format = format
            frames = Int(Double(format.sampleRate) * seconds)
        }
        static func sample(_ frame: Int, channel: Int, rate: Int, scale: Double) -> Double {
            let time = Double(frame) / Double(rate)
            return scale * (channel == 0 ? 0.4 * sin(2 * .pi * 440 * time) : 0.3 * sin(2 * .pi * 1000 * time))
        }
        func read(frames wanted: Int) -> [Int32] {
            let count = min(wanted, frames - next)
            let scale = Double(format.maximumSample)
            defer { next += count }
            return (next..<next + count).flatMap { frame in
                (0..<2).map { Int32(Self.sample(frame, channel: $0, rate: format.sampleRate, scale: scale).rounded()) }
            }
        }
    }

    /// Everything `source` gives, read `chunk` frames at a time.
    static func readAll(_ source: any PCMSource, chunk: Int) -> [Int32] {
        var out: [Int32] = []
        while case let more = source.read(frames: chunk), !more.isEmpty { out += more }
        return out
    }

    @Test func aCDToneComesOutAt48kHz24BitTheSameTone() throws {
        let source = Tones(format: .cd, seconds: 2)
        let resampled = try ResampledPCMSource(source, to: PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        let out = Self.readAll(resampled, chunk: 352)
        // 2 s at 48 kHz, give or take the filter's edge.
        #expect(abs(out.count / 2 - 96_000) < 200, "\(out.count / 2) frames")
        // Against the tones computed at 48 kHz/24-bit, past the filter's start.
        let scale = Double(PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24).maximumSample)
        func snr(delay: Int) -> Double {
            var signal = 0.0, noise = 0.0
            for frame in 4800..<(4800 + 48000) {
                for channel in 0..<2 {
                    let want = Tones.sample(frame, channel: channel, rate: 48000, scale: scale)
                    let got = Double(out[2 * (frame + delay) + channel])
                    signal += want * want
                    noise += (got - want) * (got - want)
                }
            }
            return 10 * log10(signal / max(noise, 1))
        }
        // Aligned to the sample: frame j is the source at time j / 48000 exactly.
        let aligned = snr(delay: 0)
        // The filter's passband ripple and the source's 16 bits bound it (measured 82.5 dB).
        #expect(aligned > 75, "SNR \(aligned) dB")
        #expect(out.allSatisfy { abs($0) <= 8_388_607 }, "24-bit range")
    }

    /// The depth alone: 16 to 24 bits at one rate is a shift of 8 (nothing else changes).
    @Test func aDepthChangeAloneIsExact() throws {
        let source = Tones(format: PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16), seconds: 0.5)
        let reference = Tones(format: PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16), seconds: 0.5).read(frames: 24000)
        let widened = try ResampledPCMSource(source, to: PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        let out = Self.readAll(widened, chunk: 1000)
        #expect(out == reference.map { $0 << 8 })
    }
}
