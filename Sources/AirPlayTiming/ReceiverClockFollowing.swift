import AirPlayWire

/// A receiver's own PTP clock as a sender follows it, for receivers that will not follow ours:
/// a standalone HomePod on HomePod OS 27 keeps announcing itself as grandmaster (priority1 248)
/// and renders nothing on a timeline that is not its own. Once the sender stops offering a
/// clock it sends the sender unicast two-step Syncs about 8 times a second; the sender takes
/// its time from them, and anchors that receiver's audio on the receiver's clock.
///
/// A pure value: PTP messages and the time they arrived (our monotonic clock, nanoseconds) go
/// in; the Delay_Reqs to send, and the followed clock's time at any of ours, come out. It is
/// `PTPFollower` restricted to the receivers' addresses, never waking them with Announces
/// (an Announce from us is a clock on offer).
public struct ReceiverClockFollowing: Sendable {
    /// The follower underneath (its masters, for diagnostics).
    public private(set) var follower: PTPFollower
    /// The receivers whose clocks may be followed (the first heard well is).
    public private(set) var addresses: [String] = []
    /// The followed clock minus our monotonic clock when it was last known, kept so a clock
    /// that falls silent mid-stream goes on where it was rather than jumping back to ours.
    private var lastOffset: Int64?

    /// How many Syncs make a clock worth anchoring on.
    public static let settled = 8

    /// A follower that speaks as `identity` (the port identity of our Delay_Reqs).
    public init(identity: PTPPortIdentity) {
        var configuration = PTPFollower.Configuration()
        configuration.wakesMasters = false
        follower = PTPFollower(identity: identity, configuration: configuration)
    }

    /// Whether any receiver's clock is to be followed.
    public var isFollowing: Bool { !addresses.isEmpty }

    /// Follows the clock of the receiver at `address` (as well as those named before).
    public mutating func follow(_ address: String) {
        let plain = IPAddressBytes.plain(address)
        guard !addresses.contains(plain) else { return }
        addresses.append(plain)
        follower.setPeers(addresses)
    }

    /// Stops following the clock of the receiver at `address`.
    public mutating func stopFollowing(_ address: String) {
        addresses.removeAll { $0 == IPAddressBytes.plain(address) }
        follower.setPeers(addresses)
    }

    /// A PTP message from `address`, arrived at our monotonic time `local`.
    public mutating func receive(_ message: PTPMessage, from address: String, at local: Int64) {
        follower.receive(message, from: address, at: local)
    }

    /// The Delay_Reqs due at our monotonic time `now`.
    public mutating func tick(now: Int64) -> [PTPFollower.Action] {
        guard isFollowing else { return [] }
        _ = clockTime(at: now)
        return follower.tick(now: now)
    }

    /// The Delay_Req `sequence` left at our monotonic time `local`.
    public mutating func delayRequestSent(sequence: UInt16, at local: Int64) {
        follower.delayRequestSent(sequence: sequence, at: local)
    }

    /// The followed clock's time at our monotonic time `now`: its line while it is heard (or in
    /// holdover), else where its last line left it; nil before any was heard.
    public mutating func clockTime(at now: Int64) -> Int64? {
        if let master = follower.masterTime(at: now) { lastOffset = master &- now }
        return lastOffset.map { now &+ $0 }
    }

    /// The followed clock, once its line has `settled` Syncs (a second of them at 8 a second):
    /// the identity the anchors name (its grandmaster identity, else the Syncs' clock), and
    /// where it is.
    public func followed(now: Int64) -> (timeline: UInt64, address: String)? {
        // The follower hears only the receivers named (`follow`).
        guard isFollowing, let master = follower.followed(now: now), let line = master.line, line.samples >= Self.settled else { return nil }
        return (master.announce?.grandmasterIdentity ?? master.identity.clockIdentity, master.address)
    }
}
