import AirPlayReceiver
import Testing

/// How long a control connection may wait, with the clock in the test's hand.
@Suite struct ConnectionTimeoutsTests {
    static let limits = ConnectionTimeouts.Limits(requestTimeout: 10, idleTimeout: 120)

    /// A head trickled a byte at a time (slowloris) times out 10 s after its first byte.
    @Test func aRequestMustArriveWholeInTime() {
        var timeouts = ConnectionTimeouts(limits: Self.limits, now: 0)
        timeouts.bytesArrived(now: 1)
        for second in 2...11 {
            timeouts.bytesArrived(now: Double(second))
            #expect(timeouts.tick(now: Double(second), holdsSession: false) == nil, "second \(second)")
        }
        #expect(timeouts.tick(now: 11.5, holdsSession: false) == .requestTimedOut)
        #expect(timeouts.tick(now: 30, holdsSession: false) == nil, "a time-out fires once")
    }

    /// Answering takes as long as it takes (a deferred HLS answer); the idle clock starts when
    /// the last response left.
    @Test func answeringIsNotTimedAndIdleStartsAfterTheLastResponse() {
        var timeouts = ConnectionTimeouts(limits: Self.limits, now: 0)
        timeouts.bytesArrived(now: 0)
        timeouts.requestDecoded()
        timeouts.requestDecoded()
        #expect(timeouts.tick(now: 500, holdsSession: false) == nil)
        timeouts.responseSent(now: 500)
        #expect(!timeouts.isIdle, "one response still owed")
        timeouts.responseSent(now: 501)
        #expect(timeouts.isIdle)
        #expect(timeouts.tick(now: 620, holdsSession: false) == nil)
        #expect(timeouts.tick(now: 621.5, holdsSession: false) == .idleTimedOut)
    }

    /// An RTSP connection that owns the audio session stays open however quiet it is.
    @Test func aConnectionHoldingTheAudioSessionIsNeverIdle() {
        var timeouts = ConnectionTimeouts(limits: Self.limits, now: 0)
        #expect(timeouts.tick(now: 1000, holdsSession: true) == nil)
        #expect(timeouts.tick(now: 1100, holdsSession: false) == nil, "idle counts again from when the session went")
        #expect(timeouts.tick(now: 1121, holdsSession: false) == .idleTimedOut)
    }

    /// An event channel (after the /reverse upgrade) is not timed at all.
    @Test func stoppedConnectionsAreNotTimed() {
        var timeouts = ConnectionTimeouts(limits: Self.limits, now: 0)
        timeouts.stop()
        timeouts.bytesArrived(now: 1)
        #expect(timeouts.tick(now: 10_000, holdsSession: false) == nil)
    }
}
