@testable import AirPlayReceiver
import Testing

/// How the playout stays on the sender's timeline without clicks, and how it sums up its error.
@Suite struct PlayoutCorrectionTests {
    @Test func aFrameIsRemovedByAveragingTwoNeighbours() {
        let samples: [Int32] = [0, 0, 10, -10, 20, -20, 30, -30]
        #expect(PlayoutSchedule.stretch(samples, channels: 2, by: -1) == [0, 0, 15, -15, 30, -30])
    }

    @Test func aFrameIsInsertedAsTheAverageOfItsNeighbours() {
        let samples: [Int32] = [0, 0, 10, -10, 20, -20, 30, -30]
        #expect(PlayoutSchedule.stretch(samples, channels: 2, by: 1) == [0, 0, 10, -10, 15, -15, 20, -20, 30, -30])
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
