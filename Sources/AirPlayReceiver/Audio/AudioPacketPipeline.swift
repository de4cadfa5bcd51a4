import AirPlayWire

/// One realtime stream's audio packets as they arrive (RAOP, AirPlay 2 type 96): which numbers
/// went missing and are asked for again, when the sender plays again after a FLUSH, and when
/// it was last heard. A pure value each session's resources keep under a lock of their own, so
/// a packet never waits on the control connection's machine; the machine hears only of what
/// it decides on (the sender playing again, a sender gone quiet).
public struct AudioPacketPipeline: Sendable {
    /// What one packet's arrival calls for.
    public struct Arrival: Hashable, Sendable {
        /// Requests for the packets its number shows missing.
        public var resends: [RAOPResendRequest] = []
        /// The first packet after a FLUSH: the sender plays again.
        public var resumed = false
    }

    /// The number the next packet should carry; nil until the first (and after a FLUSH).
    public private(set) var expectedSequence: UInt16?
    /// Between a FLUSH and the sender's first packet after it.
    public private(set) var flushed = false
    /// The first sequence number after the FLUSH (its `RTP-Info`), when it said.
    public private(set) var resumeSequence: UInt16?
    /// FLUSHes taken (the session machine counts them alike).
    public private(set) var flushes = 0
    /// What was asked for again.
    public private(set) var resends = ResendTracker()
    /// When the sender was last heard on the stream's ports (audio, sync, timing).
    public private(set) var lastHeard: Double

    /// A stream whose sender counts as heard at `now` (its SETUP).
    public init(now: Double) { lastHeard = now }

    /// An audio packet arrived (`retransmitted`: a resend, on the control port).
    public mutating func arrived(sequence: UInt16, marker: Bool, retransmitted: Bool, now: Double) -> Arrival {
        lastHeard = max(lastHeard, now)
        var arrival = Arrival()
        if flushed, !retransmitted {
            // A packet from before the FLUSH (in flight, or resent) does not resume; the first
            // after it does (its number at or past the flush point, or marked as a first packet).
            // A stale one sets no expectation either: the flush dropped what it belongs to.
            let afterFlush = resumeSequence.map { Int16(bitPattern: sequence &- $0) >= 0 } ?? true
            guard marker || afterFlush else { return arrival }
            (flushed, resumeSequence, arrival.resumed) = (false, nil, true)
        }
        resends.arrived(sequence, retransmitted: retransmitted, now: now)
        guard !retransmitted else { return arrival }
        if let expected = expectedSequence, sequence != expected, !marker {
            let count = sequence &- expected
            if count < ResendTracker.largestGap { arrival.resends = resends.missing(from: expected, count: count, now: now) }
        }
        // Later packets move the expectation on; late or repeated ones (wrapped negative) leave it.
        if expectedSequence.map({ Int16(bitPattern: sequence &- $0) >= 0 }) ?? true { expectedSequence = sequence &+ 1 }
        return arrival
    }

    /// FLUSH: what comes next is a new run (no gap to ask for), and the sender plays again
    /// with its first packet at or after `resumeSequence`.
    public mutating func flush(resumingAt resumeSequence: UInt16?) {
        (expectedSequence, flushed, self.resumeSequence) = (nil, true, resumeSequence)
        flushes += 1
    }

    /// A sync or timing packet came: the sender is alive.
    public mutating func heard(now: Double) { lastHeard = max(lastHeard, now) }

    /// Time passed: the requests due again.
    public mutating func tick(now: Double) -> [RAOPResendRequest] { resends.due(now: now) }
}
