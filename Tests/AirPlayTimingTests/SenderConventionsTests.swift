@testable import AirPlayTiming
import AirPlayTiming
import AirPlayWire
import Synchronization
import Testing

/// The timing conventions of the senders people use, each as the receiver reads it
/// (`Protocol/raop.md` §1, `Protocol/airplay2.md`): iTunes-style flags 7, libraop's back-dated
/// start, a flush that starts a new timeline, and AirPlay 2 realtime anchors on PTP.
@Suite struct SenderConventionsTests {
    typealias Sender = SenderTimelineTests.FakeSender

    /// A timeline that has had one timing answer from `sender`, at our 100 s.
    static func timeline(_ sender: Sender, minimumLatency: Double = 0) -> SenderTimeline {
        let timeline = SenderTimeline(sampleRate: 44100, minimumLatency: minimumLatency)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        return timeline
    }

    /// iTunes, OwnTone and libraop send flags 7 and name the frame "next minus 77175": it is
    /// heard 11025 frames (250 ms) after the sync's time, so the frame being sent is heard 2 s
    /// after it is sent, as on shairport-sync and AirPort Express.
    @Test func flagsSevenPutTheNamedFrame11025FramesAfterTheSyncsTime() throws {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let next: UInt32 = 500_000
        let sync = SenderTimelineTests.sync(playing: next - 77175, next: next, at: sender.clock(101), flags: 7)
        #expect(sync.bytes[2...3] == [0x00, 0x07])
        timeline.addSync(sync, arrival: 101)
        #expect(timeline.figures.senderClock)
        #expect(abs(try #require(timeline.localTime(of: next - 77175)) - 101.25) < 1e-5)
        #expect(abs(try #require(timeline.localTime(of: next)) - 103) < 1e-5, "sent at 101, heard 2 s later")

        let plain = Self.timeline(sender)
        plain.addSync(SenderTimelineTests.sync(playing: next - 77175, next: next, at: sender.clock(101), flags: 0), arrival: 101)
        #expect(abs(try #require(plain.localTime(of: next - 77175)) - 101) < 1e-5, "any other flags: heard at the sync's time")
    }

    /// libraop starts a commanded stream by back-dating its timeline by its latency (2.55 s
    /// here) and bursting the backlog at once; each sync is stamped with its next frame's time,
    /// which lags real time during the burst. The first sync, stamped 2.55 s before it arrives,
    /// is a clock such a sender can have (its newest frame is due 0.25 s from now): it is
    /// trusted at once, and the first frame is placed before it is written.
    @Test func aBackDatedStartIsTrustedFromItsFirstSync() throws {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let latency = 112_455 as UInt32   // 2.55 s
        let first: UInt32 = 1_000_000, start = 200.0
        // Sync n of the burst: `n` frames of backlog sent, stamped with frame first + n's time.
        func burstSync(_ n: UInt32, arrival: Double) {
            let stamp = start - 2.55 + Double(n) / 44100
            timeline.addSync(SenderTimelineTests.sync(playing: first + n - latency, next: first + n, at: sender.clock(stamp),
                                                      flags: 7, first: n == 0), arrival: arrival)
        }
        burstSync(0, arrival: start)
        #expect(timeline.figures.senderClock && timeline.figures.implausibleSyncs == 0)
        #expect(abs(try #require(timeline.localTime(of: first)) - (start + 0.25)) < 1e-5, "heard when the sender promised")
        burstSync(44100, arrival: start + 0.02)
        burstSync(88200, arrival: start + 0.04)
        // Then one a second in real time: stamped with the time of its next frame, on schedule.
        for second in 1...4 {
            burstSync(112_455 + UInt32(second) * 44100, arrival: start + Double(second))
        }
        #expect(timeline.figures.senderClock && timeline.figures.implausibleSyncs == 0 && timeline.figures.trustChanges == 1)
        #expect(abs(try #require(timeline.localTime(of: first)) - (start + 0.25)) < 1e-5, "never moved")
    }

    /// libraop sends its first sync right after RECORD, before the receiver's first timing
    /// request is answered: it waits for that answer, and anchors the stream then.
    /// It is read then only when it is stamped back (a backlog being burst): PipeWire's first
    /// sync, stamped as it leaves, is 20-30 ms off the line its later ones keep, and those come
    /// before its audio is due.
    @Test func aSyncBeforeTheFirstTimingAnswerIsReadWhenItComes() throws {
        let sender = Sender()
        let timeline = SenderTimeline(sampleRate: 44100)
        // Frame 88200 (next) was due to leave 2 s before this sync arrived: a burst follows.
        timeline.addSync(SenderTimelineTests.sync(playing: 0, next: 88200, at: sender.clock(98), flags: 7, first: true), arrival: 100)
        #expect(timeline.localTime(of: 0) == nil)
        let (reply, arrival) = sender.reply(sentAt: 100.01)
        timeline.addTimingReply(reply, arrival: arrival)
        #expect(abs(try #require(timeline.localTime(of: 0)) - 98.25) < 1e-5)

        let plain = SenderTimeline(sampleRate: 44100)
        plain.addSync(SenderTimelineTests.sync(playing: 0, next: 88200, at: sender.clock(100), flags: 7, first: true), arrival: 100)
        plain.addTimingReply(reply, arrival: arrival)
        #expect(plain.localTime(of: 0) == nil, "stamped as it left: the next sync anchors the stream")
    }

    /// A sync whose newest frame would already be overdue when it arrives describes no clock a
    /// sender sending in time can have; nor does one stamped over 10 s in our future, one with a
    /// latency over 10 s, or one that moves the timeline in force by over 0.5 s.
    @Test func aSyncWhoseNewestFrameIsOverdueContradicts() {
        #expect(SenderTimeline.judge(stampLocal: 97.9, arrival: 100, latency: 2, jump: nil) == .contradicts)
        #expect(SenderTimeline.judge(stampLocal: 98.0, arrival: 100, latency: 2, jump: nil) == .agrees, "due right now")
        #expect(SenderTimeline.judge(stampLocal: 97.99, arrival: 100, latency: 2, uncertainty: 0.02, jump: nil) == .agrees,
                "within the offset's uncertainty")
        #expect(SenderTimeline.judge(stampLocal: 103, arrival: 100, latency: 2, jump: nil) == .agrees, "a start time ahead")
        #expect(SenderTimeline.judge(stampLocal: 110.1, arrival: 100, latency: 2, jump: nil) == .contradicts)
        #expect(SenderTimeline.judge(stampLocal: 100, arrival: 100, latency: 11, jump: nil) == .contradicts, "over 10 s of latency")
        #expect(SenderTimeline.judge(stampLocal: 100, arrival: 100, latency: 2, jump: 0.6) == .contradicts, "a jump without a first sync")
        #expect(SenderTimeline.judge(stampLocal: 100, arrival: 100, latency: 2, jump: 0.3) == .agrees, "a smaller one is followed")
    }

    /// Music Assistant gives libraop a start time about 4.9 s ahead (2.7 s once it has
    /// connected): its first sync, and one a second until the audio flows, name that start's
    /// frame with that time. Every sync lies on one line, so the first is trusted and nothing
    /// moves when the audio comes.
    @Test func aStartTimeAheadIsTrustedFromTheFirstSync() throws {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let head: UInt32 = 3_000_000, latency: UInt32 = 88200, start = 203.0
        for second in 0..<3 {
            timeline.addSync(SenderTimelineTests.sync(playing: head - latency, next: head, at: sender.clock(start), flags: 7, first: second == 0),
                             arrival: 200.3 + Double(second))
        }
        #expect(timeline.figures.senderClock && timeline.figures.implausibleSyncs == 0)
        // The audio flows from 203 s on, 2.25 s ahead of being heard.
        for second in 0..<3 {
            let next = head + UInt32(second) * 44100
            timeline.addSync(SenderTimelineTests.sync(playing: next - latency, next: next, at: sender.clock(start + Double(second)), flags: 7),
                             arrival: start + Double(second) + 0.004)
        }
        #expect(timeline.figures.implausibleSyncs == 0 && timeline.figures.trustChanges == 1)
        #expect(abs(try #require(timeline.localTime(of: head)) - (start + 2.25)) < 1e-5)
    }

    /// pyatv 0.18 stamps its syncs with its set-up's time plus the frames sent, and sends its
    /// first ones before any audio: they promise the first frame 1.75 s after the set-up. When
    /// its metadata and artwork take longer than that, its first packet arrives overdue: the
    /// promise was not kept, and the stream is timed by arrival instead of being cut.
    @Test func aFirstPacketThatArrivesOverdueUndoesTheTrust() {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let setUp = 100.0
        timeline.addSync(SenderTimelineTests.sync(playing: 0, next: 66150, at: sender.clock(setUp), flags: 7, first: true), arrival: setUp + 0.1)
        #expect(timeline.figures.senderClock)
        timeline.audioArrived(rtp: 66150, arrival: setUp + 1.5)
        #expect(timeline.figures.senderClock, "on time: due at 101.75")
        timeline.audioArrived(rtp: 66150 + 352, arrival: setUp + 2.35)
        #expect(!timeline.figures.senderClock && timeline.figures.overdueAudio == 1, "0.6 s overdue")
        #expect(timeline.localTime(of: 66150) == nil)
    }

    /// Wi-Fi holds packets back behind later ones. pyatv's frames come about 50 ms before they
    /// are due, so one held back 40 ms on a jittery link arrives after its time: behind a later
    /// packet already here, that is the path's doing, and the timeline keeps its trust. A
    /// packet as late in its place, after every earlier one, still undoes it.
    @Test func aPacketHeldBackOnTheWayIsNotHeldAgainstTheTimeline() {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let setUp = 100.0
        timeline.addSync(SenderTimelineTests.sync(playing: 0, next: 66150, at: sender.clock(setUp), flags: 7, first: true), arrival: setUp + 0.1)
        // Frame 66150 is due at 101.75 s, each packet of 352 frames 7.98 ms after the one before.
        let due = { (rtp: UInt32) in 101.75 + Double(rtp - 66150) / 44100 }
        timeline.audioArrived(rtp: 66150, arrival: due(66150) - 0.05)
        timeline.audioArrived(rtp: 66854, arrival: due(66854) - 0.05)
        timeline.audioArrived(rtp: 66502, arrival: due(66502) + 0.024)
        #expect(timeline.figures.senderClock && timeline.figures.overdueAudio == 0, "held back behind 66854")
        timeline.audioArrived(rtp: 67206, arrival: due(67206) + 0.024)
        #expect(!timeline.figures.senderClock && timeline.figures.overdueAudio == 1, "the newest yet, and overdue")
    }

    /// pyatv's stamps run a fixed time behind its audio for the whole stream. When its first
    /// packet came 27 ms overdue, its later syncs promise every newest frame a little late too,
    /// by 3 ms in a quiet moment: within the slack a sender is given, but not for one that has
    /// broken its promise already. It stays timed by arrival, not won back to be cut 0.5 s.
    @Test func aSenderThatBrokeItsPromiseIsNotTrustedAgainOnSyncsThatBarelyAgree() {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        let setUp = 100.0
        timeline.addSync(SenderTimelineTests.sync(playing: 0, next: 66150, at: sender.clock(setUp), flags: 7, first: true), arrival: setUp + 0.1)
        timeline.audioArrived(rtp: 66150, arrival: setUp + 1.75 + 0.027)
        #expect(!timeline.figures.senderClock && timeline.figures.overdueAudio == 1)
        for second in 1...4 {
            let next = 66150 + UInt32(second) * 44100
            timeline.addSync(SenderTimelineTests.sync(playing: next - 66150, next: next, at: sender.clock(setUp + Double(second)), flags: 7),
                             arrival: setUp + Double(second) + 1.75 + 0.003)
        }
        #expect(!timeline.figures.senderClock && timeline.figures.trustChanges == 2 && timeline.figures.implausibleSyncs == 4)

        // The same syncs from a sender whose audio came in time agree: a late stamp is allowed for.
        let kept = Self.timeline(sender)
        kept.addSync(SenderTimelineTests.sync(playing: 0, next: 66150, at: sender.clock(setUp), flags: 7, first: true), arrival: setUp + 0.1)
        kept.audioArrived(rtp: 66150, arrival: setUp + 1.7)
        for second in 1...4 {
            let next = 66150 + UInt32(second) * 44100
            kept.addSync(SenderTimelineTests.sync(playing: next - 66150, next: next, at: sender.clock(setUp + Double(second)), flags: 7),
                         arrival: setUp + Double(second) + 1.75 + 0.003)
        }
        #expect(kept.figures.senderClock && kept.figures.implausibleSyncs == 0)
    }

    /// A resumed stream's RTP times go on where they stopped while its clock moved on: after a
    /// FLUSH the next sync starts a new timeline, first-flagged or not, with no stretch of
    /// arrival timing in between.
    @Test func aFlushLetsTheNextSyncStartANewTimeline() throws {
        let sender = Sender()
        let timeline = Self.timeline(sender)
        timeline.addSync(SenderTimelineTests.sync(playing: 0, next: 88200, at: sender.clock(101)), arrival: 101)
        timeline.addSync(SenderTimelineTests.sync(playing: 44100, next: 132_300, at: sender.clock(102)), arrival: 102)
        timeline.flush()
        // Paused for 10 s; RTP goes on from 132300.
        timeline.addSync(SenderTimelineTests.sync(playing: 44100, next: 132_300, at: sender.clock(112)), arrival: 112)
        #expect(timeline.figures.senderClock && timeline.figures.implausibleSyncs == 0)
        #expect(abs(try #require(timeline.localTime(of: 132_300)) - 114) < 1e-5)

        // Without the flush the same sync is a 10 s jump: a contradiction, not a new timeline.
        let unflushed = Self.timeline(sender)
        unflushed.addSync(SenderTimelineTests.sync(playing: 0, next: 88200, at: sender.clock(101)), arrival: 101)
        unflushed.addSync(SenderTimelineTests.sync(playing: 44100, next: 132_300, at: sender.clock(112)), arrival: 112)
        #expect(unflushed.figures.implausibleSyncs == 1)
    }

    /// AirPlay 2 realtime on PTP (OwnTone, Music Assistant): frame₁ − 11035 of each 0xD7 packet
    /// is heard at its PTP time; the box's follower maps that time to our clock, the same way
    /// as a buffered stream's rate anchor.
    @Test func aRealtimePTPAnchorPlacesFramesOnTheFollowedClock() throws {
        let clock = FixedPTPClock(masterMinusLocal: 5_000_000_000)
        let now = Mutex(10.0)
        let timeline = AnchoredTimeline(clock: clock, sampleRate: 44100, holdLimit: 2, now: { now.withLock { $0 } })
        #expect(timeline.holdsWithoutTime, "waits for its first anchor")
        let anchor = RAOPPTPAnchor(heard: 88200, at: 20_000_000_000, clockIdentity: 0xABCD)
        #expect(anchor.rtpTime == 88200 + 11035 && anchor.nextRTPTime == anchor.rtpTime + 77175)
        timeline.set(anchor)
        #expect(clock.preferred.withLock { $0 } == [0xABCD], "the anchor's grandmaster is preferred, once")
        // Master 20 s is our 15 s; one second of frames later is our 16 s.
        #expect(abs(try #require(timeline.localTime(of: 88200)) - 15) < 1e-9)
        #expect(abs(try #require(timeline.localTime(of: 88200 + 44100)) - 16) < 1e-9)
        timeline.set(RAOPPTPAnchor(heard: 132_300, at: 21_000_000_000, clockIdentity: 0xABCD))
        #expect(clock.preferred.withLock { $0 } == [0xABCD])

        // A flush forgets the anchor; with no clock for 2 s the stream plays from arrival.
        timeline.forget()
        #expect(timeline.localTime(of: 88200) == nil && timeline.holdsWithoutTime)
        now.withLock { $0 += 2.5 }
        #expect(!timeline.holdsWithoutTime, "past the hold limit: arrival timing until an anchor comes")
    }

    /// A buffered stream's timeline never plays by arrival.
    @Test func aBufferedTimelineHoldsForever() {
        let now = Mutex(10.0)
        let timeline = AnchoredTimeline(clock: FixedPTPClock(masterMinusLocal: 0), sampleRate: 44100, now: { now.withLock { $0 } })
        now.withLock { $0 += 3600 }
        #expect(timeline.holdsWithoutTime)
    }
}

/// A PTP clock a fixed offset from ours, recording the masters it is asked to prefer.
final class FixedPTPClock: PTPClock {
    let masterMinusLocal: Int64
    let preferred = Mutex<[UInt64]>([])
    init(masterMinusLocal: Int64) { self.masterMinusLocal = masterMinusLocal }
    func setPeers(_ addresses: [String]?) {}
    func prefer(timeline clockIdentity: UInt64?) { if let clockIdentity { preferred.withLock { $0.append(clockIdentity) } } }
    func localTime(ofMaster masterTime: Int64) -> Int64? { masterTime - masterMinusLocal }
    func masterTime() -> (master: Int64, local: Int64)? { (masterMinusLocal, 0) }
    func status() -> JSONValue { .null }
    func stop() {}
}
