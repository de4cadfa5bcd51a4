import AirPlayMedia
import Foundation
import SoxrMedia
import Testing

/// `audio_drift_correction = "resample"`: a packet played a frame longer or shorter through
/// libsoxr is the same music, only slower or faster by 1/352, and it joins the packets on both
/// sides without a seam.
@Suite struct SoxrPacketResamplerTests {
    /// A 1 kHz tone and a 5 kHz one at 44.1 kHz, stereo, at time `t` (in frames), 16-bit.
    static func tone(at t: Double, channel: Int) -> Double {
        let frequency = channel == 0 ? 1000.0 : 5000.0
        return 20000 * sin(2 * Double.pi * frequency * t / 44100)
    }

    static func frames(_ range: Range<Int>) -> [Int32] {
        range.flatMap { t in (0..<2).map { Int32(tone(at: Double(t), channel: $0).rounded()) } }
    }

    @Test(arguments: [1, -1])
    func aPacketResampledAFrameLongerOrShorterIsTheSameToneStretched(change: Int) throws {
        let resampler = try SoxrPacketResampler()
        let n = 352, m = n + change
        let before = Self.frames(0..<n), packet = Self.frames(n..<2 * n), after = Self.frames(2 * n..<3 * n)
        let out = try #require(resampler.resample(packet, to: m, before: before[...], after: after[...], channels: 2, maximumSample: 32767))
        #expect(out.count == m * 2)
        // Output frame j is the packet at time j * n / m: the first is the packet's first, the
        // one after the last would be the next packet's first.
        var worst = 0.0
        for j in 0..<m {
            for channel in 0..<2 {
                let expected = Self.tone(at: Double(n) + Double(j) * Double(n) / Double(m), channel: channel)
                worst = max(worst, abs(Double(out[j * 2 + channel]) - expected))
            }
        }
        // Within 0.01 % of full scale (-80 dB) everywhere, joins included.
        #expect(worst < 4, "worst error \(worst) of 20000")
    }

    @Test func withNothingHeardBeforeThePacketStillStartsAndEndsInPlace() throws {
        let resampler = try SoxrPacketResampler()
        let packet = Self.frames(0..<352), after = Self.frames(352..<704)
        let out = try #require(resampler.resample(packet, to: 353, before: [], after: after[...], channels: 2, maximumSample: 32767))
        #expect(out.count == 706)
        // Away from the start (where soxr sees silence before), the tone is intact.
        for j in 64..<353 {
            let expected = Self.tone(at: Double(j) * 352 / 353, channel: 1)
            #expect(abs(Double(out[j * 2 + 1]) - expected) < 20, "frame \(j)")
        }
    }

    @Test func aChangeOfMoreThanOnePercentOrAnOddPacketIsRefused() throws {
        let resampler = try SoxrPacketResampler()
        let packet = Self.frames(0..<352)
        #expect(resampler.resample(packet, to: 300, before: [], after: [], channels: 2, maximumSample: 32767) == nil)
        #expect(resampler.resample(Array(packet.dropLast()), to: 352, before: [], after: [], channels: 2, maximumSample: 32767) == nil)
    }
}
