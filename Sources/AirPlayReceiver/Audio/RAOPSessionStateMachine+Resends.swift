/// A packet asked for again and not come yet.
struct AwaitedPacket: Hashable, Sendable {
    /// When it was first asked for, and last.
    var firstAsked: Double
    var lastAsked: Double
    /// How many times it was asked for.
    var attempts: Int
}

/// Asking again: a resend can be lost like the packet was (Wi-Fi loses both alike). A packet
/// asked for and still missing `retryInterval` later is asked for again, up to `maximumAttempts`
/// times, while it can still be played in time (`giveUpAfter`, well inside a RAOP sender's
/// two seconds of latency); then it is left to the playout, which plays silence and counts it.
extension RAOPSessionStateMachine {
    /// How long a resend may take before it is asked for again (a round trip and a margin).
    static let retryInterval = 0.15
    /// Times one packet is asked for, the first included.
    static let maximumAttempts = 4
    /// After this long since the first request the packet would play late: it is given up.
    static let giveUpAfter = 1.0
    /// Packets awaited at once per session (a burst beyond is not tracked for asking again).
    static let maximumAwaited = 512

    /// Notes `count` packets from `first` as asked for at `now`.
    static func await(_ first: UInt16, count: UInt16, in session: inout Session, now: Double) {
        for offset in 0..<count where session.awaited.count < maximumAwaited {
            session.awaited[first &+ offset] = AwaitedPacket(firstAsked: now, lastAsked: now, attempts: 1)
        }
    }

    /// The requests due again at `now` (one per run of consecutive sequence numbers); packets
    /// too late to play, or asked for enough, are forgotten.
    mutating func resendsDue(now: Double) -> [Action] {
        guard var session = current, !session.awaited.isEmpty else { return [] }
        var due: [UInt16] = []
        for (sequence, packet) in session.awaited {
            if now - packet.firstAsked > Self.giveUpAfter || (packet.attempts >= Self.maximumAttempts && now - packet.lastAsked >= Self.retryInterval) {
                session.awaited[sequence] = nil
            } else if now - packet.lastAsked >= Self.retryInterval {
                session.awaited[sequence] = AwaitedPacket(firstAsked: packet.firstAsked, lastAsked: now, attempts: packet.attempts + 1)
                due.append(sequence)
            }
        }
        session.requestedAgain += due.count
        current = session
        // Runs of consecutive numbers, ordered from the oldest (sequence numbers wrap).
        guard let base = due.min(by: { Int16(bitPattern: $0 &- $1) < 0 }) else { return [] }
        let sorted = due.sorted { ($0 &- base) < ($1 &- base) }
        var actions: [Action] = []
        var runStart = sorted[0], runCount: UInt16 = 1
        for sequence in sorted.dropFirst() {
            if sequence == runStart &+ runCount {
                runCount += 1
            } else {
                actions.append(.requestResend(session: session.number, first: runStart, count: runCount))
                (runStart, runCount) = (sequence, 1)
            }
        }
        actions.append(.requestResend(session: session.number, first: runStart, count: runCount))
        return actions
    }
}
