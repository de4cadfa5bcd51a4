import AirPlayMedia
import AirPlayTiming

/// The playout on a sound card's own clock (shairport-sync's design): the card, not the system
/// clock, says when a frame written now will be heard, and the schedule keeps that moment on the
/// sender's timeline.
///
/// Each wake-up of the playout reads the card's delay (`observe(card:)`); a `CardClock` fits the
/// card's real rate through those readings and tells when the next frame written will leave it.
/// A packet is written once the card holds no more than `lead` seconds before it (the card's
/// buffer is never left to run dry, nor filled past what it holds), and its error is that leave
/// time minus the time the sender means:
/// - more than 20 ms early (a run's start, a pause in the stream): silence first, so its first
///   frame leaves on time;
/// - more than 20 ms late (the card underran, the sender jumped): its overdue frames are cut;
/// - otherwise, beyond `cardTolerance` (0.2 ms, or three times what the line cannot yet tell: a young
///   line is not chased through its own noise): one frame more or less per packet (averaged with its
///   neighbours, no click) until within `cardSettled`. The card's line is smooth (fitted over
///   seconds), so no second of confirmation is needed as on the system clock: a card 200 ppm off
///   is followed to within a few tenths of a millisecond. Between corrections a card known to
///   drift (`cardFeedForwardPPM`) gets its frame at its own pace.
extension PlayoutSchedule {
    /// Beyond this (seconds), the card's error is corrected, one frame per packet.
    static let cardTolerance = 0.0002
    /// Where a correction on the card stops (under a frame): a correction that stopped short
    /// would leave a card that drifts one way a steady bias of half the tolerance.
    static let cardSettled = 0.00001
    /// A card this far off nominal (ppm), and three times further than the line's own
    /// uncertainty, is followed at its own rate between corrections; closer, its drift is too
    /// slow to matter between them, and a card on time stays bit-exact.
    static let cardFeedForwardPPM = 10.0
    /// Seconds of readings before the card's line is followed.
    static let cardLineAge = 1.0
    /// Wake-ups come up to this much early, at random, so readings see the card's pointer at
    /// every point of its steps (a USB card's moves a millisecond at a time).
    static let cardDitherSpan = 0.003
    /// Packets due within this after the first of a wake-up go with it, in one write.
    static let cardGroup = 0.03

    /// Takes the card's clock, read at the start of a wake-up; from now on `next` follows it.
    mutating func observe(card reading: OutputClockReading) {
        if cardClock == nil { cardClock = CardClock(nominalRate: sampleRate) }
        cardClock!.add(reading)
        cardReading = reading
        framesSinceReading = 0
        cardStarting = false
        // The next wake-up comes a random 0-3 ms early. Wake-ups follow the card (each comes when
        // it holds the lead), so without this every reading would catch its pointer at the same
        // point of its step, and the line would follow that point as it slips (0.6 ms over 2 s
        // at 300 ppm with 1 ms steps) instead of the card.
        ditherState = ditherState &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        cardDither = Double(ditherState >> 11) / Double(1 << 53) * Self.cardDitherSpan
        // What the card said while it played: a card drained at a stream's end, or restarted
        // and not yet read enough to tell again, keeps its last rate and delay.
        let before = stats.output
        stats.output = AudioPlayout.OutputFigures(
            ratePPM: cardClock?.estimate?.ppm ?? before?.ratePPM,
            rateUncertaintyPPM: cardClock?.estimate?.ppmUncertainty ?? before?.rateUncertaintyPPM,
            delayMilliseconds: reading.queuedFrames > 0 ? Double(reading.queuedFrames) / sampleRate * 1000 : before?.delayMilliseconds ?? 0,
            restarts: reading.restarts)
    }

    /// When the next frame written will leave the card: while its line is young, from when the
    /// card started, at the nominal rate, where the output knows that moment (a line through a
    /// few readings of a pointer in 1 ms steps is that far off); then on the fitted line; before
    /// either, the reading's delay at the nominal rate.
    private func nextLeaveTime(now: Double) -> Double {
        guard let reading = cardReading else { return now }
        let index = reading.writtenFrames + framesSinceReading
        if let start = reading.startTime, (cardClock?.estimate?.span ?? 0) < Self.cardLineAge {
            return max(now, start + Double(index) / sampleRate)
        }
        if let time = cardClock?.leaveTime(ofFrame: index) { return max(time, now) }
        return max(now, reading.time) + Double(reading.queuedFrames + framesSinceReading) / sampleRate
    }

    /// Silence left to the second write of a run (seconds): the first starts the card with the
    /// rest of the silence the run's first frame needs, the second, once a reading says when the
    /// card really started, fills in exactly what is left.
    static let cardStartMargin = 0.01

    /// `next` on the card's clock, keeping `lead` seconds queued in it.
    mutating func nextOnCard(now: Double, lead: Double) -> Step {
        guard var run = self.run else {
            waitingForData = true
            return .idle
        }
        let key = run.nextTimestamp
        if let timeline, timeline.holdsWithoutTime, timeline.localTime(of: key) == nil {
            waitingForData = false
            return .wait(0.01)
        }
        // The card was just started: its first reading says when, before anything else is written.
        if cardStarting { return .wait(0) }
        let heard = nextLeaveTime(now: now)
        let rate = cardClock?.realRate ?? sampleRate
        let window = framesSinceReading == 0 ? lead + cardDither : lead + Self.cardGroup
        waitingForData = packets[key] == nil
        guard let samples = packets[key] else {
            let frames: Int
            switch missing(key, now: now, jumpAnchor: heard) {
            case .step(let step): return step
            case .silence(let count): frames = count   // a real gap: silence when the card needs it
            }
            if heard - now > window { return .wait(heard - window - now) }
            stats.lost += 1
            run.nextTimestamp = key &+ UInt32(frames)
            run.framesOut += frames
            stats.framesPlayed += frames
            framesSinceReading += frames
            self.run = run
            return .write(written([Int32](repeating: 0, count: frames * channels)), gain: gain)
        }

        let timed = timeline?.localTime(of: key)
        if timed != nil {
            run.followsTimeline = true
        } else if run.followsTimeline, run.framesOut > 0 {
            // The sender's clock was lost: play on from where the card is.
            run.anchorTimestamp = key
            run.anchorTime = heard
            (run.followsTimeline, run.correcting) = (false, false)
        }
        let meant = timed ?? run.anchorTime + Double(key &- run.anchorTimestamp) / sampleRate
        self.run = run
        // Written once the card holds no more than the lead before it (and never so early that
        // the silence before a run's first frame would overfill the card).
        let writeAt = max(heard, meant) - window
        if writeAt > now { return .wait(writeAt - now) }

        let error = heard - meant   // > 0: the card would play it late
        if error < -Self.stepThreshold, let reading = cardReading, reading.queuedFrames == 0, reading.writtenFrames == 0,
           framesSinceReading == 0 {
            // The card is stopped: the silence before the run's first frame, less a margin, starts
            // it; the rest is written when the card has said when it started. The write's own time
            // (converting and copying a tenth of a second of audio) is then no error.
            let silence = Int(((-error - Self.cardStartMargin) * rate).rounded())
            framesSinceReading += silence
            stats.framesPlayed += silence
            cardStarting = true
            return .write(written([Int32](repeating: 0, count: silence * channels)), gain: gain)
        }
        var frames = samples
        var shift = 0   // frames put before (+) or cut from (-) the packet
        if error < -Self.stepThreshold || (run.framesOut == 0 && error < 0) {
            // Early (and a run's first frame however little early): silence before it.
            shift = Int((-error * rate).rounded())
            frames = [Int32](repeating: 0, count: shift * channels) + samples
            if run.framesOut > 0 { stats.reanchors += 1 }
        } else if error > Self.stepThreshold {
            let cut = min(samples.count / channels, Int((error * rate).rounded()))
            shift = -cut
            frames = Array(samples.dropFirst(cut * channels))
            stats.reanchors += 1
            if frames.isEmpty { stats.skipped += 1 }
        } else if !correctsDrift || (cardClock?.estimate?.span ?? 0) < Self.cardLineAge {
            // `off`: the card drifts freely until it is a jump away. A line through less than a second of readings is mostly its own noise: the
            // card cannot have drifted far yet (0.5 ms at 500 ppm), so nothing is corrected.
        } else if abs(error) > max(Self.cardTolerance, 3 * (cardClock?.estimate?.leaveTimeUncertainty ?? 0),
                                   timed != nil ? timeline?.uncertainty ?? 0 : 0)
                    || (run.correcting && abs(error) > Self.cardSettled) {
            frames = corrected(samples, at: key, by: error > 0 ? -1 : 1)
            if error > 0 { stats.framesRemoved += 1 } else { stats.framesInserted += 1 }
            run.correcting = true
        } else if let estimate = cardClock?.estimate,
                  abs(estimate.ppm) >= max(Self.cardFeedForwardPPM, 3 * estimate.ppmUncertainty) {
            // In tolerance on a card known to drift: one frame at the card's own pace, so the
            // error stays where it is rather than swinging to the tolerance and back (which would
            // leave a card running fast half a tolerance early, one running slow as late).
            run.correcting = false
            run.cardFraction += Double(samples.count / channels) * estimate.ppm * 1e-6
            if abs(run.cardFraction) >= 1 {
                let change = run.cardFraction > 0 ? 1 : -1
                frames = corrected(samples, at: key, by: change)
                if change > 0 { stats.framesInserted += 1 } else { stats.framesRemoved += 1 }
                run.cardFraction -= Double(change)
            }
        } else {
            run.correcting = false
        }
        packets[key] = nil
        run.nextTimestamp = key &+ UInt32(samples.count / channels)
        run.framesOut += frames.count / channels
        self.run = run
        framesSinceReading += frames.count / channels
        stats.framesPlayed += frames.count / channels
        if timed != nil { stats.framesOnSenderClock += frames.count / channels }
        stats.worstLatenessMilliseconds = max(stats.worstLatenessMilliseconds, (now - writeAt) * 1000)
        stats.syncError.add(error + Double(shift) / rate)
        return frames.isEmpty ? .wait(0) : .write(written(frames), gain: gain)
    }
}
