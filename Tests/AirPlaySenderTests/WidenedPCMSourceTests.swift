import AirPlayMedia
@testable import AirPlaySender
import Testing

/// A 48 kHz/16-bit file goes out as 48 kHz/24-bit (the format with a code Apple's receivers read).
@Suite struct WidenedPCMSourceTests {
    final class Fixed: PCMSource, @unchecked Sendable {
        var samples: [Int32]
        let format = PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16)
        let tags = TrackTags()
        init(_ samples: [Int32]) { self.samples = samples }
        func read(frames: Int) -> [Int32] {
            let taken = Array(samples.prefix(frames * 2))
            samples.removeFirst(taken.count)
            return taken
        }
    }

    @Test func everySampleMovesUpEightBitsAndNothingIsLost() {
        let widened = WidenedPCMSource(Fixed([0, 1, -1, 32767, -32768, 12345]))
        #expect(widened.format == PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        #expect(widened.read(frames: 3) == [0, 256, -256, 8_388_352, -8_388_608, 3_160_320])
        #expect(widened.read(frames: 3).isEmpty)
    }
}
