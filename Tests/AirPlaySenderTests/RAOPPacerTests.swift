@testable import AirPlaySender
import AirPlayWire
import Testing

/// How a RAOP stream is paced, on a clock the test holds (`RAOPPacer`): what iTunes-style
/// receivers (shairport-sync, AirPort Express, airplayd) expect of a sender, packet by packet.
@Suite struct RAOPPacerTests {
    static let packet = [Int32](repeating: 0, count: 704)   // 352 stereo frames
    static let latency: UInt32 = 66150

    /// What a whole second of packets sends, in order.
    static func second(_ pacer: inout RAOPPacer) -> [[RAOPPacer.Action]] {
        (0..<126).map { _ in pacer.packet(packet) }
    }

    /// The first packet goes with a sync flagged first and a timing request before it, and carries
    /// the marker bit. The sync names the frame heard 11025 frames after its time (flags 7): the
    /// packet's RTP time less the latency, plus 11025.
    @Test func aStreamOpensWithAFirstSyncATimingRequestAndTheMarker() {
        var pacer = RAOPPacer(sequence: 100, timestamp: 1_000_000, latencyFrames: Self.latency)
        pacer.start(now: 50)
        let actions = pacer.packet(Self.packet)
        #expect(actions == [
            .sync(rtpTimeNowMinusLatency: 1_000_000 - Self.latency + 11025, rtpTimeNext: 1_000_000, first: true, at: 50),
            .timingRequest,
            .audio(sequence: 100, timestamp: 1_000_000, marker: true, samples: Self.packet),
        ])
        guard case .audio(let sequence, let timestamp, let marker, _) = pacer.packet(Self.packet).last else {
            Issue.record("no packet")
            return
        }
        #expect(sequence == 101 && timestamp == 1_000_352 && !marker)
    }

    /// Packets leave on a schedule from the start (352 frames at 44.1 kHz: every 7.98 ms), so a
    /// late wake-up delays one packet, never the ones after it; a sync goes every second of
    /// audio, a timing request every two.
    @Test func packetsLeaveOnAScheduleWithASyncEverySecond() {
        var pacer = RAOPPacer(sequence: 0, timestamp: 0, latencyFrames: Self.latency)
        pacer.start(now: 10)
        let actions = (0..<3).flatMap { _ in Self.second(&pacer) }.flatMap { $0 }
        let syncs = actions.compactMap { action -> Double? in
            if case .sync(_, _, _, let at) = action { return at }
            return nil
        }
        #expect(syncs.count == 3 && abs(syncs[1] - syncs[0] - 1.0) < 0.01 && abs(syncs[2] - syncs[1] - 1.0) < 0.01, "\(syncs)")
        #expect(actions.filter { $0 == .timingRequest }.count == 2)
        #expect(abs(pacer.nextDue - (10 + Double(378 * 352) / 44100)) < 1e-9)
        #expect(pacer.framesSent == 378 * 352 && pacer.playingTimestamp == UInt32(378 * 352) &- Self.latency)
    }

    /// A resume sends again what had left but was not heard when the pause came (the FLUSH threw
    /// it away at the receivers), from the point after the flush, on a fresh schedule and with a
    /// first sync and the marker, so the listener hears on from where they paused. Skipping to
    /// another item drops it instead.
    @Test func aResumeReplaysWhatWasNotHeard() {
        var pacer = RAOPPacer(sequence: 0, timestamp: 0, latencyFrames: Self.latency)
        pacer.start(now: 0)
        let unheard = Int(Self.latency) / 352
        for index in 0..<400 { _ = pacer.packet([Int32](repeating: Int32(index), count: 704)) }
        pacer.resume(now: 100, replayUnheard: true)
        #expect(pacer.framesSent == (400 - unheard) * 352, "the unheard frames are taken back")
        let replayed = pacer.takeReplay()
        #expect(replayed?.first == Int32(400 - unheard), "the oldest unheard packet comes first")
        let actions = pacer.packet(replayed ?? [])
        #expect(actions.first == .sync(rtpTimeNowMinusLatency: 400 * 352 - Self.latency + 11025, rtpTimeNext: 400 * 352, first: true, at: 100))
        #expect(actions.last == .audio(sequence: 400, timestamp: 400 * 352, marker: true, samples: replayed ?? []))
        var skipped = RAOPPacer(sequence: 0, timestamp: 0, latencyFrames: Self.latency)
        skipped.start(now: 0)
        for _ in 0..<10 { _ = skipped.packet(Self.packet) }
        skipped.resume(now: 5, replayUnheard: false)
        #expect(skipped.takeReplay() == nil && skipped.framesSent == 0)
    }

    /// Sequence numbers and RTP times wrap as RTP's do.
    @Test func sequenceAndTimeWrap() {
        var pacer = RAOPPacer(sequence: 0xFFFF, timestamp: 0xFFFF_FF00, latencyFrames: Self.latency)
        pacer.start(now: 0)
        _ = pacer.packet(Self.packet)
        #expect(pacer.sequence == 0 && pacer.timestamp == 0xFFFF_FF00 &+ 352)
        #expect(abs(pacer.nextDue - 352.0 / 44100) < 1e-9)
    }
}
