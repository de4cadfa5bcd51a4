import AirPlayMedia
import AirPlayWire
import CLinuxIO
import Foundation
import Synchronization

/// Packets the playout's own thread reads when it wakes (a session's audio port), so that
/// receiving them costs no thread wake-up of its own.
protocol PlayoutInput: AnyObject, Sendable {
    /// Polls readable while packets wait; the playout listens to it only while it waits for data.
    var descriptor: Int32 { get }
    /// Reads what waits, without blocking, and hands the packets to the playout's `receive`.
    func drain()
    /// Called once the playout's thread has ended.
    func close()
}

/// Puts received audio packets back in order and hands their frames to the output when the
/// sender means them to be heard.
///
/// When is "meant": with a trusted `SenderTimeline`, the frame with RTP time T plays at the
/// local time the sender's sync packets and timing answers map T to. Otherwise (no timing
/// answers, or a sender whose clocks disagree) the first packet after RECORD or FLUSH anchors
/// the schedule: T plays `bufferDelay` after that packet arrived, plus (T - anchor) / rate.
///
/// The output runs on our monotonic clock. When the sender's clock drifts from ours, single
/// frames are inserted or removed (averaged with their neighbours, so there is no click) to keep
/// the output within 2 ms of the meant time (shairport-sync's default tolerance too), once it
/// has been out of it for a whole second (a single noisy sync packet moves nothing). A jump of
/// more than 20 ms in the sender's timeline is followed at once instead. Gaps are filled with
/// silence when their time comes (and reported as lost); duplicates and packets older than what
/// already played are dropped.
///
/// One thread per playout writes the output and, with an attached `PlayoutInput`, reads the
/// audio port each time it wakes: one wake-up per packet in all, not one to receive and one to
/// write. It listens to the port only while it waits for data, and never sleeps more than
/// 50 ms, so datagrams wait in the socket for at most that long.
public final class AudioPlayout: @unchecked Sendable {
    /// What the playout measured, for logs and the benchmark.
    public struct Statistics: Hashable, Sendable {
        /// Audio packets received (including retransmissions).
        public var received = 0
        /// Duplicates and packets that came after their frames were due.
        public var dropped = 0
        /// Packets never received by the time they were due (played as silence).
        public var lost = 0
        /// Packets skipped whole because they were meant long before the output got there.
        public var skipped = 0
        /// Frames written to the output.
        public var framesPlayed = 0
        /// Frames added to follow a slower sender clock.
        public var framesInserted = 0
        /// Frames removed to follow a faster sender clock.
        public var framesRemoved = 0
        /// Times the schedule was re-anchored (a stall, or a jump in the sender's timeline).
        public var reanchors = 0
        /// Worst lateness of the output thread against the schedule, in milliseconds.
        public var worstLatenessMilliseconds = 0.0
        /// Each packet's output time (plus the output's delay) minus the time it was meant for.
        public var syncError = SyncErrorTally()
    }

    /// One stretch of contiguous playback, from the first packet after RECORD/FLUSH (or after
    /// the stream went idle) on.
    private struct Run {
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
    }

    private struct State {
        var packets: [UInt32: [Int16]] = [:]   // by RTP timestamp
        var run: Run?
        var lastArrival: Double = 0
        var gain: Double = 1
        var stats = Statistics()
        var running = true
        var flushedBefore: UInt32?
        /// Set while the output thread waits for a packet (idle or a gap): only then does an
        /// arrival need to wake it; otherwise it sleeps until the next packet is due.
        var waitingForData = true
        var input: (any PlayoutInput)?
    }

    private enum Step {
        case stop
        case idle
        case wait(Double)
        case write([Int16], gain: Double)
    }

    /// Beyond this, following the sender's clock frame by frame would take too long: step at once.
    static let stepThreshold = 0.02
    /// Within this, the output counts as in time; past it one frame per packet is added or
    /// removed until the error is back under `settled`. The error is measured against the
    /// output's ideal clock, not its jittery writes, so noise in it comes from the sender only.
    static let tolerance = 0.002
    /// Where a correction stops (22 frames).
    static let settled = 0.0005

    private let output: any PCMOutput
    private let timeline: SenderTimeline?
    /// Packets in a second: how long the output must be out of tolerance before it is corrected.
    private var confirmationPackets: Int { max(1, Int(sampleRate) / max(1, framesPerPacket)) }
    private let sampleRate: Double
    private let channels: Int
    private let framesPerPacket: Int
    private let bufferDelay: Double
    private let state = Mutex(State())
    /// An eventfd: a packet arrived while the thread waited for data, or `stop()`.
    private let wakeEvent = clinuxio_eventfd()
    private let finished = DispatchSemaphore(value: 0)
    /// The most packets kept waiting (about 6 s): every byte from the network is bounded.
    private let maximumBuffered = 800

    /// A playout to an output; without a trusted `timeline`, `bufferDelay` seconds of audio are
    /// buffered before playing.
    public init(output: any PCMOutput, timeline: SenderTimeline? = nil, sampleRate: Int, channels: Int, framesPerPacket: Int,
                bufferDelay: Double = 0.5) {
        self.output = output
        self.timeline = timeline
        self.sampleRate = Double(sampleRate)
        self.channels = channels
        self.framesPerPacket = framesPerPacket
        self.bufferDelay = bufferDelay
        let thread = Thread { [self] in
            clinuxio_name_thread("raop-playout")
            run()
            finished.signal()
        }
        thread.name = "raop-playout"
        thread.start()
    }

    private static func now() -> Double { SenderTimeline.now() }

    /// Takes decoded samples (interleaved) for the packet at an RTP timestamp.
    public func receive(timestamp: UInt32, samples: [Int16]) {
        let arrival = Self.now()
        let wakeNeeded = state.withLock { state -> Bool in
            state.stats.received += 1
            state.lastArrival = arrival
            if let flushed = state.flushedBefore {
                if Int32(bitPattern: timestamp &- flushed) < 0 {
                    state.stats.dropped += 1
                    return false
                }
                state.flushedBefore = nil
            }
            if state.run == nil {
                state.run = Run(nextTimestamp: timestamp, anchorTimestamp: timestamp, anchorTime: arrival + bufferDelay)
            }
            // Older than what already played (with wrap-around), or a duplicate: drop.
            guard let next = state.run?.nextTimestamp, Int32(bitPattern: timestamp &- next) >= 0,
                  state.packets[timestamp] == nil, state.packets.count < maximumBuffered else {
                state.stats.dropped += 1
                return false
            }
            state.packets[timestamp] = samples
            return state.waitingForData
        }
        if wakeNeeded { clinuxio_signal(wakeEvent) }
    }

    /// Lets the playout's thread read `input` each time it wakes; the playout closes it when it stops.
    func attach(_ input: any PlayoutInput) {
        let running = state.withLock { state -> Bool in
            if state.running { state.input = input }
            return state.running
        }
        if running { clinuxio_signal(wakeEvent) } else { input.close() }
    }

    /// Drops everything buffered; the next packet starts a new run (RTSP FLUSH).
    /// Packets older than `before` (the RTP-Info rtptime) that are still in flight are dropped too.
    public func flush(before rtpTime: UInt32? = nil) {
        state.withLock { state in
            state.packets = [:]
            state.run = nil
            state.flushedBefore = rtpTime
            state.waitingForData = true
        }
    }

    /// Software volume in dB: 0 is unity (samples pass untouched), -144 or less mutes.
    public func setVolume(decibels: Double) {
        let gain = decibels <= -144 ? 0 : min(1, pow(10, decibels / 20))
        state.withLock { $0.gain = gain }
    }

    /// The statistics so far.
    public var statistics: Statistics { state.withLock { $0.stats } }

    /// Stops the output thread and closes the output.
    public func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.running = false }
            return state.running
        }
        guard wasRunning else { return }
        clinuxio_signal(wakeEvent)
        finished.wait()
        output.close()
        state.withLock { state in
            defer { state.input = nil }
            return state.input
        }?.close()
    }

    deinit {
        stop()
        Glibc.close(wakeEvent)
    }

    private func run() {
        var woke = true
        while true {
            let input = state.withLock { $0.input }
            // Read what arrived since the last wake-up (nothing to read after a write).
            if woke { input?.drain() }
            // Asked outside the lock: a GStreamer sink answers through its own locks.
            let delay = output.presentationDelay
            let (step, listen) = state.withLock { state in (nextStep(&state, now: Self.now(), delay: delay), state.waitingForData) }
            let port = listen ? input?.descriptor ?? -1 : -1
            woke = true
            switch step {
            case .stop:
                return
            case .idle:
                _ = clinuxio_wait(wakeEvent, port, 100_000_000)
            case .wait(let seconds):
                _ = clinuxio_wait(wakeEvent, port, Int64(max(200_000, min(seconds * 1e9, 50_000_000))))
            case .write(let samples, let gain):
                output.write(gain == 1 ? samples : samples.map { Int16(clamping: Int((Double($0) * gain).rounded())) })
                woke = false
            }
        }
    }

    /// Decides what the output thread does now; consumes a packet only when it is written.
    private func nextStep(_ state: inout State, now: Double, delay: Double) -> Step {
        guard state.running else { return .stop }
        guard var run = state.run else {
            state.waitingForData = true
            return .idle
        }
        let key = run.nextTimestamp
        state.waitingForData = state.packets[key] == nil
        guard let samples = state.packets[key] else {
            // Missing. With nothing newer buffered the stream has not gone on (its end, or a
            // stall): wait, and after a while let the next packet start a new run.
            guard let newer = state.packets.keys.filter({ Int32(bitPattern: $0 &- key) > 0 })
                .min(by: { ($0 &- key) < ($1 &- key) }) else {
                if now - state.lastArrival > bufferDelay + 0.5 {
                    state.run = nil
                    return .idle
                }
                return .wait(0.01)
            }
            let gap = Int(newer &- key)
            if gap > Int(sampleRate) {
                // The sender jumped ahead without a FLUSH: continue there, on a fresh schedule.
                state.run = Run(nextTimestamp: newer, anchorTimestamp: newer, anchorTime: now)
                state.stats.reanchors += 1
                return .wait(0)
            }
            // A real gap: its frames become silence when their time comes.
            let frames = min(gap, framesPerPacket)
            let due = (run.outputStart ?? now) + Double(run.framesOut) / sampleRate
            if due - now > 0.0005 { return .wait(due - now) }
            state.stats.lost += 1
            run.nextTimestamp = key &+ UInt32(frames)
            run.framesOut += frames
            state.stats.framesPlayed += frames
            state.run = run
            return .write([Int16](repeating: 0, count: frames * channels), gain: state.gain)
        }

        // When this packet should be written: its meant time, less the output's own delay.
        let meant = timeline?.localTime(of: key)
            ?? run.anchorTime + Double(key &- run.anchorTimestamp) / sampleRate
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
            state.stats.reanchors += 1
        }
        state.run = run
        if due - now > 0.0005 { return .wait(due - now) }

        var frames = samples
        var cut = 0
        if error > Self.stepThreshold {
            // Meant well before the output got there (a jump in the sender's timeline): cut the
            // overdue frames, the whole packet if need be.
            cut = min(samples.count / channels, Int((error * sampleRate).rounded()))
            frames = Array(samples.dropFirst(cut * channels))
            state.stats.reanchors += 1
            if frames.isEmpty { state.stats.skipped += 1 }
        } else if abs(error) > Self.tolerance || (run.correcting && abs(error) > Self.settled) {
            // Drift: one frame more or less per packet (at most 0.28 % of a second per second),
            // once the output has been 2 ms off for a whole second, until back within half a
            // millisecond. A moment's excursion (a noisy sync packet or timing answer, which the
            // timeline smooths away) changes nothing: real drift takes seconds to build up.
            run.outOfTolerance += 1
            if run.correcting || run.outOfTolerance >= confirmationPackets {
                frames = Self.stretch(samples, channels: channels, by: error > 0 ? -1 : 1)
                if error > 0 { state.stats.framesRemoved += 1 } else { state.stats.framesInserted += 1 }
                run.correcting = true
            }
        } else {
            run.correcting = false
            run.outOfTolerance = 0
        }
        state.packets[key] = nil
        run.nextTimestamp = key &+ UInt32(samples.count / channels)
        run.framesOut += frames.count / channels
        state.run = run
        state.stats.framesPlayed += frames.count / channels
        state.stats.worstLatenessMilliseconds = max(state.stats.worstLatenessMilliseconds, (now - due) * 1000)
        state.stats.syncError.add(now - target - Double(cut) / sampleRate)
        return frames.isEmpty ? .wait(0) : .write(frames, gain: state.gain)
    }

    /// Adds (`by` = 1) or removes (`by` = -1) one frame in the middle of a packet. The frame added
    /// or the pair replaced is the average of its neighbours, so the waveform stays continuous.
    static func stretch(_ samples: [Int16], channels: Int, by change: Int) -> [Int16] {
        let frames = samples.count / channels
        guard frames >= 2, channels > 0 else { return change > 0 ? samples + samples.suffix(channels) : samples }
        let middle = frames / 2
        var average = [Int16](repeating: 0, count: channels)
        for channel in 0..<channels {
            average[channel] = Int16((Int(samples[(middle - 1) * channels + channel]) + Int(samples[middle * channels + channel])) / 2)
        }
        var out = samples
        if change > 0 {
            out.insert(contentsOf: average, at: middle * channels)
        } else {
            out.replaceSubrange((middle - 1) * channels..<(middle + 1) * channels, with: average)
        }
        return out
    }
}
