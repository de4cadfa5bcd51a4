import AirPlayWire

/// A followed PTP clock as the receiver's sessions use it: which masters count, which one an
/// anchor names, and the mapping between the master's time and our monotonic clock. Either
/// this process's own follower (`PTPClockService`) or one shared by every airplayd on the box
/// (`SharedPTPClock`).
public protocol PTPClock: AnyObject, Sendable {
    /// Follows only masters at these addresses (a session's `timingPeerInfo`); nil follows any.
    func setPeers(_ addresses: [String]?)
    /// Prefers the master of an anchor's timeline (its clock identity); nil drops the preference.
    func prefer(timeline clockIdentity: UInt64?)
    /// Our monotonic time (nanoseconds) at which the followed master's clock reads `masterTime`.
    func localTime(ofMaster masterTime: Int64) -> Int64?
    /// The followed master's time now, in nanoseconds, with our monotonic time it goes with.
    func masterTime() -> (master: Int64, local: Int64)?
    /// What is known of the masters, as JSON for `GET /ptp`.
    func status() -> JSONValue
    /// Stops following (closes sockets, leaves the box's shared follower).
    func stop()
}

extension PTPFollower.MasterStatus {
    /// The master's time at our time `now`: its line plus the path delay (zero when it never
    /// answered a Delay_Req).
    public func masterTime(at now: Int64) -> Int64? {
        line.map { $0.remoteTime(at: now) &+ (pathDelay ?? 0) }
    }

    /// Our time at which the master's clock reads `masterTime`, for a moment near our `now`;
    /// nil when that is beyond our clock (`masterTime` comes from a sender's anchor).
    public func localTime(ofMaster masterTime: Int64, near now: Int64) -> Int64? {
        guard let line else { return nil }
        let delay = Double(pathDelay ?? 0)
        // master = local + line(local) + delay; the line's slope is tiny, so two steps settle it.
        func local(near time: Int64) -> Int64? {
            let (result, overflow) = masterTime.subtractingReportingOverflow(ClockLine.nanoseconds(line.offset(at: time) + delay))
            return overflow ? nil : result
        }
        return local(near: now).flatMap(local(near:))
    }

    /// The master as `GET /ptp` lists it.
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "identity": .string(identity.description), "address": .string(address),
            "silent_ms": .number(Double(silentFor) / 1e6), "followed": .bool(followed),
            "path_delay_ns": pathDelay.map { .integer(Int($0)) } ?? .null,
            "drift_ppm": line.map { .number($0.drift * 1e6) } ?? .null,
            "samples": .integer(line?.samples ?? 0),
            "residual_ns": line.map { .number($0.residual) } ?? .null,
            "sequence": .integer(sequence), "last_restart": lastRestart.map(JSONValue.string) ?? .null,
            "wake_ups": .integer(wakeUps), "stopped": .bool(stopped), "frozen_follow_ups": .integer(frozenFollowUps),
        ]
        if let announce {
            object["priority1"] = .integer(Int(announce.priority1))
            object["clock_class"] = .integer(Int(announce.clockClass))
            object["grandmaster"] = .string(PTPPortIdentity(clockIdentity: announce.grandmasterIdentity, port: 0).description.dropLast(2).description)
        }
        return .object(object)
    }
}
