import AirPlayWire
import Logging

/// The last few audio sessions as they ended: who sent, what, for how long, why it ended and
/// what its packets went through. `GET /diagnostics` shows it; `airplay doctor` reads "another
/// sender took over", "the output did not start" and "the keys disagree" from it.
public struct SessionHistory: Hashable, Sendable {
    /// One ended session.
    public struct Record: Hashable, Sendable {
        /// The session number.
        public var session: Int
        /// The sender's IP address.
        public var sender: String
        /// What the sender called itself (its user agent or DACP name), if it said.
        public var senderName: String?
        /// `airplay1`, `airplay2` (realtime) or `buffered`.
        public var kind: String
        /// How long it lasted, in seconds.
        public var seconds: Double
        /// When it ended, on the session clock.
        public var endedAt: Double
        /// Why it ended, in the session machine's words.
        public var reason: String
        /// Its last figures.
        public var figures: AudioSessions.StreamFigures
    }

    /// How many ended sessions are kept.
    public static let capacity = 8
    /// Oldest first.
    public private(set) var records: [Record] = []

    /// An empty history.
    public init() {}

    /// Keeps a session that ended, forgetting the oldest beyond `capacity`.
    public mutating func append(_ record: Record) {
        records.append(record)
        if records.count > Self.capacity { records.removeFirst(records.count - Self.capacity) }
    }

    /// The records for `GET /diagnostics`, newest first, with their age at `now`.
    public func json(now: Double) -> JSONValue {
        .array(records.reversed().map { record in
            .object([
                "session": .integer(record.session), "sender": .string(record.sender), "senderName": .string(record.senderName),
                "kind": .string(record.kind), "seconds": .number((record.seconds * 10).rounded() / 10),
                "endedSecondsAgo": .number(((now - record.endedAt) * 10).rounded() / 10), "reason": .string(record.reason),
                "stream": record.figures.json,
            ])
        })
    }
}

extension AudioSessions {
    /// Notes an ended session's figures: the last figures `/now-playing` shows, and the history.
    func noteEnded(_ session: AudioSessionStateMachine.Session, resources: RAOPSessionResources, reason: String, figures: StreamFigures) {
        lastFigures.withLockedValue { $0 = figures }
        let now = now()
        let kind = Self.kindName(session, buffered: resources.buffered)
        let record = SessionHistory.Record(
            session: session.number, sender: resources.connection.remote?.ipAddress ?? "", senderName: session.senderName,
            kind: kind, seconds: max(0, now - resources.began), endedAt: now, reason: reason, figures: figures)
        history.withLockedValue { $0.append(record) }
    }

    /// The session playing now for `GET /diagnostics` (null between sessions): who sends, how
    /// long it has run, where its setup stands and its figures.
    public var currentSessionJSON: JSONValue {
        let current = machine.withLockedValue { $0.current }
        guard let current, let resources = sessions.withLockedValue({ $0[current.number] }) else { return .null }
        return .object([
            "session": .integer(current.number), "sender": .string(resources.connection.remote?.ipAddress),
            "senderName": .string(current.senderName), "kind": .string(Self.kindName(current, buffered: resources.buffered)),
            "seconds": .number(((now() - resources.began) * 10).rounded() / 10), "phase": .string("\(current.phase)"),
            "paused": .bool(current.paused), "stream": resources.figures().json,
        ])
    }

    static func kindName(_ session: AudioSessionStateMachine.Session, buffered: Bool) -> String {
        buffered ? "buffered" : session.kind == .airPlay2 ? "airplay2" : "airplay1"
    }

    /// The per-session log line, and one per reason datagrams were dropped.
    func logEnd(_ session: AudioSessionStateMachine.Session, reason: String, figures: StreamFigures) {
        let sync = figures.playout.syncError
        var card: Logger.Metadata = [:]
        if let output = figures.playout.output {
            card = ["output.ppm": "\(output.ratePPM.map(Self.rounded) ?? .nan)", "output.delay.ms": "\(Self.rounded(output.delayMilliseconds))",
                    "output.restarts": "\(output.restarts)"]
        }
        logger.info("audio session ended", metadata: card.merging([
            "session": "\(session.number)", "reason": "\(reason)", "received": "\(figures.playout.received)",
            "lost": "\(figures.playout.lost)", "requested": "\(figures.requested)", "requestedAgain": "\(figures.requestedAgain)",
            "retransmitted": "\(figures.retransmitted)",
            "clock": "\(figures.timedMostlyBy)",
            "sync.mean.ms": "\(Self.milliseconds(sync.mean))", "sync.p95.ms": "\(Self.milliseconds(sync.percentile(0.95)))",
            "sync.max.ms": "\(Self.milliseconds(sync.worst))", "drift.ppm": "\(Self.rounded(figures.clock.driftPPM))",
            "frames.inserted": "\(figures.playout.framesInserted)", "frames.removed": "\(figures.playout.framesRemoved)",
            "dropped": "\(figures.drops.values.reduce(0, +))",
        ]) { $1 })
        for (why, count) in figures.dropped.sorted(by: { $0.key < $1.key }) {
            logger.notice("audio datagrams dropped", metadata: ["session": "\(session.number)", "reason": "\(why)", "count": "\(count)"])
        }
    }

    static func milliseconds(_ seconds: Double) -> Double { rounded(seconds * 1000) }
    static func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    /// The history of ended sessions for `GET /diagnostics`.
    public var historyJSON: JSONValue {
        let now = now()
        return history.withLockedValue { $0.json(now: now) }
    }
}
