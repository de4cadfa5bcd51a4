import AirPlayWire
import Glibc
import Logging
import Synchronization
import LinuxIO

/// Runs a `PTPFollower` on the real network: UDP ports 319 (event) and 320 (general) on IPv4
/// and IPv6 (iPhones often time a session over a link-local or ULA address), joined to PTP's
/// multicast groups on every interface, with the kernel's receive time stamps
/// and the kernel's transmit stamp of each Delay_Req (software time stamping, as `ptp4l -S`),
/// on a thread of its own.
///
/// Ports below 1024 need privilege: under systemd the unit grants `CAP_NET_BIND_SERVICE` and
/// nothing else. Both sockets set `SO_REUSEADDR`, so several airplayd on one box (zones) each
/// hear the multicast Syncs, Announces and Delay_Resps; unicast PTP reaches one of them only.
public final class PTPClockService: PTPClock {
    private let follower: Mutex<PTPFollower>
    private let sockets: (event: Int32, general: Int32)
    /// The IPv6 pair; nil when the box has no IPv6 or another program holds the ports there.
    private let sockets6: (event: Int32, general: Int32)?
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger
    /// Datagrams that were not PTPv2 messages.
    private let malformed = Atomic<Int>(0)

    /// Binds the ports and starts following. `identity` is our clock identity (EUI-64).
    /// - Parameter ports: the event and general ports (tests may use others).
    public init(identity: UInt64, ports: (event: UInt16, general: UInt16) = (PTPMessage.eventPort, PTPMessage.generalPort),
                configuration: PTPFollower.Configuration = .init(), logger: Logger) throws(PTPSockets.Failure) {
        sockets = try PTPSockets.bindPair(ports: ports)
        sockets6 = Self.bindIPv6(ports: ports, logger: logger)
        follower = Mutex(PTPFollower(identity: PTPPortIdentity(clockIdentity: identity, port: 1), configuration: configuration))
        self.logger = logger
        joinGroups()
        DedicatedThread.start(name: "airplay-ptp") { [self] in run() }
    }

    /// Whether the follower also listens on IPv6.
    public var listensOnIPv6: Bool { sockets6 != nil }

    /// The IPv6 event and general sockets, or nil (logged) when IPv6 is off or the ports are taken:
    /// IPv4 alone still serves every sender that times over IPv4.
    private static func bindIPv6(ports: (event: UInt16, general: UInt16), logger: Logger) -> (event: Int32, general: Int32)? {
        do {
            return try PTPSockets.bindPair(ports: ports, family: AF_INET6)
        } catch {
            logger.warning("PTP: not listening on IPv6", metadata: ["ptp.reason": "\(error)"])
            return nil
        }
    }

    private func joinGroups() {
        PTPSockets.joinGroups(sockets: [sockets.event, sockets.general])
        if let sockets6 { PTPSockets.joinIPv6Groups(sockets: [sockets6.event, sockets6.general]) }
    }

    /// Stops the thread, which closes the sockets within 50 ms (its poll time-out). The thread
    /// holds the service until then, so `stop()` must be called: dropping it does not stop it.
    public func stop() {
        stopped.store(true, ordering: .releasing)
    }

    /// Follows only masters at these addresses (a session's `timingPeerInfo`); nil follows any.
    public func setPeers(_ addresses: [String]?) {
        follower.withLock { $0.setPeers(addresses) }
    }

    /// Prefers the master of an anchor's timeline (its clock identity); nil drops the preference.
    public func prefer(timeline clockIdentity: UInt64?) {
        follower.withLock { $0.prefer(timeline: clockIdentity) }
    }

    /// Our monotonic time (nanoseconds) at which the followed master's clock reads `masterTime`.
    public func localTime(ofMaster masterTime: Int64) -> Int64? {
        let now = PTPSockets.monotonicNanoseconds()
        return follower.withLock { $0.localTime(ofMaster: masterTime, now: now) }
    }

    /// The followed master's time now, in nanoseconds, with our monotonic time it goes with.
    public func masterTime() -> (master: Int64, local: Int64)? {
        let now = PTPSockets.monotonicNanoseconds()
        return follower.withLock { $0.masterTime(at: now) }.map { ($0, now) }
    }

    /// Every master tracked, as of now (what `SharedPTPClock` hands the box's other instances).
    public func snapshot() -> [PTPFollower.MasterStatus] {
        let now = PTPSockets.monotonicNanoseconds()
        return follower.withLock { $0.statuses(now: now) }
    }

    /// What the follower knows, as JSON for `GET /ptp` on the box: every master heard, the one
    /// followed, and how far the followed master's clock is from this box's system clock.
    public func status() -> JSONValue {
        let now = PTPSockets.monotonicNanoseconds()
        let wall = now - PTPSockets.realtimeToMonotonic()
        let (statuses, masterTime, ignored, unmatched, implausible) = follower.withLock {
            ($0.statuses(now: now), $0.masterTime(at: now), $0.ignored, $0.unmatched, $0.implausible)
        }
        let clocks = statuses.map(\.json)
        return .object([
            "clocks": .array(clocks),
            "offset_to_system_clock_ns": masterTime.map { .integer(Int($0 &- wall)) } ?? .null,
            "ignored": .integer(ignored), "unmatched": .integer(unmatched), "implausible": .integer(implausible),
            "malformed": .integer(malformed.load(ordering: .relaxed)),
            "ipv6": .bool(listensOnIPv6),
        ])
    }

    // MARK: - The thread

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        var lastJoin = PTPSockets.monotonicNanoseconds()
        var followed: PTPPortIdentity?
        let all = [sockets.event, sockets.general] + (sockets6.map { [$0.event, $0.general] } ?? [])
        while !stopped.load(ordering: .acquiring) {
            PTPSockets.wait(all, milliseconds: 50)
            // Kernel stamps are CLOCK_REALTIME; the follower works on our monotonic clock.
            let realtimeToMonotonic = PTPSockets.realtimeToMonotonic()
            for descriptor in all {
                for _ in 0..<64 {
                    guard let datagram = PTPSockets.receive(descriptor, into: &buffer, realtimeToMonotonic: realtimeToMonotonic) else { break }
                    guard let message = try? PTPMessage.decode(datagram.bytes) else {
                        malformed.add(1, ordering: .relaxed)
                        continue
                    }
                    follower.withLock { $0.receive(message, from: datagram.from, at: datagram.arrival) }
                }
            }
            let now = PTPSockets.monotonicNanoseconds()
            let actions = follower.withLock { $0.tick(now: now) }
            for action in actions {
                switch action {
                case .sendDelayRequest(let message, let address):
                    let socket = address.contains(":") ? sockets6?.event ?? sockets.event : sockets.event
                    PTPSockets.dropTransmitStamps(socket)
                    let before = PTPSockets.realtimeNanoseconds()
                    PTPSockets.send(message.encoded(), from: (sockets.event, sockets6?.event), to: address, port: PTPMessage.eventPort)
                    // The kernel's stamp of when it left (as ptp4l -S takes it), else our time
                    // before sendto (the quickest-sample filter leaves a late one out).
                    let sent = (PTPSockets.transmitStamp(socket) ?? before) + realtimeToMonotonic
                    follower.withLock { $0.delayRequestSent(sequence: message.header.sequence, at: sent) }
                case .sendAnnounce(let message, let address):
                    // From our general port: a sender such as nqptp drops PTP whose source port is not its own.
                    PTPSockets.send(message.encoded(), from: (sockets.general, sockets6?.general), to: address, port: PTPMessage.generalPort)
                    if case .announce(let announce) = message.body {
                        logger.debug("PTP: wake-up Announce sent", metadata: ["ptp.address": "\(address)", "ptp.priority1": "\(announce.priority1)"])
                    }
                }
            }
            let current = follower.withLock { $0.followed(now: now) }
            if current?.identity != followed {
                followed = current?.identity
                if let current {
                    logger.info("PTP: following a master", metadata: ["ptp.master": "\(current.identity)", "ptp.address": "\(current.address)",
                                                                      "ptp.priority1": "\(current.announce.map { "\($0.priority1)" } ?? "-")"])
                } else {
                    logger.warning("PTP: no master heard")
                }
            }
            // Interfaces come and go (Wi-Fi, a cable): join the group on new ones every 5 s.
            if now - lastJoin > 5_000_000_000 {
                lastJoin = now
                joinGroups()
            }
        }
        for descriptor in all { close(descriptor) }
    }

}
