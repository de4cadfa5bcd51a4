import AirPlayMedia
import AirPlayWire
import Foundation
import Synchronization

/// Puts received audio packets back in order and hands their frames to the output when due.
///
/// The first packet after RECORD or FLUSH anchors the clock: the frame with RTP time T plays
/// `bufferDelay` after that packet arrived, plus (T - anchor) / sampleRate. Gaps are filled with
/// silence when their time comes (and reported as lost); duplicates and packets older than what
/// already played are dropped. A monotonic clock paces the output, so a file or FIFO receives
/// audio in real time, like a sound card would.
public final class AudioPlayout: @unchecked Sendable {
    /// What the playout measured, for logs and the benchmark.
    public struct Statistics: Hashable, Sendable {
        /// Audio packets received (including retransmissions).
        public var received = 0
        /// Duplicates and packets that came after their frames were due.
        public var dropped = 0
        /// Packets never received by the time they were due (played as silence).
        public var lost = 0
        /// Frames written to the output.
        public var framesPlayed = 0
        /// Worst lateness of the output thread against the schedule, in milliseconds.
        public var worstLatenessMilliseconds = 0.0
    }

    private struct State {
        var packets: [UInt32: [Int16]] = [:]   // by RTP timestamp
        var anchorTimestamp: UInt32?
        var anchorTime: Double = 0
        var nextTimestamp: UInt32 = 0
        var lastArrival: Double = 0
        var gain: Double = 1
        var stats = Statistics()
        var running = true
        var flushedBefore: UInt32?
    }

    private let output: any PCMOutput
    private let sampleRate: Double
    private let channels: Int
    private let framesPerPacket: Int
    private let bufferDelay: Double
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The most packets kept waiting (about 6 s): every byte from the network is bounded.
    private let maximumBuffered = 800

    /// A playout to an output; `bufferDelay` seconds of audio are buffered before playing.
    public init(output: any PCMOutput, sampleRate: Int, channels: Int, framesPerPacket: Int, bufferDelay: Double = 0.5) {
        self.output = output
        self.sampleRate = Double(sampleRate)
        self.channels = channels
        self.framesPerPacket = framesPerPacket
        self.bufferDelay = bufferDelay
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "raop-playout"
        thread.start()
    }

    private static func now() -> Double { ProcessInfo.processInfo.systemUptime }

    /// Takes decoded samples (interleaved) for the packet at an RTP timestamp.
    public func receive(timestamp: UInt32, samples: [Int16]) {
        let arrival = Self.now()
        state.withLock { state in
            state.stats.received += 1
            state.lastArrival = arrival
            if let flushed = state.flushedBefore {
                if Int32(bitPattern: timestamp &- flushed) < 0 {
                    state.stats.dropped += 1
                    return
                }
                state.flushedBefore = nil
            }
            if state.anchorTimestamp == nil {
                state.anchorTimestamp = timestamp
                state.anchorTime = arrival + bufferDelay
                state.nextTimestamp = timestamp
            }
            // Older than what already played (with wrap-around), or a duplicate: drop.
            if Int32(bitPattern: timestamp &- state.nextTimestamp) < 0 || state.packets[timestamp] != nil {
                state.stats.dropped += 1
                return
            }
            guard state.packets.count < maximumBuffered else {
                state.stats.dropped += 1
                return
            }
            state.packets[timestamp] = samples
        }
        wake.signal()
    }

    /// Drops everything buffered; the next packet anchors the clock again (RTSP FLUSH).
    /// Packets older than `before` (the RTP-Info rtptime) that are still in flight are dropped too.
    public func flush(before rtpTime: UInt32? = nil) {
        state.withLock { state in
            state.packets = [:]
            state.anchorTimestamp = nil
            state.flushedBefore = rtpTime
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
        wake.signal()
        finished.wait()
        output.close()
    }

    deinit { stop() }

    private func run() {
        while true {
            let step = state.withLock { state -> (due: Double, running: Bool, anchored: Bool, idle: Bool) in
                guard let anchor = state.anchorTimestamp else { return (0, state.running, false, true) }
                // Frames since the anchor; unsigned so a stream may run for the whole 32-bit range.
                let offset = Double(state.nextTimestamp &- anchor)
                // Stream ended (nothing buffered, nothing arriving): wait for the next packet.
                let idle = state.packets.isEmpty && Self.now() - state.lastArrival > bufferDelay + 0.5
                if idle { state.anchorTimestamp = nil }
                return (state.anchorTime + offset / sampleRate, state.running, true, idle)
            }
            guard step.running else { return }
            if !step.anchored || step.idle {
                _ = wake.wait(timeout: .now() + .milliseconds(100))
                continue
            }
            let wait = step.due - Self.now()
            if wait > 0 {
                _ = wake.wait(timeout: .now() + .milliseconds(Int(max(1, min(wait * 1000, 50)))))
                if step.due - Self.now() > 0.0005 { continue }
            }
            let (samples, gain) = state.withLock { state -> ([Int16], Double) in
                let lateness = (Self.now() - step.due) * 1000
                state.stats.worstLatenessMilliseconds = max(state.stats.worstLatenessMilliseconds, lateness)
                let key = state.nextTimestamp
                if let samples = state.packets.removeValue(forKey: key) {
                    state.nextTimestamp = key &+ UInt32(samples.count / max(1, channels))
                    state.stats.framesPlayed += samples.count / max(1, channels)
                    return (samples, state.gain)
                }
                // Missing when due. With nothing newer buffered the stream has simply not gone on
                // (its end, or a stall): wait instead of inventing silence.
                let key32 = key
                guard state.packets.keys.contains(where: { Int32(bitPattern: $0 &- key32) > 0 }) else { return ([], state.gain) }
                // A real gap: play silence for one packet and move on.
                state.stats.lost += 1
                state.nextTimestamp = key &+ UInt32(framesPerPacket)
                state.stats.framesPlayed += framesPerPacket
                return ([Int16](repeating: 0, count: framesPerPacket * channels), state.gain)
            }
            if samples.isEmpty {
                _ = wake.wait(timeout: .now() + .milliseconds(10))
                continue
            }
            output.write(gain == 1 ? samples : samples.map { Int16(clamping: Int((Double($0) * gain).rounded())) })
        }
    }
}
