import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import FoundationEssentials
import Glibc

/// When each received packet is written: the playout's decisions as a value, with the time
/// passed in, so they are tested without a thread, an output or a clock (`PlayoutScheduleTests`).
/// `AudioPlayout` runs it on its thread; see there for the rules (the sender's timeline or the
/// arrival schedule, drift correction, gaps, jumps, flushes).
struct PlayoutSchedule {
    /// One stretch of contiguous playback, from the first packet after RECORD/FLUSH (or after
    /// the stream went idle) on.
    struct Run {
        var nextTimestamp: UInt32
        /// Arrival schedule: `anchorTimestamp` plays at `anchorTime`.
        var anchorTimestamp: UInt32
        var anchorTime: Double
        /// The output's own clock: output frame k is written at `outputStart + k / rate`.
        var outputStart: Double?
        var framesOut = 0
        /// Adding or removing frames until the output is back within `settled`.
        var correcting = false
        /// Packets in a row beyond `tolerance` while not correcting.
        var outOfTolerance = 0
        /// The output's delay, taken when the run starts and kept: a sink that learns its
        /// latency later must not move the schedule mid-run (that would cut audio).
        var delay: Double?
        /// The last packet was timed by the sender's clock (not the arrival schedule).
        var followsTimeline = false
        /// On a sound card: frames owed to its known rate, one inserted or removed per whole.
        var cardFraction = 0.0
    }


    /// What the output thread does now.
    enum Step: Equatable {
        /// Nothing to play: wait for a packet.
        case idle
        /// Wait this many seconds (or for a packet, while `waitingForData`).
        case wait(Double)
        /// Write these samples, scaled by `gain`.
        case write([Int32], gain: Double)

        /// Whether this step writes (the playout then asks for the next before it sleeps).
        var isWrite: Bool { if case .write = self { true } else { false } }
    }


    /// Beyond this, following the sender's clock frame by frame would take too long: step at once.
    static let stepThreshold = 0.02
    /// Within this, the output counts as in time; past it one frame per packet is added or
    /// removed until the error is back under `settled`. The error is measured against the
    /// output's ideal clock, not its jittery writes, so noise in it comes from the sender only.
    static let tolerance = 0.002
    /// Where a correction stops (22 frames).
    static let settled = 0.0005

    /// How many packets an output taking writes `writeAhead` seconds early gets in one wake-up:
    /// the first on time and those due within the write-ahead after it (at most 8).
    static func packetsPerWrite(writeAhead: Double, packetSeconds: Double) -> Int {
        guard writeAhead > 0, packetSeconds > 0 else { return 1 }
        return 1 + Int(min(7, (writeAhead / packetSeconds).rounded(.down)))
    }

    /// The most packets kept waiting (about 6 s): every byte from the network is bounded.
    static let maximumBuffered = 800

    let timeline: (any PlayoutTimeline)?
    let sampleRate: Double
    let channels: Int
    let framesPerPacket: Int
    let bufferDelay: Double
    /// How drift is corrected: stuffed frames, a resampled packet, or not at all.
    let correction: DriftCorrection
    /// The largest sample value of the stream's depth (a resampled packet is clamped to it).
    let maximumSample: Int32
    /// Packets in a second: how long the output must be out of tolerance before it is corrected.
    private var confirmationPackets: Int { max(1, Int(sampleRate) / max(1, framesPerPacket)) }

    var packets: [UInt32: [Int32]] = [:]   // by RTP timestamp
    var run: Run?
    var lastArrival: Double = 0
    var gain: Double = 1
    var stats = AudioPlayout.Statistics()
    private var flushedBefore: UInt32?
    /// Ranges of RTP time dropped on arrival (deferred flushes of a buffered stream).
    private var discarded: [(from: UInt32, until: UInt32)] = []
    /// The output's own clock, once it reported one (`observe(card:)`), and the frames handed
    /// out for writing since its last reading (written after it was read).
    var cardClock: CardClock?
    var cardReading: OutputClockReading?
    var framesSinceReading = 0
    /// How much less than the lead this wake-up leaves queued, and the state it is drawn from.
    var cardDither = 0.0
    /// A run's first write just started the card: nothing more until it is read again.
    var cardStarting = false
    var ditherState: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// Set while the output thread waits for a packet (idle or a gap): only then does an
    /// arrival need to wake it; otherwise it sleeps until the next packet is due.
    var waitingForData = true
    /// The last packet's worth of frames handed out (only while resampling: a resampled packet
    /// joins what was heard before it).
    var recentlyWritten: [Int32] = []

    /// A schedule for a stream's format; without a trusted `timeline`, packets play
    /// `bufferDelay` seconds after the first of a run arrived.
    init(timeline: (any PlayoutTimeline)?, sampleRate: Int, channels: Int, framesPerPacket: Int, bufferDelay: Double,
         correction: DriftCorrection = .stuff, maximumSample: Int32 = 32767) {
        self.timeline = timeline
        self.sampleRate = Double(sampleRate)
        self.channels = channels
        self.framesPerPacket = framesPerPacket
        self.bufferDelay = bufferDelay
        self.correction = correction
        self.maximumSample = maximumSample
    }

    /// Whether drift is corrected gradually at all (`audio_drift_correction` not `off`).
    var correctsDrift: Bool { if case .off = correction { false } else { true } }

    /// Takes a packet's samples that arrived at `arrival`; true when the output thread waits
    /// for data and must be woken.
    mutating func receive(timestamp: UInt32, samples: [Int32], arrival: Double) -> Bool {
        stats.received += 1
        lastArrival = arrival
        if let flushed = flushedBefore {
            if Int32(bitPattern: timestamp &- flushed) < 0 {
                stats.dropped += 1
                return false
            }
            flushedBefore = nil
        }
        if discarded.contains(where: { (timestamp &- $0.from) < ($0.until &- $0.from) }) {
            stats.dropped += 1
            return false
        }
        if run == nil {
            run = Run(nextTimestamp: timestamp, anchorTimestamp: timestamp, anchorTime: arrival + bufferDelay)
        }
        // Older than what already played (with wrap-around), or a duplicate: drop.
        guard let next = run?.nextTimestamp, Int32(bitPattern: timestamp &- next) >= 0,
              packets[timestamp] == nil, packets.count < Self.maximumBuffered else {
            stats.dropped += 1
            return false
        }
        packets[timestamp] = samples
        return waitingForData
    }

    /// Drops everything buffered; the next packet starts a new run. Packets older than
    /// `before` that are still in flight are dropped too.
    mutating func flush(before rtpTime: UInt32?) {
        // Frames already written cannot be taken back. A sender that resumes from its pause
        // point sends again what it thinks was not heard; what this output already has (a
        // packet or two, more with write-ahead) is dropped rather than heard twice.
        var limit = rtpTime
        if let rtpTime, let run, run.framesOut > 0 {
            let ahead = run.nextTimestamp &- rtpTime
            if Int32(bitPattern: ahead) > 0, ahead < UInt32(sampleRate) { limit = run.nextTimestamp }
        }
        packets = [:]
        run = nil
        flushedBefore = limit
        waitingForData = true
    }

    /// A new anchor (a buffered stream's SETRATEANCHORTIME): what is buffered from `rtpTime` on
    /// is kept and plays on the new schedule; older packets are dropped.
    mutating func restart(at rtpTime: UInt32) {
        // A resume anchors where the sender believes playing stopped; the output got a little
        // further (the pause took a round trip, and a raw output writes up to 30 ms early).
        // What it already wrote is not written again: playing goes on from there, on time.
        var start = rtpTime
        if let run, run.framesOut > 0 {
            let ahead = run.nextTimestamp &- rtpTime
            if Int32(bitPattern: ahead) > 0, ahead < UInt32(sampleRate) { start = run.nextTimestamp }
        }
        packets = packets.filter { Int32(bitPattern: $0.key &- start) >= 0 }
        run = Run(nextTimestamp: start, anchorTimestamp: start, anchorTime: 0)
        flushedBefore = nil
        waitingForData = packets[start] == nil
    }

    /// Drops the packets from `from` up to (not including) `until` that are buffered, and the
    /// ones that arrive later (a buffered stream's deferred FLUSHBUFFERED).
    mutating func discard(from: UInt32, until: UInt32) {
        let span = until &- from
        packets = packets.filter { ($0.key &- from) >= span }
        discarded.append((from, until))
        if discarded.count > 10 { discarded.removeFirst() }
    }

    /// Packets buffered and not yet written.
    var bufferedPackets: Int { packets.count }

    /// Software volume in dB: 0 is unity, -144 or less mutes.
    mutating func setVolume(decibels: Double) {
        gain = decibels <= -144 ? 0 : min(1, pow(10, decibels / 20))
    }

    /// Decides what the output thread does at `now`, for an output `delay` seconds behind its
    /// writes that takes frames up to `writeAhead` seconds before their time; consumes a packet
    /// only when it is written. After `observe(card:)` the output's own clock decides instead
    /// (`nextOnCard`), and `writeAhead` is how much audio the card is kept holding.
    mutating func next(now: Double, delay: Double, writeAhead: Double = 0) -> Step {
        if cardReading != nil { return nextOnCard(now: now, lead: writeAhead) }
        guard var run = self.run else {
            self.waitingForData = true
            return .idle
        }
        let key = run.nextTimestamp
        // A buffered stream waits, its packets kept, until an anchor says when they play.
        if let timeline, timeline.holdsWithoutTime, timeline.localTime(of: key) == nil {
            self.waitingForData = false
            return .wait(0.01)
        }
        // Within half a millisecond is on time. An output with write-ahead takes packets in
        // groups: the first on time, the others (due within the write-ahead) with it. Groups are
        // fixed by RTP time, not by when this run started, so every receiver of a sender's
        // stream writes the same frames at the same moment (multi-room stays in step).
        let group = UInt32(Self.packetsPerWrite(writeAhead: writeAhead, packetSeconds: Double(framesPerPacket) / sampleRate))
        let firstOfGroup = (key / UInt32(max(1, framesPerPacket))) % group == 0
        let early = firstOfGroup ? 0.0005 : max(0.0005, writeAhead)
        self.waitingForData = self.packets[key] == nil
        guard let samples = self.packets[key] else {
            let frames: Int
            switch missing(key, now: now, jumpAnchor: now) {
            case .step(let step): return step
            case .silence(let count): frames = count   // a real gap: silence when its time comes
            }
            let due = (run.outputStart ?? now) + Double(run.framesOut) / sampleRate
            if due - now > early { return .wait(due - now) }
            self.stats.lost += 1
            run.nextTimestamp = key &+ UInt32(frames)
            run.framesOut += frames
            self.stats.framesPlayed += frames
            self.run = run
            return .write(written([Int32](repeating: 0, count: frames * channels)), gain: self.gain)
        }

        // When this packet should be written: its meant time, less the output's own delay.
        let timed = timeline?.localTime(of: key)
        if timed != nil {
            run.followsTimeline = true
        } else if run.followsTimeline, let start = run.outputStart, run.framesOut > 0 {
            // The sender's clock was just lost (its syncs contradict its timing): there is
            // nothing left to correct towards, so playing goes on from where the output is,
            // neither stepping back to the arrival schedule nor finishing a correction.
            run.anchorTimestamp = key
            run.anchorTime = start + Double(run.framesOut) / sampleRate + (run.delay ?? delay)
            (run.followsTimeline, run.correcting, run.outOfTolerance) = (false, false, 0)
        }
        let meant = timed ?? run.anchorTime + Double(key &- run.anchorTimestamp) / sampleRate
        if run.delay == nil { run.delay = delay }
        let target = meant - (run.delay ?? 0)
        // Until the first frame is out, the output's clock follows the timeline freely: a sync
        // packet that arrives during the buffering moves the start, not the audio.
        if run.outputStart == nil || run.framesOut == 0 { run.outputStart = target - Double(run.framesOut) / sampleRate }
        var due = run.outputStart! + Double(run.framesOut) / sampleRate
        // > 0: the output's clock is behind the sender's timeline for this packet.
        let error = due - target
        if error < -Self.stepThreshold {
            // Meant well after the output's clock: the output pauses until then.
            run.outputStart = target - Double(run.framesOut) / sampleRate
            due = target
            self.stats.reanchors += 1
        }
        self.run = run
        if due - now > early { return .wait(due - now) }

        var frames = samples
        var cut = 0
        if error > Self.stepThreshold {
            // Meant well before the output got there (a jump in the sender's timeline): cut the
            // overdue frames, the whole packet if need be.
            cut = min(samples.count / channels, Int((error * sampleRate).rounded()))
            frames = Array(samples.dropFirst(cut * channels))
            self.stats.reanchors += 1
            if frames.isEmpty { self.stats.skipped += 1 }
        } else if correctsDrift, abs(error) > max(Self.tolerance, timed != nil ? timeline?.uncertainty ?? 0 : 0)
                    || (run.correcting && abs(error) > Self.settled) {
            // Drift: one frame more or less per packet (at most 0.28 % of a second per second),
            // once the output has been 2 ms off for a whole second, until back within half a
            // millisecond. A moment's excursion (a noisy sync packet or timing answer, which the
            // timeline smooths away) changes nothing: real drift takes seconds to build up.
            run.outOfTolerance += 1
            if run.correcting || run.outOfTolerance >= confirmationPackets {
                frames = corrected(samples, at: key, by: error > 0 ? -1 : 1)
                if error > 0 { self.stats.framesRemoved += 1 } else { self.stats.framesInserted += 1 }
                run.correcting = true
            }
        } else {
            run.correcting = false
            run.outOfTolerance = 0
        }
        self.packets[key] = nil
        run.nextTimestamp = key &+ UInt32(samples.count / channels)
        run.framesOut += frames.count / channels
        self.run = run
        self.stats.framesPlayed += frames.count / channels
        if timed != nil { self.stats.framesOnSenderClock += frames.count / channels }
        self.stats.worstLatenessMilliseconds = max(self.stats.worstLatenessMilliseconds, (now - due) * 1000)
        // Written early, a frame is still heard at its place in the output's stream.
        let outputTime = writeAhead > 0 ? max(now, due) : now
        self.stats.syncError.add(outputTime - target - Double(cut) / sampleRate)
        return frames.isEmpty ? .wait(0) : .write(written(frames), gain: self.gain)
    }

    /// What a missing packet calls for.
    enum Missing {
        /// Nothing to write now: this step.
        case step(Step)
        /// A gap: this many frames of silence in its place when their time comes.
        case silence(frames: Int)
    }

    /// Packet `key` is not here. With nothing newer buffered the stream has not gone on (its
    /// end, or a stall): wait, and after a while let the next packet start a new run. A packet
    /// more than a second ahead is the sender jumping without a FLUSH: a fresh run starts there,
    /// anchored at `jumpAnchor`. Otherwise the gap is silence.
    mutating func missing(_ key: UInt32, now: Double, jumpAnchor: Double) -> Missing {
        guard let newer = packets.keys.filter({ Int32(bitPattern: $0 &- key) > 0 }).min(by: { ($0 &- key) < ($1 &- key) }) else {
            if now - lastArrival > bufferDelay + 0.5 {
                run = nil
                return .step(.idle)
            }
            return .step(.wait(0.01))
        }
        let gap = Int(newer &- key)
        if gap > Int(sampleRate) {
            run = Run(nextTimestamp: newer, anchorTimestamp: newer, anchorTime: jumpAnchor)
            stats.reanchors += 1
            return .step(.wait(0))
        }
        return .silence(frames: min(gap, framesPerPacket))
    }

    /// Packet `key`'s samples one frame longer (`by` = 1) or shorter (-1), as `correction`
    /// says: resampled with what was heard before and the packet after as context, or stuffed
    /// (also when resampling fails).
    func corrected(_ samples: [Int32], at key: UInt32, by change: Int) -> [Int32] {
        if case .resample(let resampler) = correction {
            let frames = samples.count / channels
            let after = packets[key &+ UInt32(frames)] ?? []
            if let resampled = resampler.resample(samples, to: frames + change, before: recentlyWritten[...], after: after[...],
                                                  channels: channels, maximumSample: maximumSample) {
                return resampled
            }
        }
        return Self.stretch(samples, channels: channels, by: change)
    }

    /// `frames`, about to be handed out; while resampling, the last packet's worth is kept as
    /// the context of the next correction.
    mutating func written(_ frames: [Int32]) -> [Int32] {
        guard case .resample = correction else { return frames }
        let keep = max(1, framesPerPacket) * channels
        if frames.count >= keep {
            recentlyWritten = Array(frames.suffix(keep))
        } else {
            recentlyWritten.append(contentsOf: frames)
            if recentlyWritten.count > keep { recentlyWritten.removeFirst(recentlyWritten.count - keep) }
        }
        return frames
    }

    /// Adds (`by` = 1) or removes (`by` = -1) one frame where the packet is quietest (the two
    /// neighbouring frames of least amplitude, so a stuffed frame is least heard). The frame
    /// added, or the one that replaces the pair, is their average: the waveform stays continuous.
    static func stretch(_ samples: [Int32], channels: Int, by change: Int) -> [Int32] {
        let frames = samples.count / channels
        guard frames >= 2, channels > 0 else { return change > 0 ? samples + samples.suffix(channels) : samples }
        // The pair (quietest - 1, quietest) of least summed magnitude, over every channel.
        var quietest = 1, least = Int.max
        for index in 1..<frames {
            var loudness = 0
            for channel in 0..<channels {
                loudness += abs(Int(samples[(index - 1) * channels + channel])) + abs(Int(samples[index * channels + channel]))
            }
            if loudness < least { (quietest, least) = (index, loudness) }
        }
        var average = [Int32](repeating: 0, count: channels)
        for channel in 0..<channels {
            average[channel] = Int32((Int(samples[(quietest - 1) * channels + channel]) + Int(samples[quietest * channels + channel])) / 2)
        }
        var out = samples
        if change > 0 {
            out.insert(contentsOf: average, at: quietest * channels)
        } else {
            out.replaceSubrange((quietest - 1) * channels..<(quietest + 1) * channels, with: average)
        }
        return out
    }
}
