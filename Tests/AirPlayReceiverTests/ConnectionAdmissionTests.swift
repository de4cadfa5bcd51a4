import AirPlayReceiver
import Testing

/// Who gets a control connection when every place is taken: a newcomer takes the place of one
/// doing nothing useful (the flood's first), never of one being answered or holding a session.
@Suite struct ConnectionAdmissionTests {
    typealias Connection = ConnectionAdmission.Connection

    /// `count` connections from `peer`, waiting as `waiting(index)` says, ids from `first`.
    static func crowd(_ peer: String, _ count: Int, first: Int = 0, waiting: (Int) -> ConnectionAdmission.Waiting?) -> [Connection] {
        (0..<count).map { Connection(id: first + $0, peer: peer, waiting: waiting($0), holdsSession: false) }
    }

    @Test func belowTheLimitEveryoneIsServed() {
        let open = Self.crowd("10.0.0.9", 3) { _ in .idle(since: 0) }
        #expect(ConnectionAdmission.decide(newcomer: "10.0.0.9", open: open, limit: 4, now: 0) == .serve)
    }

    /// The slow-loris case: a newcomer from another peer takes the place of the flood's oldest
    /// half-received request at once, however young.
    @Test func aNewcomerFromAnotherPeerTakesAPlaceFromTheFlood() {
        let flood = Self.crowd("10.0.0.66", 32) { .receiving(since: 100 + Double($0) / 10) }
        #expect(ConnectionAdmission.decide(newcomer: "10.0.0.5", open: flood, limit: 32, now: 100.5) == .serveInPlaceOf(0))
    }

    /// Half-received requests go before idle connections, and the flood's before a lone sender's.
    @Test func halfReceivedRequestsAndTheCrowdingPeerGoFirst() {
        var open = Self.crowd("10.0.0.66", 30) { $0 == 29 ? .receiving(since: 50) : .idle(since: 10) }
        open.append(Connection(id: 100, peer: "10.0.0.7", waiting: .idle(since: 1), holdsSession: false))
        open.append(Connection(id: 101, peer: "10.0.0.8", waiting: .receiving(since: 40), holdsSession: false))
        // From the flood itself: only what waited 2 s; receiving first, the flood's own first.
        #expect(ConnectionAdmission.decide(newcomer: "10.0.0.66", open: open, limit: 32, now: 60) == .serveInPlaceOf(29))
        // From a third peer: the flood's, which outnumbers it.
        #expect(ConnectionAdmission.decide(newcomer: "10.0.0.9", open: open, limit: 32, now: 60) == .serveInPlaceOf(29))
    }

    /// A crowd from one peer arriving within the grace is served first come, first served: the
    /// rest are told 503, none takes another's place.
    @Test func aCrowdFromOnePeerWithinTheGraceIsToldSo() {
        let open = Self.crowd("127.0.0.1", 32) { _ in .idle(since: 10) }
        #expect(ConnectionAdmission.decide(newcomer: "127.0.0.1", open: open, limit: 32, now: 10 + ConnectionAdmission.grace - 0.1) == .refuse)
        #expect(ConnectionAdmission.decide(newcomer: "127.0.0.1", open: open, limit: 32, now: 10 + ConnectionAdmission.grace) == .serveInPlaceOf(0))
    }

    /// Connections being answered, or holding a session, keep their places: the newcomer is refused.
    @Test func answeredConnectionsAndSessionsAreNeverEvicted() {
        var open = Self.crowd("10.0.0.66", 31) { _ in nil }
        open.append(Connection(id: 99, peer: "10.0.0.66", waiting: .idle(since: 0), holdsSession: true))
        #expect(ConnectionAdmission.decide(newcomer: "10.0.0.5", open: open, limit: 32, now: 1000) == .refuse)
    }
}
