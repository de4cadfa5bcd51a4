import AirPlayWire

/// When each packet of a RAOP stream leaves and what goes with it, as a pure machine: it never
/// reads a clock or sleeps. `RAOPStreamer` feeds it the samples and the time of a (re)start,
/// carries out what `packet(_:)` returns, and sleeps until `nextDue`.
///
/// Packets hold 352 frames and leave on a schedule (`anchorUptime + frames / rate`), so nothing
/// drifts however late a wake-up is. The first packet of a run carries the marker bit and a sync
/// flagged as the first goes before it; syncs follow every second of audio, timing requests
/// every two. What left within the last latency has not been heard yet: a resume sends it again.
package struct RAOPPacer: Sendable {
    /// What to send, in this order.
    package enum Action: Equatable, Sendable {
        /// A sync packet: RTP time `rtpTimeNowMinusLatency` is heard 11025 frames after `at`
        /// (uptime seconds, the due time of the packet with `rtpTimeNext`).
        case sync(rtpTimeNowMinusLatency: UInt32, rtpTimeNext: UInt32, first: Bool, at: Double)
        /// A timing request to every receiver.
        case timingRequest
        /// One audio packet.
        case audio(sequence: UInt16, timestamp: UInt32, marker: Bool, samples: [Int32])
    }

    /// Frames a receiver holds before playing (the latency the syncs announce).
    let latencyFrames: UInt32
    /// Frames per second.
    let sampleRate: Double
    /// Packets within one latency: sent, but not yet heard.
    let unheardPackets: Int

    /// The next packet's sequence number and RTP time.
    private(set) var sequence: UInt16
    private(set) var timestamp: UInt32
    /// Frames sent and not taken back by a resume.
    private(set) var framesSent = 0
    /// The schedule: `anchorTimestamp` leaves at `anchorUptime`.
    private var anchorUptime = 0.0
    private var anchorTimestamp: UInt32
    private var startOfRun = true
    private var lastSync = -Double.infinity
    private var lastTiming = -Double.infinity
    /// The packets of the last latency, oldest first.
    private var unheard: [[Int32]] = []
    /// What to send again, before reading on.
    private var replay: [[Int32]] = []

    /// A stream whose first packet has `sequence` and `timestamp`.
    package init(sequence: UInt16, timestamp: UInt32, latencyFrames: UInt32, sampleRate: Double = 44100, framesPerPacket: Int = 352) {
        self.sequence = sequence
        self.timestamp = timestamp
        anchorTimestamp = timestamp
        self.latencyFrames = latencyFrames
        self.sampleRate = sampleRate
        unheardPackets = Int(latencyFrames) / framesPerPacket
    }

    /// The RTP time the receivers are playing now (what left one latency ago).
    var playingTimestamp: UInt32 { timestamp &- latencyFrames }

    /// When the next packet is due (uptime seconds).
    package var nextDue: Double { anchorUptime + Double(timestamp &- anchorTimestamp) / sampleRate }

    /// The first packet is due `now`.
    package mutating func start(now: Double) {
        anchorUptime = now
    }

    /// The next packet to send again after a resume, if any (sent before anything new is read).
    package mutating func takeReplay() -> [Int32]? {
        replay.isEmpty ? nil : replay.removeFirst()
    }

    /// Sends `samples` (interleaved stereo) as the next packet: a sync first when a second has
    /// passed or a run starts, a timing request every two seconds, then the packet.
    package mutating func packet(_ samples: [Int32]) -> [Action] {
        let due = nextDue, first = startOfRun
        var actions: [Action] = []
        if due - lastSync >= 1 || first {
            lastSync = due
            // Flags 7, as iTunes and AirPort-era receivers expect: the frame named is heard
            // 11025 frames after the sync's time, so it names the frame one latency less that
            // before the one being sent (shairport-sync, AirPort Express and airplayd alike).
            actions.append(.sync(rtpTimeNowMinusLatency: timestamp &- (latencyFrames - RAOPSync.fixedLatencyFrames),
                                 rtpTimeNext: timestamp, first: first, at: due))
        }
        if due - lastTiming >= 2 {
            lastTiming = due
            actions.append(.timingRequest)
        }
        actions.append(.audio(sequence: sequence, timestamp: timestamp, marker: first, samples: samples))
        let frames = samples.count / 2
        sequence &+= 1
        timestamp &+= UInt32(frames)
        framesSent += frames
        startOfRun = false
        unheard.append(samples)
        if unheard.count > unheardPackets { unheard.removeFirst() }
        return actions
    }

    /// The sync a receiver that joins gets before the next packet, its first: what the next
    /// packet's own sync would say, flagged as the first of a run.
    package func joinSync() -> Action {
        .sync(rtpTimeNowMinusLatency: timestamp &- (latencyFrames - RAOPSync.fixedLatencyFrames), rtpTimeNext: timestamp,
              first: true, at: nextDue)
    }

    /// Goes on after a pause (and the FLUSH the receivers got to the current point) on a fresh
    /// schedule from `now`, sending again first what they had not heard, unless the pause was a
    /// skip to another item (`replayUnheard` false: what was not heard belongs to the old one).
    package mutating func resume(now: Double, replayUnheard: Bool) {
        replay = replayUnheard ? unheard + replay : []
        framesSent -= unheard.reduce(0) { $0 + $1.count / 2 }
        unheard = []
        startOfRun = true
        lastSync = -.infinity
        anchorUptime = now
        anchorTimestamp = timestamp
    }
}
