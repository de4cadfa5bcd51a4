import AirPlayWire

/// A packet asked for again and not come yet.
struct AwaitedPacket: Hashable, Sendable {
    /// When it was first asked for, and last.
    var firstAsked: Double
    var lastAsked: Double
    /// How many times it was asked for.
    var attempts: Int
}

/// How long resends take to come, learnt as TCP learns its retransmission timeout (RFC 6298):
/// a smoothed round trip and its variation, sampled only from packets asked for once (a
/// packet asked for twice cannot tell which request its resend answers).
struct ResendRoundTrip: Hashable, Sendable {
    /// Smoothed round trip and mean deviation, seconds; nil before the first sample.
    private(set) var smoothed: Double?
    private(set) var deviation = 0.0

    /// A resend arrived for `packet` at `now`.
    mutating func arrived(_ packet: AwaitedPacket, now: Double) {
        guard packet.attempts == 1 else { return }
        let sample = max(0, now - packet.lastAsked)
        guard let smoothed else {
            (self.smoothed, deviation) = (sample, sample / 2)
            return
        }
        deviation = 0.75 * deviation + 0.25 * abs(smoothed - sample)
        self.smoothed = 0.875 * smoothed + 0.125 * sample
    }

    /// How long to wait for a resend before asking again: the round trip and two deviations,
    /// within `ResendTracker.retryBounds` (the upper bound until a first sample). TCP waits
    /// four deviations, as a needless resend costs it a whole window; here it costs one
    /// datagram, while waiting too long costs an attempt within the packet's deadline.
    var retryInterval: Double {
        let bounds = ResendTracker.retryBounds
        guard let smoothed else { return bounds.upperBound }
        return min(bounds.upperBound, max(bounds.lowerBound, smoothed + 2 * deviation))
    }
}

/// The packets one stream asked the sender for again (0x55) and still awaits.
///
/// A resend can be lost like the packet was (Wi-Fi loses both alike). A packet asked for and
/// still missing a round trip later (`ResendRoundTrip`) is asked for again, up to
/// `maximumAttempts` times, while it can still be played in time (`giveUpAfter`, well inside a
/// RAOP sender's two seconds of latency); then it is left to the playout, which plays silence
/// and counts it. On a link with 50 ms round trips a packet gets about ten tries in the half
/// second of buffer a sender leaves at the least; a request or resend costs one datagram.
public struct ResendTracker: Sendable {
    /// The least and most time a resend is given before it is asked for again: a LAN's round
    /// trip is a few milliseconds, but a burst of requests must not become a flood.
    static let retryBounds = 0.02...0.15
    /// Times one packet is asked for, the first included.
    static let maximumAttempts = 10
    /// After this long since the first request the packet would play late: it is given up.
    static let giveUpAfter = 1.0
    /// Packets awaited at once (a burst beyond is not tracked for asking again).
    static let maximumAwaited = 512
    /// The largest gap asked for: a longer jump is the sender starting over, not loss.
    public static let largestGap: UInt16 = 512

    private var awaited: [UInt16: AwaitedPacket] = [:]
    private(set) var roundTrip = ResendRoundTrip()
    /// Packets asked for the first time.
    public private(set) var requested = 0
    /// Requests sent again for packets still missing.
    public private(set) var requestedAgain = 0
    /// Resends that came.
    public private(set) var retransmitted = 0

    /// `count` packets from `first` are missing at `now`: the requests that ask for them.
    mutating func missing(from first: UInt16, count: UInt16, now: Double) -> [RAOPResendRequest] {
        requested += Int(count)
        for offset in 0..<count where awaited.count < Self.maximumAwaited {
            awaited[first &+ offset] = AwaitedPacket(firstAsked: now, lastAsked: now, attempts: 1)
        }
        return Self.requests(first: first, count: count)
    }

    /// A packet came, resent or late: it is no longer awaited, and a resend times the link.
    mutating func arrived(_ sequence: UInt16, retransmitted: Bool, now: Double) {
        let packet = awaited.removeValue(forKey: sequence)
        guard retransmitted else { return }
        self.retransmitted += 1
        if let packet { roundTrip.arrived(packet, now: now) }
    }

    /// The requests due again at `now` (one per run of consecutive sequence numbers); packets
    /// too late to play, or asked for enough, are forgotten.
    mutating func due(now: Double) -> [RAOPResendRequest] {
        guard !awaited.isEmpty else { return [] }
        var due: [UInt16] = []
        let retryInterval = roundTrip.retryInterval
        for (sequence, packet) in awaited {
            if now - packet.firstAsked > Self.giveUpAfter || (packet.attempts >= Self.maximumAttempts && now - packet.lastAsked >= retryInterval) {
                awaited[sequence] = nil
            } else if now - packet.lastAsked >= retryInterval {
                awaited[sequence] = AwaitedPacket(firstAsked: packet.firstAsked, lastAsked: now, attempts: packet.attempts + 1)
                due.append(sequence)
            }
        }
        requestedAgain += due.count
        // Runs of consecutive numbers, ordered from the oldest (sequence numbers wrap).
        guard let base = due.min(by: { Int16(bitPattern: $0 &- $1) < 0 }) else { return [] }
        let sorted = due.sorted { ($0 &- base) < ($1 &- base) }
        var requests: [RAOPResendRequest] = []
        var runStart = sorted[0], runCount: UInt16 = 1
        for sequence in sorted.dropFirst() {
            if sequence == runStart &+ runCount, sequence != 0 {
                runCount += 1
            } else {
                requests.append(RAOPResendRequest(first: runStart, count: runCount))
                (runStart, runCount) = (sequence, 1)
            }
        }
        requests.append(RAOPResendRequest(first: runStart, count: runCount))
        return requests
    }

    /// The requests for `count` packets from `first`: one, or two when the run crosses the
    /// sequence numbers' wrap. pyatv 0.x looks a request's packets up as `first + i` without
    /// wrapping, so it never found 65536 and up; no request of ours crosses the wrap.
    static func requests(first: UInt16, count: UInt16) -> [RAOPResendRequest] {
        // 65536 - first, as a count; wrapping arithmetic, as from 0 nothing wraps (and a
        // plain `+ 1` would trap there).
        let beforeWrap = (UInt16.max - first) &+ 1
        guard first != 0, count > beforeWrap else { return [RAOPResendRequest(first: first, count: count)] }
        return [RAOPResendRequest(first: first, count: beforeWrap), RAOPResendRequest(first: 0, count: count - beforeWrap)]
    }
}
