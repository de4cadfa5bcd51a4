import AirPlayWire
import Glibc
import Logging
import Synchronization
import LinuxIO

/// One PTP follower for every airplayd on the box (zones: `airplayd@kitchen`, `airplayd@hall`).
///
/// PTP's ports are the box's, not an instance's: Syncs a sender unicasts to the box reach one
/// socket only, so instances that each bound 319/320 would leave all but one without a clock.
/// Instead the first instance to take the abstract Unix name `airplayd/ptp` (a
/// `SOCK_SEQPACKET` socket, exclusive within the network namespace and freed by the kernel the
/// moment its holder dies) runs the follower and the others connect to it: forty times a
/// second it sends each a snapshot of every master it tracks (`PTPShareMessage`), and each
/// tells it its sessions' timing peers, whose union the follower listens to. Every instance,
/// the owner too, maps times through its own anchor's master in the last snapshot (our
/// monotonic clock is the kernel's, the same in every process): zones on one box then agree
/// to the microsecond even while the line moves, where an owner reading the live follower
/// would run up to a snapshot ahead of the others (with a master sending 64 Syncs a second,
/// three zones latched their first frames on lines up to 1.4 ms apart). When the owner exits,
/// the others notice the closed connection and one of them takes the name and the ports over
/// within a second, meanwhile playing on the last snapshot (the holdover), whose lines the new
/// owner carries until its own follower has some.
///
/// Known limit: the follower measures the path delay of its own followed master only, so an
/// instance anchored on another sender's clock takes that master at zero path delay (tens of
/// microseconds on a LAN).
public final class SharedPTPClock: PTPClock {
    /// The abstract socket name (without its leading NUL).
    public static let name = "airplayd/ptp"

    private struct State {
        var service: PTPClockService?
        var snapshot: (masters: [PTPFollower.MasterStatus], at: Int64)?
        var ownPeers: [String]?
        var peersSent = false
        var timeline: UInt64?
    }

    private let identity: UInt64
    private let configuration: PTPFollower.Configuration
    private let logger: Logger
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)

    /// Starts taking part: owner if the name is free (binding 319/320, which throws when it
    /// cannot), else client of the owner. `identity` is our clock identity (EUI-64).
    public init(identity: UInt64, configuration: PTPFollower.Configuration = .init(), logger: Logger) throws(PTPSockets.Failure) {
        self.identity = identity
        self.configuration = configuration
        self.logger = logger
        // Try once here, so a box where nobody can bind the ports says so at start.
        let listener = Self.listen()
        if let listener {
            let service: PTPClockService
            do {
                service = try PTPClockService(identity: identity, configuration: configuration, logger: logger)
            } catch {
                close(listener)
                throw error
            }
            state.withLock { $0.service = service }
            logger.info("PTP: this instance runs the box's follower", metadata: ["ptp.share": "\(Self.name)"])
        }
        DedicatedThread.start(name: "airplay-ptp-share") { [self] in run(listener: listener) }
    }

    /// Stops taking part: an owner closes the ports and the name (another instance takes over).
    public func stop() {
        stopped.store(true, ordering: .releasing)
    }

    /// This instance's sessions' timing peers (the owner listens to everyone's).
    public func setPeers(_ addresses: [String]?) {
        // The owner's loop (within 25 ms) or the client's (within 50 ms) passes them on.
        state.withLock { state in
            state.ownPeers = addresses
            state.peersSent = false
        }
    }

    /// The master this instance's anchor names.
    public func prefer(timeline clockIdentity: UInt64?) {
        let service = state.withLock { state -> PTPClockService? in
            state.timeline = clockIdentity
            return state.service
        }
        service?.prefer(timeline: clockIdentity)
    }

    /// Our monotonic time at which this instance's master reads `masterTime`.
    public func localTime(ofMaster masterTime: Int64) -> Int64? {
        let now = PTPSockets.monotonicNanoseconds()
        return chosenMaster(now: now)?.localTime(ofMaster: masterTime, near: now)
    }

    /// This instance's master's time now, with our monotonic time.
    public func masterTime() -> (master: Int64, local: Int64)? {
        let now = PTPSockets.monotonicNanoseconds()
        return chosenMaster(now: now)?.masterTime(at: now).map { ($0, now) }
    }

    /// How often the owner takes a snapshot, keeps it and sends it to the others (nanoseconds).
    static let snapshotInterval: Int64 = 25_000_000

    /// `GET /ptp`: the masters, and whether this instance runs the follower (`shared`).
    public func status() -> JSONValue {
        if let service = state.withLock({ $0.service }) {
            guard case .object(var object) = service.status() else { return service.status() }
            object["shared"] = .string("owner")
            return .object(object)
        }
        let now = PTPSockets.monotonicNanoseconds()
        let wall = now - PTPSockets.realtimeToMonotonic()
        let masters = aged(now: now)
        let chosen = chosenMaster(now: now)
        return .object([
            "clocks": .array(masters.map(\.json)), "shared": .string("client"),
            "offset_to_system_clock_ns": chosen?.masterTime(at: now).map { .integer(Int($0 &- wall)) } ?? .null,
        ])
    }

    /// The last snapshot's masters, their silence counted to `now`, those past the holdover gone.
    private func aged(now: Int64) -> [PTPFollower.MasterStatus] {
        guard let snapshot = state.withLock({ $0.snapshot }) else { return [] }
        return snapshot.masters.map { master in
            var master = master
            master.silentFor += now - snapshot.at
            return master
        }.filter { $0.silentFor <= configuration.silence + configuration.holdover }
    }

    /// This instance's master: its anchor's timeline when the owner tracks it, else the owner's choice.
    private func chosenMaster(now: Int64) -> PTPFollower.MasterStatus? {
        let masters = aged(now: now).filter { $0.line != nil }
        if let timeline = state.withLock({ $0.timeline }),
           let preferred = masters.first(where: { $0.identity.clockIdentity == timeline || $0.announce?.grandmasterIdentity == timeline }) {
            return preferred
        }
        return masters.first(where: \.followed) ?? masters.first
    }

    // MARK: - The thread

    private func run(listener first: Int32?) {
        var listener = first
        while !stopped.load(ordering: .acquiring) {
            if let owned = listener {
                serve(listener: owned)
                close(owned)
                listener = nil
                let service = state.withLock { state -> PTPClockService? in
                    defer { state.service = nil }
                    return state.service
                }
                service?.stop()
                continue
            }
            if let connection = Self.connect() {
                logger.info("PTP: following through the box's shared follower", metadata: ["ptp.share": "\(Self.name)"])
                follow(connection)
                close(connection)
                if stopped.load(ordering: .acquiring) { break }
                logger.warning("PTP: the instance running the shared follower went away; taking over")
            }
            // The owner is gone (or was never reachable): take the name and the ports.
            if let owned = Self.listen() {
                do {
                    let service = try PTPClockService(identity: identity, configuration: configuration, logger: logger)
                    let peers = state.withLock { state -> [String]? in
                        state.service = service
                        return state.ownPeers
                    }
                    service.setPeers(peers)
                    listener = owned
                    logger.info("PTP: this instance runs the box's follower", metadata: ["ptp.share": "\(Self.name)"])
                } catch {
                    close(owned)
                    logger.error("PTP: cannot take over the box's follower: \(error)")
                    usleep(1_000_000)
                }
            } else {
                usleep(100_000)
            }
        }
    }

    /// The owner's loop: accepts instances, reads their peers, keeps a snapshot every 25 ms and
    /// sends it to every one; the follower listens to the union of everyone's peers.
    private func serve(listener: Int32) {
        var clients: [(descriptor: Int32, peers: [String]?)] = []
        defer { for client in clients { close(client.descriptor) } }
        var lastSnapshot: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .acquiring) {
            var polls = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)] + clients.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            // Wakes for the next snapshot on time, or for a client.
            let due = (lastSnapshot + Self.snapshotInterval - PTPSockets.monotonicNanoseconds()) / 1_000_000
            _ = poll(&polls, nfds_t(polls.count), Int32(min(max(due, 1), 25)))
            var changed = false
            for index in stride(from: clients.count - 1, through: 0, by: -1) where polls[index + 1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(clients[index].descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0, case .peers(let peers)? = PTPShareMessage.decode(Array(buffer.prefix(count))) {
                    clients[index].peers = peers
                    changed = true
                } else if count == 0 || (count < 0 && errno != EAGAIN) {
                    close(clients[index].descriptor)
                    clients.remove(at: index)
                    changed = true
                }
            }
            // Newcomers last: `polls` only covers the instances connected before the poll.
            if polls[0].revents & Int16(POLLIN) != 0 {
                let accepted = accept(listener, nil, nil)
                if accepted >= 0 {
                    _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
                    if clients.count < 32 { clients.append((accepted, nil)) } else { close(accepted) }
                }
            }
            let (service, own, ownChanged) = state.withLock { state -> (PTPClockService?, [String]?, Bool) in
                defer { state.peersSent = true }
                return (state.service, state.ownPeers, !state.peersSent)
            }
            guard let service else { return }
            if changed || ownChanged {
                // Everyone's named peers; nil only while no instance names any.
                let named = ([own] + clients.map(\.peers)).compactMap { $0 }
                service.setPeers(named.isEmpty ? nil : Array(Set(named.joined())).sorted())
            }
            let now = PTPSockets.monotonicNanoseconds()
            if now - lastSnapshot >= Self.snapshotInterval {
                lastSnapshot = now
                let masters = Self.carryingOver(aged(now: now), into: service.snapshot())
                state.withLock { $0.snapshot = (masters, now) }
                guard !clients.isEmpty else { continue }
                let datagram = PTPShareMessage.snapshot(masters).encoded()
                for client in clients { _ = datagram.withUnsafeBytes { send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } }
            }
        }
    }

    /// The follower's masters, plus the lines of the last snapshot's that it has none for
    /// (yet): an instance that has just taken the follower over plays on through the old
    /// owner's lines, in holdover, until its own follower has Syncs from them again. A carried
    /// master is never the followed one.
    static func carryingOver(_ previous: [PTPFollower.MasterStatus], into current: [PTPFollower.MasterStatus]) -> [PTPFollower.MasterStatus] {
        let withLines = Set(current.filter { $0.line != nil }.map(\.identity))
        let carried = previous.filter { $0.line != nil && !withLines.contains($0.identity) }.map { master in
            var master = master
            master.followed = false
            return master
        }
        let carriedIdentities = Set(carried.map(\.identity))
        let kept = current.filter { !carriedIdentities.contains($0.identity) }
        return Array((kept + carried).prefix(PTPShareMessage.maximumMasters))
    }

    /// A client's loop: keeps the latest snapshot and tells the owner our peers when they change,
    /// until the owner closes the connection or we stop.
    private func follow(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .acquiring) {
            let pending = state.withLock { state -> [String]?? in
                guard !state.peersSent else { return nil }
                state.peersSent = true
                return .some(state.ownPeers)
            }
            if let peers = pending {
                let datagram = PTPShareMessage.peers(peers).encoded()
                guard datagram.withUnsafeBytes({ send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else { return }
            }
            var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { return }
            guard poller.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 || (count < 0 && errno != EAGAIN) { return }
            if count > 0, case .snapshot(let masters)? = PTPShareMessage.decode(Array(buffer.prefix(count))) {
                let now = PTPSockets.monotonicNanoseconds()
                state.withLock { $0.snapshot = (masters, now) }
            }
        }
    }

    // MARK: - The abstract socket

    private static func address() -> (sockaddr_un, socklen_t) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0  // the abstract namespace
            for (index, byte) in bytes.enumerated() { path[index + 1] = byte }
        }
        return (address, socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count))
    }

    /// The name, bound and listening; nil when another process holds it.
    private static func listen() -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var (address, length) = address()
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard bound == 0, Glibc.listen(descriptor, 16) == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// A connection to the name's holder; nil when nobody holds it.
    private static func connect() -> Int32? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var (address, length) = address()
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, length) } }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }
}
