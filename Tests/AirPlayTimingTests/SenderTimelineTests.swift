@testable import AirPlayTiming
import AirPlayWire
import Testing

/// How the receiver learns the sender's clock: NTP-style timing exchanges give the offset and
/// its drift, sync packets tie RTP times to the sender's clock.
@Suite struct SenderTimelineTests {
    /// A sender whose clock reads `offset` seconds ahead of ours and runs `ppm` fast; each exchange
    /// takes `oneWay` seconds each way plus 0.1 ms inside the sender.
    struct FakeSender {
        var offset = 1_000_000.0
        var ppm = 0.0
        func clock(_ local: Double) -> Double { offset + local * (1 + ppm * 1e-6) }
        func reply(sentAt local: Double, oneWay: Double = 0.001, back: Double? = nil) -> (RAOPTiming, arrival: Double) {
            let received = clock(local + oneWay), transmitted = clock(local + oneWay + 0.0001)
            let timing = RAOPTiming(origin: SenderTimeline.ntp(local), receive: SenderTimeline.ntp(received),
                                    transmit: SenderTimeline.ntp(transmitted))
            return (timing, local + oneWay + 0.0001 + (back ?? oneWay))
        }
    }

    /// Sync packet at sender time `at`: `playing` is heard then, `next` is being sent. Flags 0:
    /// the frame named is heard at the sync's time itself (flags 7 add 11025 frames, below).
    static func sync(playing: UInt32, next: UInt32, at senderTime: Double, flags: UInt16 = 0, first: Bool = false) -> RAOPSync {
        RAOPSync(rtpTimeNowMinusLatency: playing, ntpTime: SenderTimeline.ntp(senderTime), rtpTimeNext: next, isFirst: first, flags: flags)
    }

    @Test func oneExchangeGivesTheOffsetAndTheRoundTrip() throws {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        // The frame playing at the sender's 100.5 s (its clock) plays at our 100.5 s.
        timeline.addSync(Self.sync(playing: 44100, next: 44100 + 88200, at: sender.clock(100.5)), arrival: 100.5)
        let local = try #require(timeline.localTime(of: 44100 + 22050))
        #expect(abs(local - 101.0) < 1e-5, "half a second of frames later: \(local)")
        let figures = timeline.figures
        #expect(figures.senderClock && figures.exchanges == 1)
        #expect(abs((figures.roundTripMilliseconds ?? 0) - 2) < 0.01)
    }

    /// PipeWire 0.3.65's sync packets say "now minus latency" = "next": no latency at all. The
    /// receiver gives such a sender its own buffer (0.5 s), so the first frame is not already
    /// late when it arrives; a sender that asks for more (pyatv's 1.5 s) gets what it asks.
    @Test func aSenderClaimingNoLatencyGetsTheFloor() throws {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100, minimumLatency: 0.5)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        timeline.addSync(Self.sync(playing: 44100, next: 44100, at: sender.clock(100.5)), arrival: 100.5)
        #expect(abs(try #require(timeline.localTime(of: 44100)) - 101.0) < 1e-5, "sent at 100.5, heard at 101")
        #expect(timeline.figures.senderClock)

        let generous = SenderTimeline(sampleRate: 44100, minimumLatency: 0.5)
        generous.addTimingReply(reply, arrival: arrival)
        generous.addSync(Self.sync(playing: 0, next: 66150, at: sender.clock(100.5)), arrival: 100.5)
        #expect(abs(try #require(generous.localTime(of: 66150)) - 102.0) < 1e-5, "1.5 s after it was sent")
    }

    /// PulseAudio stamps a sync packet when it sends it; its first one is often 1.5–4 ms late
    /// (its IO thread stalls once at start). A late stamp never moves the timeline: the earliest
    /// sync of the window wins at once, and an earlier one is taken as soon as it comes.
    @Test func lateSyncStampsAreIgnored() throws {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        // Frame 0 plays at sender time 102 on the schedule; the first sync says 102.003.
        timeline.addSync(Self.sync(playing: 0, next: 88200, at: sender.clock(102.003)), arrival: 102.003)
        #expect(abs(try #require(timeline.localTime(of: 0)) - 102.003) < 1e-6, "one sync: taken as it is")
        for second in 1...3 {
            let late = second == 2 ? 0.0008 : 0
            timeline.addSync(Self.sync(playing: UInt32(second * 44100), next: UInt32(second * 44100 + 88200),
                                       at: sender.clock(102 + Double(second) + late)), arrival: 102 + Double(second) + late)
            #expect(abs(try #require(timeline.localTime(of: 0)) - 102) < 1e-6, "after sync \(second): the schedule")
        }
    }

    @Test func aSlowExchangeDoesNotMoveTheOffset() throws {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        for (time, back) in [(100.0, 0.001), (102.0, 0.050), (104.0, 0.001)] {
            let (reply, arrival) = sender.reply(sentAt: time, back: back)
            timeline.addTimingReply(reply, arrival: arrival)
        }
        timeline.addSync(Self.sync(playing: 0, next: 88200, at: sender.clock(105)), arrival: 105)
        // The 50 ms return trip would put the offset 25 ms off; it is left out.
        #expect(abs(try #require(timeline.localTime(of: 0)) - 105) < 1e-5)
    }

    @Test func driftIsMeasuredOverTenSecondsAndFollowed() throws {
        let sender = FakeSender(ppm: 300)
        let timeline = SenderTimeline(sampleRate: 44100)
        for step in 0...10 {
            let (reply, arrival) = sender.reply(sentAt: 100 + Double(step) * 2)
            timeline.addTimingReply(reply, arrival: arrival)
        }
        #expect(abs(timeline.figures.driftPPM - 300) < 1, "\(timeline.figures.driftPPM)")
        // 20 s later still on time: the offset moves along the drift.
        timeline.addSync(Self.sync(playing: 0, next: 88200, at: sender.clock(140)), arrival: 140)
        let local = try #require(timeline.localTime(of: 44100))
        #expect(abs(local - (140 + 1 / 1.0003)) < 1e-5, "\(local)")
    }

    /// A sync packet stamped with a clock other than the one the timing answers come from (here
    /// the NTP era's first second): such a sender is not trusted.
    @Test func syncPacketsThatContradictTheTimingAnswersAreRefused() {
        let sender = FakeSender(offset: 3_900_000_000)
        let timeline = SenderTimeline(sampleRate: 44100)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        timeline.addSync(Self.sync(playing: 44100, next: 44100 + 77175, at: 2_208_988_800 + 1), arrival: 100.5)
        #expect(timeline.localTime(of: 44100) == nil)
        #expect(timeline.figures.implausibleSyncs == 1 && !timeline.figures.senderClock)
    }

    /// Trust has hysteresis: one contradicting sync (its newest frame overdue on arrival) among
    /// agreeing ones is ignored once three have confirmed the sender's clock, two in a row lose
    /// it, and once lost it takes three agreeing ones in a row to win it back (a sender near the
    /// limit on a jittery link would otherwise flip, moving the audio each time).
    @Test func trustIsLostAfterTwoContradictionsAndWonBackAfterThreeAgreements() {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        let (reply, arrival) = sender.reply(sentAt: 100)
        timeline.addTimingReply(reply, arrival: arrival)
        var second = 100.0
        // A sync with a latency of 1 s whose stamp is `late` seconds behind its arrival.
        func sync(late: Double) {
            second += 1
            let rtp = UInt32((second - 100) * 44100)
            timeline.addSync(Self.sync(playing: rtp, next: rtp + 44100, at: sender.clock(second) - late), arrival: second)
        }
        sync(late: 1.6)
        #expect(!timeline.figures.senderClock, "the frame being sent would have been due 0.6 s ago")
        sync(late: 0)
        sync(late: 0)
        #expect(!timeline.figures.senderClock, "after a contradiction, two agreeing syncs are not enough")
        sync(late: 0)
        #expect(timeline.figures.senderClock, "three in a row win it")
        sync(late: 0)
        sync(late: 0)
        sync(late: 1.6)
        #expect(timeline.figures.senderClock, "one contradiction is ignored once confirmed")
        sync(late: 0)
        sync(late: 1.6)
        sync(late: 1.6)
        #expect(!timeline.figures.senderClock, "two in a row lose it")
        sync(late: 0)
        sync(late: 0)
        #expect(!timeline.figures.senderClock && timeline.localTime(of: 0) == nil)
        sync(late: 0)
        #expect(timeline.figures.senderClock, "three in a row win it back")
        #expect(timeline.figures.implausibleSyncs == 4)

        // pyatv 0.x: its first sync agrees, every later one carries the first one's time.
        let pyatv = SenderTimeline(sampleRate: 44100)
        pyatv.addTimingReply(reply, arrival: arrival)
        pyatv.addSync(Self.sync(playing: 0, next: 44100, at: sender.clock(101)), arrival: 101)
        #expect(pyatv.figures.senderClock)
        pyatv.addSync(Self.sync(playing: 44100, next: 88200, at: sender.clock(101)), arrival: 102)
        #expect(!pyatv.figures.senderClock, "an unconfirmed trust goes at the first contradiction")
    }

    /// On a jittery link (each way 10–30 ms, uneven) a 20 s fit shows a slope that is not there;
    /// under five standard errors it counts as no drift, and the offset is the quickest exchange's.
    @Test func aDriftLostInTheLinksJitterCountsAsNone() {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        // Fixed "random" delays (ms), so the test always sees the same link.
        let out = [12, 27, 18, 29, 11, 22, 15, 30, 19, 24, 13], back = [25, 14, 29, 16, 21, 10, 28, 17, 23, 12, 26]
        for step in 0..<11 {
            let (reply, arrival) = sender.reply(sentAt: 100 + Double(step) * 2, oneWay: Double(out[step]) / 1000,
                                                back: Double(back[step]) / 1000)
            timeline.addTimingReply(reply, arrival: arrival)
        }
        #expect(timeline.figures.driftPPM == 0)
        #expect(abs(timeline.uncertainty - 0.016) < 0.0005, "half the quickest round trip (11 + 21 ms)")
        timeline.addSync(Self.sync(playing: 0, next: 0, at: sender.clock(125)), arrival: 125)
        let local = timeline.localTime(of: 0) ?? 0
        #expect(abs(local - 125) < 0.01, "within the link's asymmetry: \(local)")
    }

    /// Before a drift can be told (10 s), the offset comes from the exchange that can be the
    /// least wrong: half its round trip, plus 0.5 ms for every second since (a clock drifting
    /// as fast as any crystal does). One quick, even answer followed by slow, lopsided ones
    /// (Wi-Fi on a bad day) keeps the timeline where the quick one put it; taking the quickest
    /// of the last three, as it once did, moved it by 8 ms three answers later (and behind
    /// 20 ± 10 ms each way, in a clean clone, by over 20 ms: 888 frames removed following it).
    @Test func aQuickAnswerOutweighsLaterSlowOnes() {
        let sender = FakeSender()
        let timeline = SenderTimeline(sampleRate: 44100)
        let out = [11.0, 29, 30, 28, 29, 30, 27], back = [11.0, 12, 13, 12, 14, 12, 13]
        for step in out.indices {
            let (reply, arrival) = sender.reply(sentAt: 100 + Double(step) * 1.25, oneWay: out[step] / 1000, back: back[step] / 1000)
            timeline.addTimingReply(reply, arrival: arrival)
            if step == 0 { timeline.addSync(Self.sync(playing: 0, next: 0, at: sender.clock(100.5)), arrival: 100.5) }
            let local = timeline.localTime(of: 0) ?? 0
            #expect(abs(local - 100.5) < 0.001, "after answer \(step + 1): frame 0 at \(local), meant at 100.5")
        }
        // A quicker answer than the first still wins at once.
        let (reply, arrival) = sender.reply(sentAt: 109, oneWay: 0.0105, back: 0.0105)
        timeline.addTimingReply(reply, arrival: arrival)
        #expect(abs((timeline.localTime(of: 0) ?? 0) - 100.5) < 0.001)
    }

    @Test func withoutTimingAnswersNothingIsTrusted() {
        let timeline = SenderTimeline(sampleRate: 44100)
        timeline.addSync(Self.sync(playing: 0, next: 88200, at: 1_000_100), arrival: 100)
        #expect(timeline.localTime(of: 0) == nil)
        // A "reply" to a request we never sent (origin in our future) is ignored.
        timeline.addTimingReply(RAOPTiming(origin: SenderTimeline.ntp(500), receive: 1, transmit: 2), arrival: 100)
        #expect(timeline.figures.exchanges == 0)
    }

    @Test func timingRequestsCarryOurClockAsTheirTransmitTime() throws {
        let bytes = SenderTimeline.request(at: 12.5)
        #expect(bytes.count == 32 && bytes[0] == 0x80 && bytes[1] == 0xD2)
        guard case .timingRequest(let timing) = try #require(RAOPPacket.parse(bytes)) else { Issue.record("not a request"); return }
        #expect(SenderTimeline.seconds(timing.transmit) == 12.5)
    }
}
