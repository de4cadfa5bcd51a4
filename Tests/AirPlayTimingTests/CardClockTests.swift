import AirPlayMedia
@testable import AirPlayTiming
import Testing

/// How the box learns a sound card's own clock from its delay: the card's pointer moves in
/// coarse steps and our reads come at jittery moments, yet a straight line through a few
/// seconds of readings tells the card's rate to a few ppm and when the next frame leaves it to
/// a few tens of microseconds.
@Suite struct CardClockTests {
    /// A card started at `start` whose crystal runs `ppm` off 44.1 kHz and whose pointer moves
    /// in steps of `step` frames, as a USB card's moves a packet at a time.
    struct Card {
        var start = 1000.0
        var ppm: Double
        var step = 44
        var rate: Double { 44100 * (1 + ppm * 1e-6) }
        /// Frames that really left by `time`.
        func played(at time: Double) -> Int { Int(((time - start) * rate).rounded(.down)) }
        /// What the card says at `time` with `written` frames given.
        func reading(at time: Double, written: Int, restarts: Int = 0) -> OutputClockReading {
            let pointer = min(written, played(at: time) / step * step)
            return OutputClockReading(time: time, writtenFrames: written, queuedFrames: written - pointer, restarts: restarts)
        }
        /// When frame `index` really leaves.
        func leaves(_ index: Int) -> Double { start + Double(index) / rate }
    }

    /// Readings every 32 ms (± 5 ms of scheduling jitter), the card kept 0.1 s ahead.
    static func follow(_ card: Card, seconds: Double, clock: inout CardClock) -> Int {
        var generator = PTPFollowerTests.SeededGenerator(state: 41)
        var time = card.start, written = 0
        while time < card.start + seconds {
            written = card.played(at: time) + 4410
            clock.add(card.reading(at: time, written: written))
            time += 0.032 + Double.random(in: -0.005...0.005, using: &generator)
        }
        return written
    }

    @Test(arguments: [-500.0, -200, 0, 200, 500])
    func aCardsRateAndItsNextFrameAreToldFromItsCoarsePointer(ppm: Double) throws {
        let card = Card(ppm: ppm)
        var clock = CardClock(nominalRate: 44100)
        let written = Self.follow(card, seconds: 20, clock: &clock)
        let estimate = try #require(clock.estimate)
        #expect(abs(estimate.ppm - ppm) < 10, "\(estimate)")
        #expect(estimate.ppmUncertainty < 5)
        let predicted = try #require(clock.leaveTime(ofFrame: written))
        // Within a tenth of the pointer's 1 ms step: the line is raised to the readings least late.
        #expect(abs(predicted - card.leaves(written)) < 0.00015, "\((predicted - card.leaves(written)) * 1e6) µs")
    }

    @Test func twoSecondsAlreadyTellTheNextFrameToAFewTenthsOfAMillisecond() throws {
        let card = Card(ppm: 300)
        var clock = CardClock(nominalRate: 44100)
        let written = Self.follow(card, seconds: 2, clock: &clock)
        let predicted = try #require(clock.leaveTime(ofFrame: written))
        #expect(abs(predicted - card.leaves(written)) < 0.0004)
    }

    @Test func aRestartStartsTheLineAgainAndAnEmptyCardSaysNothing() throws {
        var clock = CardClock(nominalRate: 44100)
        _ = Self.follow(Card(ppm: 200), seconds: 5, clock: &clock)
        #expect(clock.estimate != nil)
        // The card underran and was started again: its old line says nothing about it now.
        clock.add(OutputClockReading(time: 2000, writtenFrames: 0, queuedFrames: 0, restarts: 1))
        #expect(clock.estimate == nil && clock.leaveTime(ofFrame: 0) == nil)
        // A card holding nothing is stopped or starved: not a reading of its rate.
        clock.add(OutputClockReading(time: 2000.1, writtenFrames: 500, queuedFrames: 0, restarts: 1))
        #expect(clock.estimate == nil)
        clock.add(OutputClockReading(time: 2000.2, writtenFrames: 5000, queuedFrames: 4410, restarts: 1))
        let next = try #require(clock.leaveTime(ofFrame: 5000))
        #expect(abs(next - 2000.3) < 0.001, "a first reading: its delay at the nominal rate")
    }

    /// The line's raise is the 95th percentile of its residuals, found by selection: the same
    /// value a sort gives, ties and repeats included.
    @Test func selectionFindsWhatASortPutsAtEachRank() {
        var generator = SystemRandomNumberGenerator()
        for count in [1, 2, 3, 10, 101, 1000] {
            let values = (0..<count).map { _ in Double(Int.random(in: -20...20, using: &generator)) / 4 }
            let sorted = values.sorted()
            for rank in Set([0, count / 2, count - 1, min(count - 1, Int(Double(count) * 0.95))]) {
                var scratch = values
                #expect(CardClock.select(&scratch, rank: rank) == sorted[rank], "rank \(rank) of \(count)")
            }
        }
    }
}
