import AirPlayWire

/// The timeline of a buffered AirPlay 2 stream as a pure machine: which frame sounds when on
/// our PTP clock, how far ahead of playing to send, and the anchors of a start, a pause and a
/// resume. It never reads a clock: `BufferedStreamer` passes the PTP time in (nanoseconds) and
/// carries out the steps.
///
/// Frame `anchorTimestamp` sounds at `anchorTime`; frames after it follow at the stream's rate.
/// A pause is a rate-0 anchor at the frame sounding then (the receivers keep what they hold);
/// a resume anchors that frame a little from now.
struct BufferedTimeline: Sendable {
    /// What the sending loop does next.
    enum Step: Equatable, Sendable {
        /// Send the next packet (read, encode, send, then `sent(frames:)`).
        case send
        /// Far enough ahead: wait this long (seconds), then ask again.
        case wait(Double)
        /// Paused: wait for a resume.
        case paused
        /// Stopped: the loop ends.
        case stopped
    }

    /// Frames per second.
    let sampleRate: Double
    /// How far ahead of playing the audio is sent (seconds).
    let ahead: Double
    /// Our grandmaster's clock identity, named in every anchor.
    let timeline: UInt64

    /// The RTP time of the first frame.
    let firstTimestamp: UInt32
    /// The next packet's sequence number (23 bits, as buffered audio numbers them) and RTP time.
    private(set) var sequence: UInt32 = 0
    private(set) var timestamp: UInt32
    /// Frames sent.
    private(set) var framesSent = 0
    /// The RTP time after the last frame, once the source ended.
    private(set) var lastTimestamp: UInt32?
    private(set) var paused = false
    private(set) var stopped = false
    private var anchorTimestamp: UInt32
    private var anchorTime: Int64 = 0
    private var pausedAt: UInt32 = 0

    /// A stream whose first frame has RTP time `firstTimestamp`.
    init(firstTimestamp: UInt32, sampleRate: Double, ahead: Double, timeline: UInt64) {
        self.firstTimestamp = firstTimestamp
        timestamp = firstTimestamp
        anchorTimestamp = firstTimestamp
        self.sampleRate = sampleRate
        self.ahead = ahead
        self.timeline = timeline
    }

    /// The first anchor: the first frame sounds at `soundsAt` (PTP nanoseconds).
    mutating func start(soundsAt: Int64) -> RateAnchor {
        anchorTime = soundsAt
        return anchor
    }

    /// The anchor in force, for a receiver that joins.
    var anchor: RateAnchor {
        paused ? .pause : .play(rtpTime: anchorTimestamp, networkTime: anchorTime, timeline: timeline)
    }

    /// The RTP time sounding at `now` (PTP nanoseconds).
    func playingTimestamp(now: Int64) -> UInt32 {
        if paused { return pausedAt }
        let elapsed = max(0, Double(now - anchorTime) / 1e9)
        return anchorTimestamp &+ UInt32(elapsed * sampleRate)
    }

    /// Seconds of the stream played by `now`.
    func secondsPlayed(now: Int64) -> Double {
        Double(playingTimestamp(now: now) &- (timestamp &- UInt32(truncatingIfNeeded: framesSent))) / sampleRate
    }

    /// Seconds from `now` until the last frame sent has sounded.
    func secondsToEnd(now: Int64) -> Double {
        max(0, Double(Int32(bitPattern: (lastTimestamp ?? timestamp) &- playingTimestamp(now: now))) / sampleRate)
    }

    /// What to do at `now`: send while the next packet sounds less than `ahead` from now, else
    /// wait (at most 0.1 s, so a pause or stop is seen soon).
    func step(now: Int64) -> Step {
        if stopped { return .stopped }
        if paused { return .paused }
        let sounds = anchorTime + Int64(Double(Int32(bitPattern: timestamp &- anchorTimestamp)) / sampleRate * 1e9)
        let lead = Double(sounds - now) / 1e9
        return lead > ahead ? .wait(min(lead - ahead, 0.1) + 0.001) : .send
    }

    /// A packet of `frames` went to the receivers at the current sequence number and RTP time.
    mutating func sent(frames: Int) {
        sequence = (sequence &+ 1) & 0x7F_FFFF
        timestamp &+= UInt32(frames)
        framesSent += frames
    }

    /// The source ended after the last packet sent.
    mutating func ended() {
        lastTimestamp = timestamp
    }

    /// Where a receiver joining at `now` starts: `margin` seconds after what sounds, so its first
    /// packet arrives before it is due.
    func joinPoint(now: Int64, margin: Double) -> UInt32 {
        playingTimestamp(now: now) &+ UInt32(margin * sampleRate)
    }

    /// Stops the clock at the frame sounding `now`; the rate-0 anchor to send, or nil when
    /// already paused or stopped.
    mutating func pause(now: Int64) -> RateAnchor? {
        guard !paused, !stopped else { return nil }
        pausedAt = playingTimestamp(now: now)
        paused = true
        return .pause
    }

    /// Plays on from the paused frame (or `from`, in a mixed group the frame its realtime
    /// receivers resume from), which sounds at `soundsAt`; the anchor to send, or nil when not paused.
    mutating func resume(from: UInt32? = nil, soundsAt: Int64) -> RateAnchor? {
        guard paused else { return nil }
        paused = false
        anchorTimestamp = from ?? pausedAt
        anchorTime = soundsAt
        return anchor
    }

    /// Ends the stream (also while paused).
    mutating func stop() {
        stopped = true
    }
}
