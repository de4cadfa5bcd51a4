@testable import AirPlayTiming
import Testing

/// Kernel packet stamps are CLOCK_REALTIME and the follower works on CLOCK_MONOTONIC: the two
/// clocks are related by reading both, and a preemption between the reads must not become the
/// relation. A Sync converted with an offset one time slice off looks that much early, which
/// makes it the quickest sample of the follower's window and moves its line (one room of three,
/// by 2 ms, in a clean clone's minute in three rooms).
@Suite struct RealtimeToMonotonicTests {
    /// The realtime read is bracketed by two monotonic ones; a bracket a preemption wide (16 ms)
    /// is passed over for the next, tight one, whose mid-point is taken.
    @Test func aPreemptedReadIsPassedOver() {
        var reads: [(before: Int64, realtime: Int64, after: Int64)] = [
            (1_000_000_000, 5_000_000_000, 1_016_000_000),   // preempted between the reads
            (1_020_000_000, 5_019_000_100, 1_020_000_200),   // 200 ns wide
        ]
        let offset = PTPSockets.realtimeToMonotonic { reads.removeFirst() }
        #expect(offset == 1_020_000_100 - 5_019_000_100)
        #expect(reads.isEmpty)
    }

    /// A tight first bracket is taken at once: no more clock reads than needed.
    @Test func aTightFirstReadIsEnough() {
        var count = 0
        let offset = PTPSockets.realtimeToMonotonic {
            count += 1
            return (2_000, 10_000, 2_100)
        }
        #expect(offset == 2_050 - 10_000 && count == 1)
    }

    /// Four wide brackets in a row: the narrowest of them, never more than four reads.
    @Test func theNarrowestOfFourWideOnes() {
        var widths: [Int64] = [3_000_000, 40_000, 900_000, 2_000_000, 1]
        var count = 0
        let offset = PTPSockets.realtimeToMonotonic {
            count += 1
            let width = widths.removeFirst()
            return (0, 0, width)
        }
        #expect(offset == 20_000 && count == 4)
    }

    /// The live clocks: the offset read twice agrees to well within a millisecond (the clocks
    /// are not stepped in tests), and a realtime stamp taken now converts to about now.
    @Test func theLiveClocksAgree() {
        let first = PTPSockets.realtimeToMonotonic()
        let stamp = PTPSockets.realtimeNanoseconds()
        let now = PTPSockets.monotonicNanoseconds()
        let second = PTPSockets.realtimeToMonotonic()
        #expect(abs(first - second) < 1_000_000)
        #expect(abs(stamp + second - now) < 10_000_000)
    }
}
