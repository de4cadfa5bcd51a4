import AirPlayMedia
import AirPlayWire
import CLinuxIO
import Glibc
import Logging
import Synchronization

/// Runs a `PTPFollower` on the real network: UDP ports 319 (event) and 320 (general), joined
/// to PTP's multicast group on every IPv4 interface, with the kernel's receive time stamps
/// and the kernel's transmit stamp of each Delay_Req (software time stamping, as `ptp4l -S`),
/// on a thread of its own.
///
/// Ports below 1024 need privilege: under systemd the unit grants `CAP_NET_BIND_SERVICE` and
/// nothing else. Both sockets set `SO_REUSEADDR`, so several airplayd on one box (zones) each
/// hear the multicast Syncs, Announces and Delay_Resps; unicast PTP reaches one of them only.
public final class PTPClockService: Sendable {
    /// Why the service could not start.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong.
        public let description: String
    }

    private let follower: Mutex<PTPFollower>
    private let sockets: (event: Int32, general: Int32)
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger
    /// Datagrams that were not PTPv2 messages.
    private let malformed = Atomic<Int>(0)

    /// Binds the ports and starts following. `identity` is our clock identity (EUI-64).
    /// - Parameter ports: the event and general ports (tests may use others).
    public init(identity: UInt64, ports: (event: UInt16, general: UInt16) = (PTPMessage.eventPort, PTPMessage.generalPort),
                configuration: PTPFollower.Configuration = .init(), logger: Logger) throws(Failure) {
        let event = try Self.bind(port: ports.event)
        let general: Int32
        do {
            general = try Self.bind(port: ports.general)
        } catch {
            close(event)
            throw error
        }
        sockets = (event, general)
        follower = Mutex(PTPFollower(identity: PTPPortIdentity(clockIdentity: identity, port: 1), configuration: configuration))
        self.logger = logger
        joinGroups()
        DedicatedThread.start(name: "airplay-ptp") { [self] in run() }
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

    /// The followed master's time now, in nanoseconds, with our monotonic time it goes with.
    public func masterTime() -> (master: Int64, local: Int64)? {
        let now = Self.monotonicNanoseconds()
        return follower.withLock { $0.masterTime(at: now) }.map { ($0, now) }
    }

    /// What the follower knows, as JSON for `GET /ptp` on the box: every master heard, the one
    /// followed, and how far the followed master's clock is from this box's system clock.
    public func status() -> JSONValue {
        let now = Self.monotonicNanoseconds()
        let wall = Self.realtimeNanoseconds()
        let (statuses, masterTime, ignored, unmatched) = follower.withLock {
            ($0.statuses(now: now), $0.masterTime(at: now), $0.ignored, $0.unmatched)
        }
        let clocks: [JSONValue] = statuses.map { status in
            var object: [String: JSONValue] = [
                "identity": .string(status.identity.description), "address": .string(status.address),
                "silent_ms": .number(Double(status.silentFor) / 1e6), "followed": .bool(status.followed),
                "path_delay_ns": status.pathDelay.map { .integer(Int($0)) } ?? .null,
                "drift_ppm": status.line.map { .number($0.drift * 1e6) } ?? .null,
                "samples": .integer(status.line?.samples ?? 0),
                "residual_ns": status.line.map { .number($0.residual) } ?? .null,
            ]
            if let announce = status.announce {
                object["priority1"] = .integer(Int(announce.priority1))
                object["clock_class"] = .integer(Int(announce.clockClass))
                object["grandmaster"] = .string(PTPPortIdentity(clockIdentity: announce.grandmasterIdentity, port: 0).description.dropLast(2).description)
            }
            return .object(object)
        }
        return .object([
            "clocks": .array(clocks),
            "offset_to_system_clock_ns": masterTime.map { .integer(Int($0 - wall)) } ?? .null,
            "ignored": .integer(ignored), "unmatched": .integer(unmatched),
            "malformed": .integer(malformed.load(ordering: .relaxed)),
        ])
    }

    // MARK: - The thread

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        var lastJoin = Self.monotonicNanoseconds()
        var followed: PTPPortIdentity?
        while !stopped.load(ordering: .acquiring) {
            var descriptors = [pollfd(fd: sockets.event, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: sockets.general, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, 50)
            // Kernel stamps are CLOCK_REALTIME; the follower works on our monotonic clock.
            let realtimeToMonotonic = Self.monotonicNanoseconds() - Self.realtimeNanoseconds()
            for descriptor in [sockets.event, sockets.general] {
                for _ in 0..<64 {
                    var name = sockaddr_storage()
                    var stamp: Int64 = 0
                    let count = buffer.withUnsafeMutableBytes { clinuxio_receive_timestamped(descriptor, $0.baseAddress, $0.count, &name, &stamp) }
                    guard count > 0 else { break }
                    let arrival = stamp != 0 ? stamp + realtimeToMonotonic : Self.monotonicNanoseconds()
                    guard let message = try? PTPMessage.decode(Array(buffer[0..<count])) else {
                        malformed.add(1, ordering: .relaxed)
                        continue
                    }
                    let address = Self.describe(name)
                    follower.withLock { $0.receive(message, from: address, at: arrival) }
                }
            }
            let now = Self.monotonicNanoseconds()
            let actions = follower.withLock { $0.tick(now: now) }
            for case .sendDelayRequest(let message, let address) in actions {
                let before = Self.monotonicNanoseconds()
                send(message.encoded(), to: address)
                // The kernel's stamp of when it left (as ptp4l -S takes it), else our time before sendto.
                let stamp = clinuxio_transmit_timestamp(sockets.event, 2)
                let sent = stamp != 0 ? stamp + (Self.monotonicNanoseconds() - Self.realtimeNanoseconds()) : before
                follower.withLock { $0.delayRequestSent(sequence: message.header.sequence, at: sent) }
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
        close(sockets.event)
        close(sockets.general)
    }

    private func send(_ bytes: [UInt8], to address: String) {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = PTPMessage.eventPort.bigEndian
        guard inet_pton(AF_INET, address, &target.sin_addr) == 1 else { return }
        _ = bytes.withUnsafeBytes { body in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sockets.event, body.baseAddress, body.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Joins 224.0.1.129 on every IPv4 interface that is up and multicast-capable (again is harmless).
    private func joinGroups() {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return }
        defer { freeifaddrs(list) }
        var group = in_addr()
        inet_pton(AF_INET, PTPMessage.multicastGroup, &group)
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(entry.pointee.ifa_flags)
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0 else { continue }
            let local = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            var request = ip_mreq(imr_multiaddr: group, imr_interface: local)
            for descriptor in [sockets.event, sockets.general] {
                _ = setsockopt(descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
            }
        }
    }

    private static func bind(port: UInt16) throws(Failure) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var on: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = clinuxio_enable_receive_timestamps(descriptor)
        _ = clinuxio_enable_transmit_timestamps(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw Failure(description: "cannot bind UDP port \(port): \(reason)" + (port < 1024 ? " (ports below 1024 need CAP_NET_BIND_SERVICE)" : ""))
        }
        return descriptor
    }

    private static func describe(_ name: sockaddr_storage) -> String {
        guard name.ss_family == sa_family_t(AF_INET) else { return "" }
        var copy = name
        return withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                var raw = address.pointee.sin_addr
                inet_ntop(AF_INET, &raw, &text, socklen_t(INET_ADDRSTRLEN))
                return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds (the playout's clock).
    public static func monotonicNanoseconds() -> Int64 { clock(CLOCK_MONOTONIC) }
    /// CLOCK_REALTIME in nanoseconds.
    public static func realtimeNanoseconds() -> Int64 { clock(CLOCK_REALTIME) }

    private static func clock(_ id: clockid_t) -> Int64 {
        var time = timespec()
        clock_gettime(id, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
