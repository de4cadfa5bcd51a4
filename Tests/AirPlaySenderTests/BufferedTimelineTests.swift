@testable import AirPlaySender
import AirPlayWire
import Testing

/// A buffered AirPlay 2 stream's timeline on our PTP clock (`BufferedTimeline`), on times the
/// test gives: what sounds when, how far ahead audio goes, and the anchors that `SETRATEANCHORTIME`
/// carries for a start, a pause, a resume and a receiver that joins.
@Suite struct BufferedTimelineTests {
    static let second: Int64 = 1_000_000_000
    static func timeline() -> BufferedTimeline {
        BufferedTimeline(firstTimestamp: 1000, sampleRate: 44100, ahead: 3, timeline: 0xABCD)
    }

    /// The first frame sounds at the start anchor's time, and frames follow at the rate: what
    /// sounds is the anchor's frame plus the time since, never before the anchor.
    @Test func theStartAnchorNamesTheFirstFrame() {
        var timeline = Self.timeline()
        let anchor = timeline.start(soundsAt: 10 * Self.second)
        #expect(anchor.playing && anchor.rtpTime == 1000 && anchor.networkTime == 10 * Self.second && anchor.timeline == 0xABCD)
        #expect(timeline.playingTimestamp(now: 9 * Self.second) == 1000, "nothing sounds before the anchor")
        #expect(timeline.playingTimestamp(now: 12 * Self.second) == 1000 + 88200)
    }

    /// Audio is sent while what comes next sounds less than `ahead` (3 s) from now, then the loop
    /// waits (at most 0.1 s at a time, so a pause or stop is seen soon).
    @Test func audioGoesThreeSecondsAheadThenWaits() {
        var timeline = Self.timeline()
        _ = timeline.start(soundsAt: 1 * Self.second)
        var sent = 0
        while timeline.step(now: 0) == .send, sent < 10_000 {
            timeline.sent(frames: 352)
            sent += 1
        }
        // What sounds up to 3 s from now: the 2 s after the anchor at 1 s (251 packets of 352 frames).
        #expect(sent == 251, "\(sent) packets")
        guard case .wait(let seconds) = timeline.step(now: 0) else {
            Issue.record("not waiting")
            return
        }
        #expect(seconds > 0 && seconds <= 0.101)
        #expect(timeline.sequence == 251 && timeline.framesSent == 251 * 352)
    }

    /// A pause stops the clock at the frame sounding then (rate 0, no time); a resume anchors that
    /// frame at the time given, and the timeline plays on from it.
    @Test func aPauseHoldsTheFrameAndAResumeAnchorsIt() throws {
        var timeline = Self.timeline()
        _ = timeline.start(soundsAt: 0)
        let paused = timeline.pause(now: 2 * Self.second)
        let pause = try #require(paused)
        #expect(pause == .pause, "rate 0 alone: \(pause.plist)")
        #expect(timeline.pause(now: 3 * Self.second) == nil, "one pause at a time")
        #expect(timeline.step(now: 5 * Self.second) == .paused && timeline.playingTimestamp(now: 9 * Self.second) == 1000 + 88200)
        let resumed = timeline.resume(soundsAt: 20 * Self.second)
        let resume = try #require(resumed)
        #expect(resume.playing && resume.rtpTime == 1000 + 88200 && resume.networkTime == 20 * Self.second)
        #expect(timeline.playingTimestamp(now: 21 * Self.second) == 1000 + 88200 + 44100)
        #expect(timeline.resume(soundsAt: 30 * Self.second) == nil)
    }

    /// A receiver that joins gets the anchor in force and the audio from a little after what
    /// sounds now; at the end, the time left is what was sent but has not sounded.
    @Test func aJoinerStartsJustAfterWhatSoundsAndTheEndIsKnown() {
        var timeline = Self.timeline()
        _ = timeline.start(soundsAt: 0)
        for _ in 0..<250 { timeline.sent(frames: 352) }
        timeline.ended()
        #expect(timeline.joinPoint(now: Self.second, margin: 0.3) == 1000 + 44100 + 13230)
        #expect(timeline.anchor == .play(rtpTime: 1000, networkTime: 0, timeline: 0xABCD))
        #expect(abs(timeline.secondsToEnd(now: Self.second) - (Double(250 * 352) / 44100 - 1)) < 0.001)
        #expect(abs(timeline.secondsPlayed(now: Self.second) - 1) < 0.001)
        timeline.stop()
        #expect(timeline.step(now: Self.second) == .stopped)
    }
}
