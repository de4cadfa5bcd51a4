@testable import AirPlayReceiver
import AirPlayWire
import AirPlayTiming
import Testing

/// When received audio is written, decided with the time in the test's hand: the buffer delay,
/// order, duplicates, gaps played as silence, a jump ahead, FLUSH, volume, and a sender's
/// timeline with an output delay.
@Suite struct PlayoutScheduleTests {
    /// 352 stereo frames per packet at 44.1 kHz (as senders send): one packet lasts 8 ms.
    static let frames = 352
    static let packetSeconds = 352.0 / 44100

    /// A sender's timeline whose clock agrees with ours (one timing exchange at 100 s) and whose
    /// first sync, stamped `syncStamp` on its clock, says RTP 0 arrived at our `arrival`.
    static func senderTimeline(syncStamp: Double, arrival: Double) -> SenderTimeline {
        let timeline = SenderTimeline(sampleRate: 44100, minimumLatency: 0)
        timeline.addTimingReply(RAOPTiming(origin: SenderTimeline.ntp(100), receive: SenderTimeline.ntp(100),
                                           transmit: SenderTimeline.ntp(100)), arrival: 100)
        timeline.addSync(RAOPSync(rtpTimeNowMinusLatency: 0, ntpTime: SenderTimeline.ntp(syncStamp), rtpTimeNext: 0, isFirst: true, flags: 0),
                         arrival: arrival)
        return timeline
    }

    static func schedule(timeline: (any PlayoutTimeline)? = nil) -> PlayoutSchedule {
        PlayoutSchedule(timeline: timeline, sampleRate: 44100, channels: 2, framesPerPacket: frames, bufferDelay: 0.5)
    }

    /// Packet `index`'s samples: all equal to `index + 1`.
    static func samples(_ index: Int) -> [Int32] { [Int32](repeating: Int32(index + 1), count: frames * 2) }

    static func written(_ step: PlayoutSchedule.Step) -> [Int32]? {
        if case .write(let samples, _) = step { return samples }
        return nil
    }

    /// Without the sender's clock the first packet plays one buffer delay after it arrived,
    /// and the next one packet-length later.
    @Test func theFirstPacketWaitsOutTheBuffer() {
        var schedule = Self.schedule()
        #expect(schedule.next(now: 0, delay: 0) == .idle)
        #expect(schedule.receive(timestamp: 1000, samples: Self.samples(0), arrival: 10) == true, "the idle thread is woken")
        guard case .wait(let seconds) = schedule.next(now: 10, delay: 0) else { Issue.record("waits for the buffer"); return }
        #expect(abs(seconds - 0.5) < 1e-9)
        #expect(schedule.receive(timestamp: 1352, samples: Self.samples(1), arrival: 10) == false, "a thread with work is not")
        #expect(Self.written(schedule.next(now: 10.5, delay: 0)) == Self.samples(0))
        guard case .wait(let next) = schedule.next(now: 10.5, delay: 0) else { Issue.record("waits for the next packet"); return }
        #expect(abs(next - Self.packetSeconds) < 1e-9)
        #expect(Self.written(schedule.next(now: 10.5 + Self.packetSeconds, delay: 0)) == Self.samples(1))
        #expect(schedule.stats.framesPlayed == 704)
    }

    /// Packets that arrive out of order play in order; a duplicate, or one older than what
    /// already played, is dropped.
    @Test func orderDuplicatesAndLatecomers() {
        var schedule = Self.schedule()
        _ = schedule.receive(timestamp: 0, samples: Self.samples(0), arrival: 0)
        _ = schedule.receive(timestamp: 704, samples: Self.samples(2), arrival: 0)
        _ = schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: 0)
        _ = schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: 0)
        var played: [[Int32]] = []
        var now = 0.5
        for _ in 0..<3 {
            if let samples = Self.written(schedule.next(now: now, delay: 0)) { played.append(samples) }
            now += Self.packetSeconds
        }
        #expect(played == [Self.samples(0), Self.samples(1), Self.samples(2)])
        #expect(schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: now) == false)
        #expect(schedule.stats.dropped == 2)
    }

    /// A packet still missing when its time comes is played as silence and counted as lost;
    /// the one after it plays on time.
    @Test func aGapIsSilenceWhenItsTimeComes() {
        var schedule = Self.schedule()
        _ = schedule.receive(timestamp: 0, samples: Self.samples(0), arrival: 0)
        _ = schedule.receive(timestamp: 704, samples: Self.samples(2), arrival: 0)
        #expect(Self.written(schedule.next(now: 0.5, delay: 0)) == Self.samples(0))
        #expect(Self.written(schedule.next(now: 0.5 + Self.packetSeconds, delay: 0)) == [Int32](repeating: 0, count: 704))
        #expect(Self.written(schedule.next(now: 0.5 + 2 * Self.packetSeconds, delay: 0)) == Self.samples(2))
        #expect(schedule.stats.lost == 1)
    }

    /// A sender that jumps more than a second ahead without FLUSH is followed on a fresh
    /// schedule, not filled with a second of silence.
    @Test func aJumpAheadStartsAFreshSchedule() {
        var schedule = Self.schedule()
        _ = schedule.receive(timestamp: 0, samples: Self.samples(0), arrival: 0)
        #expect(Self.written(schedule.next(now: 0.5, delay: 0)) == Self.samples(0))
        _ = schedule.receive(timestamp: 100_000, samples: Self.samples(9), arrival: 0.6)
        _ = schedule.next(now: 0.6, delay: 0)
        #expect(schedule.stats.reanchors == 1)
        #expect(Self.written(schedule.next(now: 0.6, delay: 0)) == Self.samples(9))
        #expect(schedule.stats.lost == 0)
    }

    /// FLUSH drops what is buffered and what is still in flight from before its RTP time;
    /// the next packet starts a new run with its own buffer delay.
    @Test func flushDropsTheOldAndStartsAgain() {
        var schedule = Self.schedule()
        _ = schedule.receive(timestamp: 0, samples: Self.samples(0), arrival: 0)
        schedule.flush(before: 1000)
        #expect(schedule.next(now: 0.5, delay: 0) == .idle)
        #expect(schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: 1) == false)
        #expect(schedule.receive(timestamp: 1056, samples: Self.samples(2), arrival: 2) == true)
        #expect(schedule.next(now: 2.4, delay: 0) != .write(Self.samples(2), gain: 1), "waits out a new buffer delay")
        #expect(Self.written(schedule.next(now: 2.5, delay: 0)) == Self.samples(2))
    }

    /// Volume is a gain on the write: 0 dB passes samples untouched, -144 dB mutes.
    @Test func volumeIsAGainOnTheWrite() {
        var schedule = Self.schedule()
        schedule.setVolume(decibels: -144)
        _ = schedule.receive(timestamp: 0, samples: Self.samples(0), arrival: 0)
        #expect(schedule.next(now: 0.5, delay: 0) == .write(Self.samples(0), gain: 0))
        schedule.setVolume(decibels: 0)
        _ = schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: 0)
        #expect(schedule.next(now: 0.5 + Self.packetSeconds, delay: 0) == .write(Self.samples(1), gain: 1))
    }

    /// With the sender's timeline, a frame is written when the sender means it to be heard,
    /// less the output's own delay (a sink that takes 100 ms gets it 100 ms early).
    @Test func theSendersTimelineLessTheOutputDelay() throws {
        // Our clock and the sender's agree (offset 0); RTP 44100 is heard at sender time 101.
        let timeline = Self.senderTimeline(syncStamp: 100, arrival: 100)
        let meant = try #require(timeline.localTime(of: 44100))
        #expect(abs(meant - 101) < 1e-6)
        var schedule = Self.schedule(timeline: timeline)
        _ = schedule.receive(timestamp: 44100, samples: Self.samples(0), arrival: 100.2)
        guard case .wait(let seconds) = schedule.next(now: 100.5, delay: 0.1) else { Issue.record("waits until 100.9"); return }
        #expect(abs(seconds - 0.4) < 1e-6)
        #expect(Self.written(schedule.next(now: 100.9, delay: 0.1)) == Self.samples(0))
        #expect(schedule.stats.syncError.count == 1 && schedule.stats.syncError.worst < 1e-6)
    }

    /// A clock known only to ±10 ms (half a jittery link's quickest round trip) is not chased
    /// within that: a packet 5 ms off it is written whole, where a LAN's clock (±0) would have
    /// the output add a frame to every packet once the error had lasted a second.
    @Test func errorsWithinTheClocksUncertaintyAreNotCorrected() {
        final class FixedClock: PlayoutTimeline, @unchecked Sendable {
            var start: Double
            let uncertainty: Double
            init(start: Double, uncertainty: Double) { (self.start, self.uncertainty) = (start, uncertainty) }
            func localTime(of rtp: UInt32) -> Double? { start + Double(rtp) / 44100 }
            func shift(by seconds: Double) { start += seconds }
        }
        for (uncertainty, corrected) in [(0.010, false), (0.0, true)] {
            let clock = FixedClock(start: 100, uncertainty: uncertainty)
            var schedule = Self.schedule(timeline: clock)
            var now = 100.0, packets = 0, whole = 0
            for index in 0..<300 {
                _ = schedule.receive(timestamp: UInt32(index * Self.frames), samples: Self.samples(index), arrival: now)
                // From the 10th packet on, the sender's clock says 5 ms later than before.
                if index == 10 { clock.shift(by: 0.005) }
                while true {
                    let step = schedule.next(now: now, delay: 0)
                    if case .wait(let seconds) = step { now += max(seconds, 0.0001); continue }
                    if let written = Self.written(step) {
                        packets += 1
                        if written.count == Self.frames * 2 { whole += 1 }
                    }
                    break
                }
            }
            #expect(packets == 300)
            #expect((whole == 300) != corrected, "uncertainty \(uncertainty): \(whole) of 300 packets whole")
        }
    }

    /// A sender whose clock stops being trusted mid-stream (its syncs contradict its timing
    /// answers) goes on from where the output is: the next packet is due one packet length after
    /// the last, not at the arrival schedule the run started with (0.3 s apart here).
    @Test func losingTheSendersClockMidStreamDoesNotStep() throws {
        let timeline = Self.senderTimeline(syncStamp: 100.8, arrival: 100.75)
        var schedule = Self.schedule(timeline: timeline)
        for index in 0..<2 {
            _ = schedule.receive(timestamp: UInt32(index * Self.frames), samples: Self.samples(index), arrival: 100)
        }
        // Arrival schedule: 100.5; the sender's clock: 100.8.
        #expect(Self.written(schedule.next(now: 100.8, delay: 0)) == Self.samples(0))
        for second in [101.0] {
            timeline.addSync(RAOPSync(rtpTimeNowMinusLatency: 0, ntpTime: SenderTimeline.ntp(second + 5), rtpTimeNext: 0, isFirst: false, flags: 0),
                             arrival: second)
        }
        #expect(!timeline.figures.senderClock)
        let due = 100.8 + Self.packetSeconds
        guard case .wait(let seconds) = schedule.next(now: 100.801, delay: 0) else { Issue.record("waits for its time"); return }
        #expect(abs(seconds - (due - 100.801)) < 1e-6)
        #expect(Self.written(schedule.next(now: due, delay: 0)) == Self.samples(1))
        #expect(schedule.stats.reanchors == 0)
    }

    /// An output that takes frames early (a file or FIFO: 10 ms of write-ahead) gets packets in
    /// pairs: the second in the same wake-up as the first; the thread then sleeps until the third
    /// is due, and what is heard stays on time. Pairs start at even multiples of the packet
    /// length in RTP time, so two receivers of one stream write the same pairs together.
    @Test(arguments: [0, 352])
    func writeAheadTakesTwoPacketsAWakeUp(firstTimestamp: Int) {
        var schedule = Self.schedule()
        for index in 0..<5 {
            _ = schedule.receive(timestamp: UInt32(firstTimestamp + index * Self.frames), samples: Self.samples(index), arrival: 0)
        }
        if firstTimestamp == 352 {
            // 352 is the second of its pair (0, 352): it goes alone, then pairs follow.
            #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(0))
            guard case .wait = schedule.next(now: 0.5, delay: 0, writeAhead: 0.01) else { Issue.record("704 waits"); return }
            #expect(Self.written(schedule.next(now: 0.5 + Self.packetSeconds, delay: 0, writeAhead: 0.01)) == Self.samples(1))
            #expect(Self.written(schedule.next(now: 0.5 + Self.packetSeconds, delay: 0, writeAhead: 0.01)) == Self.samples(2))
            return
        }
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(0))
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(1), "due in 8 ms: now")
        guard case .wait(let seconds) = schedule.next(now: 0.5, delay: 0, writeAhead: 0.01) else {
            Issue.record("the third waits"); return
        }
        #expect(abs(seconds - 2 * Self.packetSeconds) < 1e-9, "until it is due, so the fourth comes with it")
        #expect(Self.written(schedule.next(now: 0.5 + seconds, delay: 0, writeAhead: 0.01)) == Self.samples(2))
        #expect(Self.written(schedule.next(now: 0.5 + seconds, delay: 0, writeAhead: 0.01)) == Self.samples(3))
        #expect(schedule.stats.syncError.count == 4 && schedule.stats.syncError.worst < 1e-6)
        #expect(schedule.stats.framesInserted == 0 && schedule.stats.framesRemoved == 0)
    }

    /// A raw output's 30 ms of write-ahead: four 352-frame packets a wake-up at 44.1 kHz (the
    /// first on time, the next three due within 24 ms), five at 48 kHz (7.3 ms each); a 1024-frame
    /// AAC packet (23 ms) goes with one more; no write-ahead, one at a time.
    @Test func theWriteAheadSetsHowManyPacketsGoInOneWakeUp() {
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 0.030, packetSeconds: 352.0 / 44100) == 4)
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 0.030, packetSeconds: 352.0 / 48000) == 5)
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 0.030, packetSeconds: 1024.0 / 44100) == 2)
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 0.010, packetSeconds: 352.0 / 44100) == 2)
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 0, packetSeconds: 352.0 / 44100) == 1)
        #expect(PlayoutSchedule.packetsPerWrite(writeAhead: 10, packetSeconds: 352.0 / 44100) == 8, "bounded")
    }

    /// Groups of four start at multiples of four packets in RTP time: a stream starting at the
    /// third packet of a group writes two, then whole groups, each group's first on time.
    @Test func groupsOfFourAreFixedByRTPTime() {
        var schedule = Self.schedule()
        for index in 0..<8 {
            _ = schedule.receive(timestamp: UInt32((2 + index) * Self.frames), samples: Self.samples(index), arrival: 0)
        }
        var wakeUps: [[Int]] = [], now = 0.5
        for _ in 0..<8 {
            var written: [Int] = []
            while let samples = Self.written(schedule.next(now: now, delay: 0, writeAhead: 0.030)) {
                written.append((0..<8).first { Self.samples($0) == samples } ?? -1)
            }
            if !written.isEmpty { wakeUps.append(written) }
            guard case .wait(let seconds) = schedule.next(now: now, delay: 0, writeAhead: 0.030) else { break }
            now += seconds
        }
        #expect(wakeUps == [[0, 1], [2, 3, 4, 5], [6, 7]])
        #expect(schedule.stats.syncError.worst < 1e-6, "each wake-up's first packet on time")
    }

    /// A FLUSH naming an RTP time the output already wrote past (a packet written early): when
    /// the sender sends from that time again, what was written is not written twice.
    @Test func whatWasWrittenBeforeAFlushIsNotWrittenAgain() {
        var schedule = Self.schedule()
        for index in 0..<4 {
            _ = schedule.receive(timestamp: UInt32(index * Self.frames), samples: Self.samples(index), arrival: 0)
        }
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(0))
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(1))
        // The sender paused at 352 (it thinks packet 1 was not heard) and resumes from there.
        schedule.flush(before: 352)
        #expect(schedule.receive(timestamp: 352, samples: Self.samples(1), arrival: 1) == false, "written already: dropped")
        _ = schedule.receive(timestamp: 704, samples: Self.samples(2), arrival: 1)
        #expect(Self.written(schedule.next(now: 1.5, delay: 0)) == Self.samples(2))
        #expect(schedule.stats.dropped == 1)
    }

    /// A buffered stream's resume anchor names the frame where the sender thinks playing
    /// stopped; what the output already wrote past it is not written again, and what it holds
    /// from there on plays on the new anchor.
    @Test func aResumeAnchorBehindWhatWasWrittenGoesOnFromThere() {
        var schedule = Self.schedule()
        for index in 0..<4 {
            _ = schedule.receive(timestamp: UInt32(index * Self.frames), samples: Self.samples(index), arrival: 0)
        }
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(0))
        #expect(Self.written(schedule.next(now: 0.5, delay: 0, writeAhead: 0.01)) == Self.samples(1))
        // Paused; the sender resumes at packet 1, which the output already wrote.
        schedule.restart(at: UInt32(Self.frames))
        #expect(schedule.bufferedPackets == 2, "packets 2 and 3 are kept")
        #expect(Self.written(schedule.next(now: 5, delay: 0)) == Self.samples(2))
        // Again: still only what was not written plays.
        schedule.restart(at: 0)
        #expect(schedule.bufferedPackets == 1)
    }
}
