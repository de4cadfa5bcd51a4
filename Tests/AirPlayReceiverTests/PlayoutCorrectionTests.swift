@testable import AirPlayReceiver
import Testing

/// How the playout stays on the sender's timeline without clicks, and how it sums up its error.
@Suite struct PlayoutCorrectionTests {
    @Test func aFrameIsRemovedWhereThePacketIsQuietestByAveragingTwoNeighbours() {
        let samples: [Int32] = [40, -40, 10, -10, 2, -2, 30, -30]
        #expect(PlayoutSchedule.stretch(samples, channels: 2, by: -1) == [40, -40, 6, -6, 30, -30])
    }

    @Test func aFrameIsInsertedWhereThePacketIsQuietestAsTheAverageOfItsNeighbours() {
        let samples: [Int32] = [40, -40, 10, -10, 2, -2, 30, -30]
        #expect(PlayoutSchedule.stretch(samples, channels: 2, by: 1) == [40, -40, 10, -10, 6, -6, 2, -2, 30, -30])
    }

    @Test func theTallyKeepsMeanPercentilesAndWorst() {
        var tally = SyncErrorTally()
        for index in 0..<100 { tally.add(Double(index) / 100_000) }   // 0 … 0.99 ms
        tally.add(-0.005)
        #expect(tally.count == 101)
        #expect(abs(tally.percentile(0.5) - 0.0005) < 0.00011)
        #expect(tally.worst == 0.005)
        #expect(tally.mean < tally.meanMagnitude)
    }
}
