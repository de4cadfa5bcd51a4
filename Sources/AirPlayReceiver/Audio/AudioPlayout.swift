import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import FoundationEssentials
import Dispatch
import Glibc
import LinuxIO
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
/// An output that takes frames early (`PCMOutput.writeAhead`, a file or FIFO) gets each packet
/// that is due within that time in the same wake-up as the one before it.
///
/// One thread per playout writes the output and, with an attached `PlayoutInput`, reads the
/// audio port before each sleep, after whatever was due is written: one wake-up per write in
/// all, not one to receive and one to write. A write never waits for a packet to be decoded,
/// neither its own room's nor (the thread yields the processor between the two) another's.
/// The thread sleeps until a time on the clock, listens to the port only while it waits for
/// data, and never sleeps more than 50 ms, so datagrams wait in the socket at most that long.
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
        /// Of those, the frames of packets placed by the sender's clock (its syncs, or its PTP
        /// anchors), not by their arrival: the session says which clock timed most of it.
        public var framesOnSenderClock = 0
        /// Frames added to follow a slower sender clock.
        public var framesInserted = 0
        /// Frames removed to follow a faster sender clock.
        public var framesRemoved = 0
        /// Times the schedule was re-anchored (a stall, or a jump in the sender's timeline).
        public var reanchors = 0
        /// Worst lateness of the output thread against the schedule, in milliseconds.
        public var worstLatenessMilliseconds = 0.0
        /// Each packet's output time (plus the output's delay) minus the time it was meant for;
        /// on a sound card, the moment the card says it leaves it.
        public var syncError = SyncErrorTally()
        /// The sound card's own clock, when the output has one (nil for a file or FIFO).
        public var output: OutputFigures?
    }

    /// What a sound card's readings say: how fast its crystal runs, how much it holds.
    public struct OutputFigures: Hashable, Sendable {
        /// The card's rate off nominal, in parts per million (nil until its readings tell).
        public var ratePPM: Double?
        /// The uncertainty of `ratePPM` (one standard deviation).
        public var rateUncertaintyPPM: Double?
        /// Milliseconds of audio the card held at its last reading (what is written now is
        /// heard that much later).
        public var delayMilliseconds: Double
        /// Times the card stopped and started again (underruns, reopens).
        public var restarts: Int
    }

    private struct Locked {
        var schedule: PlayoutSchedule
        var running = true
        var input: (any PlayoutInput)?
    }

    private let output: any PCMOutput
    private let maximumSample: Int32
    private let state: Mutex<Locked>
    /// An eventfd: a packet arrived while the thread waited for data, or `stop()`.
    private let wakeEvent = WakeEvent()
    private let finished = DispatchSemaphore(value: 0)

    /// A playout of audio in `format` to an output; without a trusted `timeline`, `bufferDelay`
    /// seconds of audio are buffered before playing. Drift is followed as `correction` says.
    public init(output: any PCMOutput, timeline: (any PlayoutTimeline)? = nil, format: PCMFormat, framesPerPacket: Int,
                bufferDelay: Double = 0.5, correction: DriftCorrection = .stuff) {
        self.output = output
        maximumSample = format.maximumSample
        state = Mutex(Locked(schedule: PlayoutSchedule(timeline: timeline, sampleRate: format.sampleRate, channels: format.channels,
                                                       framesPerPacket: framesPerPacket, bufferDelay: bufferDelay,
                                                       correction: correction, maximumSample: format.maximumSample)))
        DedicatedThread.start(name: "raop-playout") { [self] in
            run()
            finished.signal()
        }
    }

    private static func now() -> Double { SenderTimeline.now() }

    /// Takes decoded samples (interleaved) for the packet at an RTP timestamp.
    public func receive(timestamp: UInt32, samples: [Int32]) {
        let arrival = Self.now()
        let wakeNeeded = state.withLock { $0.schedule.receive(timestamp: timestamp, samples: samples, arrival: arrival) }
        if wakeNeeded { wakeEvent.signal() }
    }

    /// Lets the playout's thread read `input` each time it wakes; the playout closes it when it stops.
    func attach(_ input: any PlayoutInput) {
        let running = state.withLock { state -> Bool in
            if state.running { state.input = input }
            return state.running
        }
        if running { wakeEvent.signal() } else { input.close() }
    }

    /// Drops everything buffered; the next packet starts a new run (RTSP FLUSH).
    /// Packets older than `before` (the RTP-Info rtptime) that are still in flight are dropped too.
    public func flush(before rtpTime: UInt32? = nil) {
        state.withLock { $0.schedule.flush(before: rtpTime) }
    }

    /// A buffered stream's new anchor: the buffered packets from `rtpTime` on play on the new
    /// schedule, older ones are dropped.
    public func restart(at rtpTime: UInt32) {
        state.withLock { $0.schedule.restart(at: rtpTime) }
        wakeEvent.signal()
    }

    /// A buffered stream's deferred flush: packets from `from` up to `until` (RTP time) are dropped.
    public func discard(from: UInt32, until: UInt32) {
        state.withLock { $0.schedule.discard(from: from, until: until) }
    }

    /// Packets buffered and not yet written (a buffered stream's reader waits while it is high).
    public var bufferedPackets: Int { state.withLock { $0.schedule.bufferedPackets } }

    /// Software volume in dB: 0 is unity (samples pass untouched), -144 or less mutes.
    public func setVolume(decibels: Double) {
        state.withLock { $0.schedule.setVolume(decibels: decibels) }
    }

    /// The statistics so far.
    public var statistics: Statistics { state.withLock { $0.schedule.stats } }

    /// Seconds between a write and its first frame being heard (the output's latency).
    public var presentationDelay: Double { output.presentationDelay }

    /// Stops the output thread and closes the output.
    public func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.running = false }
            return state.running
        }
        guard wasRunning else { return }
        wakeEvent.signal()
        finished.wait()
        output.close()
        state.withLock { state in
            defer { state.input = nil }
            return state.input
        }?.close()
    }

    deinit {
        stop()
        wakeEvent.close()
    }

    private func run() {
        var drained = false   // the port was read since the last sleep
        // What is due in this wake-up, written in one call before the thread sleeps: an output
        // that takes writes early gets several packets a wake, and one write(2) costs about the
        // same for one packet as for four (the largest part of what playing a stream costs).
        var due: [Int32] = []
        while true {
            let input = state.withLock { $0.input }
            // Asked outside the lock: a GStreamer sink answers through its own locks.
            let delay = output.presentationDelay
            let writeAhead = output.writeAhead
            // A sound card's clock, read once a wake-up: the schedule then follows its crystal.
            if let reading = output.clockReading() {
                state.withLock { $0.schedule.observe(card: reading) }
            }
            var step: PlayoutSchedule.Step?, listen = false, received = 0, asked = 0.0
            repeat {
                asked = Self.now()
                (step, listen, received) = state.withLock { state -> (PlayoutSchedule.Step?, Bool, Int) in
                    guard state.running else { return (nil, false, 0) }
                    let step = state.schedule.next(now: asked, delay: delay, writeAhead: writeAhead)
                    return (step, state.schedule.waitingForData, state.schedule.stats.received)
                }
                // What is due goes out before the port is read: decrypting and decoding packets
                // that play seconds from now made a realtime room write up to a millisecond late.
                if case .write(let samples, let gain) = step {
                    due.append(contentsOf: gain == 1 ? samples : scaled(samples, by: gain))
                }
            } while step?.isWrite == true
            if !due.isEmpty {
                output.write(due)
                due.removeAll(keepingCapacity: true)
                // Rooms in step wake at the same instant. On a box with fewer cores than
                // rooms, one room decoding the packets that came meanwhile kept another from
                // its write for a millisecond or more (three zones on two cores: 1.3 ms in
                // stretches, 0.1 ms with this): let any room woken with us write first.
                sched_yield()
            }
            // When to wake, on the clock: the write, the yield and the read below take time
            // (a yield, milliseconds on a busy box), which a sleep of the length asked would add.
            let wakeAt: Double
            switch step {
            case nil, .write:   // stopped (the loop above ends on any step but a write)
                return
            case .idle:
                wakeAt = asked + 0.1
            case .wait(let seconds):
                wakeAt = asked + min(seconds, 0.05)
            }
            // About to sleep: read what arrived meanwhile (once per sleep), and decide again if
            // anything came (it may be the packet waited for, or change how long to sleep).
            if let input, !drained {
                drained = true
                input.drain()
                if state.withLock({ $0.schedule.stats.received }) != received { continue }
            }
            let remaining = wakeAt - Self.now()
            if remaining <= 0 { continue }
            wakeEvent.wait(input: listen ? input?.descriptor ?? -1 : -1, timeoutNanoseconds: Int64(remaining * 1e9))
            drained = false
        }
    }

    /// Samples scaled by a software gain, clamped to the stream's depth.
    private func scaled(_ samples: [Int32], by gain: Double) -> [Int32] {
        let limit = Double(maximumSample)
        return samples.map { Int32(max(-limit - 1, min(limit, (Double($0) * gain).rounded()))) }
    }
}
