/// Who gets a control connection when all `limit` of them are taken: a pure rule, so that a
/// flood of slow or idle connections cannot lock senders out.
///
/// A peer that dribbles a request's bytes (each cut only after the request time-out, 10 s) or
/// opens connections and says nothing would otherwise fill the table: every sender arriving
/// meanwhile was told 503. Now a newcomer takes the place of a connection that is doing
/// nothing useful, never of one being answered or holding a session:
/// - from a peer holding more connections than the newcomer's own peer (the flood's), its
///   oldest waiting one (a half-received request first), at once;
/// - else any connection that has waited `grace` seconds or more (a half-received request
///   first, then one of the peer holding the most, then the longest idle; a real sender sends
///   its request within milliseconds of connecting, and between its requests it is answered or
///   holds its session);
/// - else the newcomer is told 503: a crowd from one peer arriving within `grace` is served
///   first come, first served, as before.
public enum ConnectionAdmission {
    /// What an open connection is doing, as admission sees it.
    public enum Waiting: Hashable, Sendable {
        /// Nothing in flight since then.
        case idle(since: Double)
        /// Part of a request has come; its first byte came then.
        case receiving(since: Double)

        var since: Double {
            switch self {
            case .idle(let since), .receiving(let since): since
            }
        }

        var isReceiving: Bool { if case .receiving = self { true } else { false } }
    }

    /// One open connection.
    public struct Connection: Hashable, Sendable {
        /// Its key in the caller's table.
        public var id: Int
        /// The peer's address (without port).
        public var peer: String
        /// Waiting for a request (idle or half-received), or nil while answering or timed out.
        public var waiting: Waiting?
        /// True when it owns an audio session (or an event channel): never evicted.
        public var holdsSession: Bool

        /// A connection from its parts.
        public init(id: Int, peer: String, waiting: Waiting?, holdsSession: Bool) {
            self.id = id
            self.peer = peer
            self.waiting = waiting
            self.holdsSession = holdsSession
        }
    }

    /// The decision for a newcomer.
    public enum Decision: Hashable, Sendable {
        /// A free place: served.
        case serve
        /// Served in the place of this connection, which is closed.
        case serveInPlaceOf(Int)
        /// Told 503 and closed.
        case refuse
    }

    /// Seconds a connection waits before any newcomer may take its place.
    public static let grace = 2.0

    /// The decision for a connection from `peer` when `open` are open and `limit` may be.
    public static func decide(newcomer peer: String, open: [Connection], limit: Int, now: Double) -> Decision {
        guard open.count >= limit else { return .serve }
        var counts: [String: Int] = [:]
        for connection in open { counts[connection.peer, default: 0] += 1 }
        let own = counts[peer] ?? 0
        let waiting = open.filter { !$0.holdsSession && $0.waiting != nil }
        // Half-received requests first, then those of the peer holding the most, then the
        // longest waiting (a lone sender between its requests goes last).
        func first(of candidates: [Connection]) -> Connection? {
            candidates.min { a, b in
                let (wa, wb) = (a.waiting!, b.waiting!)
                if wa.isReceiving != wb.isReceiving { return wa.isReceiving }
                let (ca, cb) = (counts[a.peer] ?? 0, counts[b.peer] ?? 0)
                if ca != cb { return ca > cb }
                return wa.since < wb.since
            }
        }
        // The peer holding the most connections beyond the newcomer's own gives one up.
        let crowding = waiting.filter { (counts[$0.peer] ?? 0) > own }
        if let top = crowding.map({ counts[$0.peer] ?? 0 }).max(),
           let victim = first(of: crowding.filter { counts[$0.peer] == top }) {
            return .serveInPlaceOf(victim.id)
        }
        if let victim = first(of: waiting.filter { now - $0.waiting!.since >= grace }) {
            return .serveInPlaceOf(victim.id)
        }
        return .refuse
    }
}
