import AirPlayInMemory
import AirPlayReceiver
import AirPlaySender
import AirPlayWire
import Testing

/// The session after its setup, sender and receiver both real machines, in memory: the
/// sender's `SenderSessionMachine` against the box's `AudioSessionStateMachine`, a pause and a
/// resume, keep-alives, metadata and TEARDOWN, and how a receiver without `/feedback` is kept.
@Suite struct RunningSessionInMemoryTests {
    /// An AirPlay 1 session, set up and playing.
    static func playing(_ receiver: inout InMemoryReceiver) throws -> InMemorySetup {
        var setup = InMemorySetup()
        _ = try setup.run(SetupInMemoryTests.raop(), against: &receiver, now: 0).get()
        return setup
    }

    /// A pause is a FLUSH the box takes as a pause from RTP-Info's point, a resume a RECORD;
    /// metadata of the kinds `md` lists is taken; TEARDOWN ends the box's session.
    @Test func aPauseAResumeMetadataAndTeardown() throws {
        var receiver = InMemoryReceiver()
        var setup = try Self.playing(&receiver)
        var session = SenderSessionMachine(nowPlaying: .dmap([0, 2]))
        try setup.perform(.flush(RTPInfo(sequence: 300, rtpTime: 70400)), in: &session, against: &receiver, now: 1).get()
        let paused = try #require(receiver.machine.current)
        #expect(paused.paused)
        #expect(receiver.actions.contains(.flush(session: paused.number, before: 70400, resumeSequence: 300)))
        try setup.perform(.record(RTPInfo(sequence: 300, rtpTime: 70400)), in: &session, against: &receiver, now: 2).get()
        var item = DMAP.Item()
        item.title = "Sweep"
        let metadata = SenderSessionMachine.Metadata(item: item, artwork: nil,
                                                     progress: SenderSessionMachine.Progress(start: 4000, current: 70400, end: 400_000),
                                                     rtpTime: 70400)
        try setup.perform(.metadata(metadata), in: &session, against: &receiver, now: 3).get()
        #expect(setup.exchanges.suffix(4).map(\.description)
                == ["FLUSH → 200", "RECORD → 200", "SET_PARAMETER application/x-dmap-tagged → 200", "SET_PARAMETER text/parameters → 200"])
        try setup.perform(.tearDown, in: &session, against: &receiver, now: 4).get()
        #expect(receiver.machine.current == nil && session.phase == .ended)
    }

    /// airplayd answers `/feedback`, so the keep-alive stays that; a receiver that knows no
    /// `/feedback` gets the volume instead, and keeps its session.
    @Test func theKeepAliveFollowsWhatTheReceiverAnswers() throws {
        var box = InMemoryReceiver()
        var setup = try Self.playing(&box)
        var session = SenderSessionMachine(nowPlaying: .dmap([]))
        for second in 1...3 { try setup.perform(.keepAlive(decibels: -10), in: &session, against: &box, now: Double(second)).get() }
        #expect(setup.exchanges.suffix(3).map(\.description) == Array(repeating: "POST → 200", count: 3))
        #expect(session.feedback == .answered)

        var old = InMemoryReceiver(quirks: .refusesFeedback)
        var oldSetup = try Self.playing(&old)
        var oldSession = SenderSessionMachine(nowPlaying: .dmap([]))
        for second in 1...2 { try oldSetup.perform(.keepAlive(decibels: -10), in: &oldSession, against: &old, now: Double(second)).get() }
        #expect(oldSetup.exchanges.suffix(3).map(\.description)
                == ["POST → 501", "SET_PARAMETER text/parameters → 200", "SET_PARAMETER text/parameters → 200"])
        #expect(old.machine.current != nil)
    }
}
