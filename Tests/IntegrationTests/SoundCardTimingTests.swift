import Testing

// In a file of its own: `swift test --filter SoundCardTests` matches a test by its file's
// name too, and would run this suite beside that one.
/// Rooms in step where the sound leaves the box, not where it is written: each room plays to
/// its own sound card, whose crystal runs 200 ppm fast in one room and 200 ppm slow in the
/// other (0.4 ms a second apart), and airplayd follows each card's clock (`alsa:DEVICE`). Every
/// second, the same frames leave the two cards within a millisecond of each other, whichever
/// way the sender times the stream: two minutes in each of the three timings. The two on PTP
/// run at once, each on hosts of its own (two rooms and a sender take 2 % of a core), and
/// alone; AirPlay 1 on NTP, whose rooms read the sender's clock from its timing replies, plays
/// beside nothing (`SoundCardTests`): beside the other two its p99 once rose to 0.81 ms.
@Suite(.timeLimit(.minutes(10))) struct SoundCardTimingTests {
    /// Each case plays on a thread of its own: a test that blocks holds one of the test
    /// runner's threads (one per core), and the two would take turns.
    @Test(arguments: [CardTestTiming.bufferedOnPTP, .realtimeOnPTP])
    func twoRoomsOnCards400PPMApartStayInStepAtTheCards(timing: CardTestTiming) async throws {
        let trial = TwoRoomsOnCards(timing: timing, output: { "alsa:card\($0)" })
        trial.judge(try await onAThreadOfItsOwn { try trial.play() })
    }
}
