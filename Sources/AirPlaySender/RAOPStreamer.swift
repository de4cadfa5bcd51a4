import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import Foundation
import Synchronization
import LinuxIO

/// Plays PCM to one or more RAOP receivers on one timeline: 352-frame packets paced by the
/// monotonic clock, the same RTP times and the same sync packets to every receiver, so they all
/// play frame T at the moment our clock says (each maps our clock through its timing requests).
/// The first packet after the start or a resume carries the marker bit and is preceded by a
/// sync packet flagged as the first; sync packets follow every second.
public final class RAOPStreamer: @unchecked Sendable {
    /// Frames per packet, as iTunes-class senders use.
    public static let framesPerPacket = 352
    /// The latency announced in sync packets: receivers play a frame this long after it is sent.
    public static let latencyFrames: UInt32 = 66150   // 1.5 s at 44.1 kHz
    /// The latency in seconds.
    public static let latencySeconds = Double(latencyFrames) / sampleRate
    /// The rate every realtime stream plays at (RAOP's, and AirPlay 2 realtime's as sent here).
    public static let sampleRate = 44100.0

    /// The receivers (more join while it plays: `join`).
    public var links: [ReceiverLink] { linkList.withLock { $0.playing } }
    /// The receivers playing, and those set up to join at the next packet.
    private let linkList: Mutex<(playing: [ReceiverLink], joining: [ReceiverLink])>
    /// RTP sequence number and time of the first packet (random, as RTP wants).
    public let firstSequence: UInt16
    /// RTP time of the first frame.
    public let firstTimestamp: UInt32

    private struct State {
        var pacer: RAOPPacer
        var pauseRequested = false
        var paused = false
        var stopped = false
    }

    private let state: Mutex<State>
    /// Wakes the playing thread early from its wait for the next packet: a pause, a resume, a stop.
    private let wake = WakeEvent()
    /// Wakes a `pause()` waiting for the playing thread to stop at a packet boundary.
    private let pausedEvent = WakeEvent()
    private let alac = ALACEncoder()
    /// What paces the packets (the sender's one monotonic clock).
    private let clock: any MonotonicClock

    /// A streamer to set-up links, starting at the given RTP point.
    public init(links: [ReceiverLink], firstSequence: UInt16, firstTimestamp: UInt32, clock: any MonotonicClock = RAOPClock.monotonic) {
        linkList = Mutex((links, []))
        self.clock = clock
        self.firstSequence = firstSequence
        self.firstTimestamp = firstTimestamp
        state = Mutex(State(pacer: RAOPPacer(sequence: firstSequence, timestamp: firstTimestamp, latencyFrames: Self.latencyFrames,
                                             sampleRate: Self.sampleRate, framesPerPacket: Self.framesPerPacket)))
    }

    deinit {
        wake.close()
        pausedEvent.close()
    }

    /// Waits up to `seconds` (at most `limit`), or until woken.
    private func waitOnWake(_ seconds: Double, limit: Double) {
        guard seconds > 0 else { return }
        wake.wait(timeoutNanoseconds: Int64(min(seconds, limit) * 1e9))
    }

    /// Frames sent so far.
    public var framesSent: Int { state.withLock { $0.pacer.framesSent } }

    /// The sequence number and RTP time of the next packet to send (where a resume records from).
    public var nextPoint: (sequence: UInt16, timestamp: UInt32) { state.withLock { ($0.pacer.sequence, $0.pacer.timestamp) } }

    /// The RTP time the receivers are playing now (what was sent one latency ago).
    public var playingTimestamp: UInt32 { state.withLock { $0.pacer.playingTimestamp } }

    /// Sends everything `read` returns, in real time, until it returns nothing or `stop()`.
    /// Blocks: run it on its own thread. `sent` is called after every packet. The pacing is
    /// `RAOPPacer`'s; this loop reads the clock, waits on its `WakeEvent` until the next packet
    /// is due (or a pause, resume or stop wakes it) and sends. With `startingAt` (uptime
    /// seconds) the first packet is due then, not now: a mixed group's buffered receivers were
    /// told when it is heard.
    public func play(startingAt: Double? = nil, read: () -> [Int32], sent: (Int) -> Void = { _ in }) {
        let start = startingAt ?? clock.now()
        state.withLock { $0.pacer.start(now: start) }
        waitUntil(start, limit: 5)
        while true {
            // Looked at and acknowledged under one lock: a pause taken back meanwhile is not half done.
            let step = state.withLock { state -> (stop: Bool, pause: Bool, acknowledge: Bool) in
                guard !state.stopped else { return (true, false, false) }
                guard state.pauseRequested else { return (false, false, false) }
                defer { state.paused = true }
                return (false, true, !state.paused)
            }
            if step.stop { return }
            if step.pause {
                if step.acknowledge { pausedEvent.signal() }
                // Until `resume` or `stop` wakes it; the state is looked at again either way.
                waitOnWake(1, limit: 1)
                continue
            }
            let replayed = state.withLock { $0.pacer.takeReplay() }
            let samples = replayed ?? read()
            guard !samples.isEmpty else { return }
            // Receivers that joined get their first sync before this packet, then play on with the rest.
            let joining = linkList.withLock { list in
                defer { list.playing += list.joining; list.joining = [] }
                return list.joining
            }
            if !joining.isEmpty { carryOut([state.withLock { $0.pacer.joinSync() }], to: joining) }
            let (actions, nextDue) = state.withLock { state in (state.pacer.packet(samples), state.pacer.nextDue) }
            carryOut(actions, to: links)
            sent(samples.count / 2)
            // Monotonic pacing: each packet leaves at anchor + frames / sampleRate, so nothing drifts.
            waitUntil(nextDue, limit: 1)
        }
    }

    /// Waits until `deadline` (uptime seconds), each wait at most `limit`, or until a pause or
    /// stop is asked for. A stale wake-up (from a pause that was taken back) only waits again.
    private func waitUntil(_ deadline: Double, limit: Double) {
        // Bounded: each round waits for the deadline or a wake-up, and wake-ups without a pause
        // or stop behind them are rare.
        for _ in 0..<10_000 {
            let left = deadline - clock.now()
            guard left > 0, state.withLock({ !$0.stopped && !$0.pauseRequested }) else { return }
            waitOnWake(left, limit: limit)
        }
    }

    /// Sends what the pacer asked for to `links`.
    private func carryOut(_ actions: [RAOPPacer.Action], to links: [ReceiverLink]) {
        for action in actions {
            switch action {
            case .sync(let named, let next, let first, let due):
                let sync = RAOPSync(rtpTimeNowMinusLatency: named, ntpTime: RAOPClock.ntp(atUptime: due), rtpTimeNext: next, isFirst: first)
                // On PTP the same promise as an anchor: `next`, due now, is heard one latency on.
                let ptpClock = links.lazy.compactMap(\.ptpClock).first
                let heardAt = ptpClock.map { ptpTime(atUptime: due + Self.latencySeconds, on: $0) }
                for link in links {
                    if let heardAt, link.ptpClock != nil {
                        link.sendAnchor(heard: next, at: heardAt, first: first)
                    } else {
                        link.sendSync(sync)
                    }
                }
            case .timingRequest:
                for link in links { link.sendTimingRequest() }
            case .audio(let sequence, let timestamp, let marker, let samples):
                send(samples, sequence: sequence, timestamp: timestamp, marker: marker, to: links)
            }
        }
    }

    /// A set-up receiver joins at the next packet: it gets a first sync (or 0xD7 anchor) for
    /// that packet, then every packet and sync as the others do, on the same timeline.
    public func join(_ link: ReceiverLink) {
        linkList.withLock { $0.joining.append(link) }
    }

    /// Encodes once per codec in use, then sends to every receiver (each encrypts with its key).
    private func send(_ samples: [Int32], sequence: UInt16, timestamp: UInt32, marker: Bool, to links: [ReceiverLink]) {
        var pcm: [UInt8]?, compressed: [UInt8]?
        for link in links {
            let payload: [UInt8]
            switch link.codec {
            case .alac:
                if compressed == nil { compressed = alac.encode(samples) }
                payload = compressed!
            case .pcm:
                if pcm == nil { pcm = Self.bigEndian(samples) }
                payload = pcm!
            }
            link.sendAudio(sequence: sequence, timestamp: timestamp, marker: marker, payload: payload)
        }
    }

    /// L16 on the wire: big-endian samples.
    static func bigEndian(_ samples: [Int32]) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: samples.count * 2)
        for (index, sample) in samples.enumerated() {
            payload[2 * index] = UInt8(truncatingIfNeeded: UInt16(truncatingIfNeeded: sample) >> 8)
            payload[2 * index + 1] = UInt8(truncatingIfNeeded: sample)
        }
        return payload
    }

    /// Stops sending after the current packet and returns the RTP point to FLUSH to (the next
    /// sequence number and RTP time), or nil when the stream has already ended or the playing
    /// thread did not come to a packet boundary within 2 s (its source blocked).
    public func pause() -> (sequence: UInt16, timestamp: UInt32)? {
        let already = state.withLock { state -> Bool in
            defer { state.pauseRequested = true }
            return state.pauseRequested || state.stopped
        }
        guard !already else { return nil }
        wake.signal()
        // The playing thread stops at its next packet boundary (at once when it was waiting).
        let deadline = clock.now() + 2
        while clock.now() < deadline {
            if let point = state.withLock({ $0.paused ? ($0.pacer.sequence, $0.pacer.timestamp) : nil }) { return point }
            pausedEvent.wait(timeoutNanoseconds: Int64(max(0.001, deadline - clock.now()) * 1e9))
        }
        // No boundary came: take the request back, unless it landed meanwhile.
        return state.withLock { state in
            if state.paused { return (state.pacer.sequence, state.pacer.timestamp) }
            state.pauseRequested = false
            return nil
        }
    }

    /// Goes on after a pause from the RTP point after the flush, on a fresh schedule starting
    /// now, with the audio that was sent but not yet heard when the pause came (the FLUSH threw
    /// it away at the receivers): the listener resumes where they paused. After a skip to
    /// another item `replayUnheard` is false: what was not heard belongs to the old one.
    /// Returns when the new schedule starts (uptime seconds; the first frame sent again is due
    /// then and heard one latency on), or nil when it was not paused.
    @discardableResult
    public func resume(replayUnheard: Bool = true) -> Double? {
        let now = clock.now()
        let wasPaused = state.withLock { state -> Bool in
            guard state.paused else { return false }
            state.pacer.resume(now: now, replayUnheard: replayUnheard)
            state.paused = false
            state.pauseRequested = false
            return true
        }
        if wasPaused { wake.signal() }
        return wasPaused ? now : nil
    }

    /// The PTP timeline's time (nanoseconds on `ptpClock`) at uptime `uptime` (seconds) on this clock.
    func ptpTime(atUptime uptime: Double, on ptpClock: PTPGrandmaster) -> Int64 {
        ptpClock.now() + Int64((uptime - clock.now()) * 1e9)
    }

    /// True while paused.
    public var isPaused: Bool { state.withLock { $0.paused } }

    /// Ends `play` at the next packet boundary (also while paused, or waiting to start).
    public func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }
}
