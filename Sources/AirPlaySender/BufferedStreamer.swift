import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import Foundation
import LinuxIO
import Synchronization

/// Plays PCM to AirPlay 2 receivers in buffered mode: one timeline on our PTP grandmaster's
/// clock. Frame `anchorTimestamp` sounds at `anchorTime` (PTP nanoseconds) on every receiver;
/// the audio is sent up to `ahead` seconds before it sounds, as fast as TCP takes it, so a
/// receiver rides out seconds of network trouble. A pause is a rate-0 anchor (the receivers keep
/// what they hold); a resume is a new anchor at the frame where playing stopped.
public final class BufferedStreamer: @unchecked Sendable {
    /// Frames read for each packet: 352 for ALAC, 1024 for AAC.
    var framesPerPacket: Int { encoder.framesPerPacket }
    /// How long after the anchor is sent the first frame sounds: every receiver must have it by then.
    public static let startDelay = 1.0
    /// How far ahead of playing the audio is sent (the receivers hold 4 s).
    public static let ahead = 3.0
    /// The stream's format (its rate paces everything; its depth is the ALAC frames').
    let format: PCMFormat
    private var sampleRate: Double { Double(format.sampleRate) }

    /// The receivers (more join while it plays).
    var links: [ReceiverLink] { sending.withLock { $0.links } }
    private let clock: PTPGrandmaster
    /// The timeline (`BufferedTimeline`: what sounds when, and what to do next).
    private let state: Mutex<BufferedTimeline>
    /// Held while a packet goes to every receiver, so a receiver joins between two packets.
    private let sending: Mutex<(links: [ReceiverLink], recent: [(sequence: UInt32, timestamp: UInt32, payload: [UInt8])], dropped: [ReceiverLink])>
    /// Packets kept for receivers that join: a little more than `ahead`.
    private var recentPackets: Int { Int((Self.ahead + 1) * sampleRate) / framesPerPacket }
    private let encoder: any BufferedEncoder
    /// Wakes the sending thread early from a wait: a resume, a stop.
    private let wake = WakeEvent()

    init(links: [ReceiverLink], clock: PTPGrandmaster, firstTimestamp: UInt32, format: PCMFormat = .cd, encoder: (any BufferedEncoder)? = nil) {
        self.format = format
        self.encoder = encoder ?? ALACBufferedEncoder(format: format)
        sending = Mutex((links, [], []))
        self.clock = clock
        state = Mutex(BufferedTimeline(firstTimestamp: firstTimestamp, sampleRate: Double(format.sampleRate), ahead: Self.ahead,
                                       timeline: clock.identity.clockIdentity))
    }

    deinit { wake.close() }

    /// The first anchor: the first frame sounds at `soundsAt` (PTP nanoseconds), by default
    /// `startDelay` from now.
    func startAnchor(soundsAt: Int64? = nil) -> RateAnchor {
        let time = soundsAt ?? clock.now() + Int64(Self.startDelay * 1e9)
        return state.withLock { $0.start(soundsAt: time) }
    }

    /// The RTP time sounding now on the receivers.
    var playingTimestamp: UInt32 {
        let now = clock.now()
        return state.withLock { $0.playingTimestamp(now: now) }
    }

    /// Frames sent so far.
    var framesSent: Int { state.withLock { $0.framesSent } }
    /// Seconds played so far.
    var secondsPlayed: Double {
        let now = clock.now()
        return state.withLock { $0.secondsPlayed(now: now) }
    }
    /// True while paused.
    var isPaused: Bool { state.withLock { $0.paused } }

    /// Sends everything `read` returns, paced `ahead` of playing, until it returns nothing or
    /// `stop()`. Blocks: run it on its own thread. Returns when the receivers have the last frame.
    func play(read: () -> [Int32]) {
        while true {
            let now = clock.now()
            switch state.withLock({ $0.step(now: now) }) {
            case .stopped:
                return
            case .paused:
                // Until `resume` or `stop` wakes it; the timeline is stepped again either way.
                wake.wait(timeoutNanoseconds: 1_000_000_000)
            case .wait(let seconds):
                // Ahead enough: wait until playing catches up (or a stop).
                wake.wait(timeoutNanoseconds: Int64(max(0, min(seconds, 1)) * 1e9))
            case .send:
                let samples = read()
                for packet in samples.isEmpty ? encoder.finish() : encoder.encode(samples) { send(packet) }
                if samples.isEmpty {
                    state.withLock { $0.ended() }
                    return
                }
            }
        }
    }

    /// Sends one packet to every receiver at the next sequence number and RTP time.
    private func send(_ packet: (payload: [UInt8], frames: Int)) {
        let (sequence, timestamp) = state.withLock { ($0.sequence, $0.timestamp) }
        let keep = recentPackets
        sending.withLock { sending in
            // A receiver whose connection broke (or stalled past its send time-out) leaves;
            // the others are not held back by it.
            let failed = sending.links.filter { !$0.sendBuffered(sequence: sequence, timestamp: timestamp, payload: packet.payload) }
            if !failed.isEmpty {
                sending.links.removeAll { link in failed.contains { $0 === link } }
                sending.dropped += failed
            }
            sending.recent.append((sequence, timestamp, packet.payload))
            if sending.recent.count > keep { sending.recent.removeFirst(sending.recent.count - keep) }
        }
        state.withLock { $0.sent(frames: packet.frames) }
    }

    /// Seconds until the last frame sent has sounded (after `play` returned).
    var secondsToEnd: Double {
        let now = clock.now()
        return state.withLock { $0.secondsToEnd(now: now) }
    }

    /// The anchor in force, for a receiver that joins: it plays on the same timeline as the others.
    func currentAnchor() -> RateAnchor {
        state.withLock { $0.anchor }
    }

    /// A set-up receiver joins (it has the current anchor): it gets the packets sent that have
    /// not sounded yet, from `margin` seconds after what sounds now, then every packet as the
    /// others do. Returns how many packets it was sent to catch up.
    func join(_ link: ReceiverLink, margin: Double = 0.3) -> Int {
        let now = clock.now()
        let from = state.withLock { $0.joinPoint(now: now, margin: margin) }
        return sending.withLock { sending in
            let missed = sending.recent.filter { Int32(bitPattern: $0.timestamp &- from) >= 0 }
            for packet in missed { link.sendBuffered(sequence: packet.sequence, timestamp: packet.timestamp, payload: packet.payload) }
            sending.links.append(link)
            return missed.count
        }
    }

    /// The receivers dropped since the last call because their data connection broke.
    func takeDropped() -> [ReceiverLink] {
        sending.withLock { sending in
            defer { sending.dropped = [] }
            return sending.dropped
        }
    }

    /// A receiver leaves (it went away, or failed): the others play on undisturbed. Returns how
    /// many receivers remain.
    @discardableResult
    func leave(_ link: ReceiverLink) -> Int {
        sending.withLock { sending in
            sending.links.removeAll { $0 === link }
            return sending.links.count
        }
    }

    /// Stops the clock where playing is now; returns the rate-0 anchor to send.
    func pause() -> RateAnchor? {
        let now = clock.now()
        return state.withLock { $0.pause(now: now) }
    }

    /// Plays on from where it paused, shortly from now; returns the anchor to send. In a mixed
    /// group: from the frame `frame` frames after the first, at `soundsAt` (the realtime
    /// receivers' resume).
    func resume(frame: Int? = nil, soundsAt: Int64? = nil) -> RateAnchor? {
        let time = soundsAt ?? clock.now() + Int64(0.3 * 1e9)
        let anchor = state.withLock { state in
            state.resume(from: frame.map { state.firstTimestamp &+ UInt32(truncatingIfNeeded: $0) }, soundsAt: time)
        }
        if anchor != nil { wake.signal() }
        return anchor
    }

    /// Ends `play` (also while paused or waiting).
    func stop() {
        state.withLock { $0.stop() }
        wake.signal()
    }
}
