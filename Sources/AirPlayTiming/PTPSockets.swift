import AirPlayWire
import Glibc
import LinuxIO

/// The socket work the PTP follower and grandmaster share: binding the PTP ports with kernel
/// time stamps, joining the multicast group, sending to an address, reading the clocks.
public enum PTPSockets {
    /// Why a PTP socket could not be set up.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong.
        public let description: String
    }

    /// Binds PTP's event and general ports as a pair (`family` AF_INET or AF_INET6): both, or
    /// neither (the first is closed when the second fails). Only the event port stamps what it
    /// sends: nothing reads a general message's stamp, and stamps left on a socket's error queue
    /// make every `poll` of it return at once (a grandmaster's loop once spun at 0.9 of a core
    /// on the stamps of its Announces and Follow_Ups).
    static func bindPair(ports: (event: UInt16, general: UInt16), family: Int32 = AF_INET) throws(Failure) -> (event: Int32, general: Int32) {
        let event = try bind(port: ports.event, family: family)
        do {
            return (event, try bind(port: ports.general, family: family, transmitStamps: false))
        } catch {
            close(event)
            throw error
        }
    }

    /// A UDP socket on `port` of every address of one family (`AF_INET` or `AF_INET6`; an IPv6
    /// one is IPv6 only, so both families' sockets share the port), with kernel receive time
    /// stamps, transmit ones when `transmitStamps`, `SO_REUSEADDR` so other PTP programs
    /// (another airplayd) can bind it too.
    static func bind(port: UInt16, family: Int32 = AF_INET, transmitStamps: Bool = true) throws(Failure) -> Int32 {
        // Bound by systemd (airplayd-ptp.socket): no privilege needed here.
        if let inherited = InheritedSockets.take(port: port, family: family) {
            LinuxIO.enableReceiveTimestamps(inherited)
            if transmitStamps { LinuxIO.enableTransmitTimestamps(inherited) }
            return inherited
        }
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var on: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        LinuxIO.enableReceiveTimestamps(descriptor)
        if transmitStamps { LinuxIO.enableTransmitTimestamps(descriptor) }
        let result: Int32
        if family == AF_INET6 {
            _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw Failure(description: "cannot bind UDP port \(port)\(family == AF_INET6 ? " (IPv6)" : ""): \(reason)"
                          + (port < 1024 ? " (ports below 1024 need CAP_NET_BIND_SERVICE)" : ""))
        }
        return descriptor
    }

    /// An address in text form (IPv4, or IPv6 with an optional `%interface` scope) and a port,
    /// as a socket address; nil for anything else (no name is looked up).
    static func socketAddress(_ text: String, port: UInt16) -> (address: sockaddr_storage, length: socklen_t)? {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(text, String(port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        var storage = sockaddr_storage()
        let length = first.pointee.ai_addrlen
        guard Int(length) <= MemoryLayout<sockaddr_storage>.size, let address = first.pointee.ai_addr else { return nil }
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
        return (storage, length)
    }

    /// Sends `bytes` to `address:port` without waiting, from `sockets.v4` or `sockets.v6` by the
    /// address's family; false when it did not go (no socket of that family, or the send failed).
    @discardableResult
    static func send(_ bytes: [UInt8], from sockets: (v4: Int32, v6: Int32?), to address: String, port: UInt16) -> Bool {
        guard var target = socketAddress(address, port: port) else { return false }
        let family = Int32(target.address.ss_family)
        guard let descriptor = family == AF_INET6 ? sockets.v6 : sockets.v4 else { return false }
        let sent = bytes.withUnsafeBytes { body in
            withUnsafePointer(to: &target.address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, body.baseAddress, body.count, Int32(MSG_DONTWAIT), $0, target.length)
                }
            }
        }
        return sent == bytes.count
    }

    /// Sends `bytes` from `descriptor` to `address:port` (IPv4) without waiting; false when it did not go.
    @discardableResult
    static func send(_ bytes: [UInt8], from descriptor: Int32, to address: String, port: UInt16) -> Bool {
        send(bytes, from: (descriptor, nil), to: address, port: port)
    }

    /// Joins 224.0.1.129 on every IPv4 interface that is up and multicast-capable (again is harmless).
    static func joinGroups(sockets: [Int32]) {
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
            for descriptor in sockets {
                _ = setsockopt(descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size))
            }
        }
    }

    /// PTP's IPv6 groups (IEEE 1588 annex E): link-local and global scope; ptp4l sends to the global one by default.
    static let ipv6Groups = ["ff02::181", "ff0e::181"]

    /// Joins PTP's IPv6 groups on every interface that has IPv6 and is up and multicast-capable
    /// (again is harmless).
    static func joinIPv6Groups(sockets: [Int32]) {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return }
        defer { freeifaddrs(list) }
        var joined = Set<UInt32>()
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(entry.pointee.ifa_flags)
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET6),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0 else { continue }
            let index = if_nametoindex(entry.pointee.ifa_name)
            guard index != 0, joined.insert(index).inserted else { continue }
            for text in ipv6Groups {
                var request = ipv6_mreq()
                inet_pton(AF_INET6, text, &request.ipv6mr_multiaddr)
                request.ipv6mr_interface = index
                for descriptor in sockets {
                    _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ipv6_mreq>.size))
                }
            }
        }
    }

    /// One waiting datagram with its kernel receive stamp (CLOCK_REALTIME, or the clock now when
    /// the kernel gave none) plus `realtimeToMonotonic` (0 keeps it on CLOCK_REALTIME), or nil
    /// when none waits.
    static func receive(_ descriptor: Int32, into buffer: inout [UInt8], realtimeToMonotonic: Int64) -> (bytes: [UInt8], from: String, arrival: Int64)? {
        var name = sockaddr_storage()
        guard let (count, stamp) = buffer.withUnsafeMutableBytes({ LinuxIO.receiveTimestamped(descriptor, into: $0, source: &name) }),
              count > 0 else { return nil }
        let arrival = (stamp != 0 ? stamp : realtimeNanoseconds()) + realtimeToMonotonic
        return (Array(buffer[0..<count]), describe(name), arrival)
    }

    /// The kernel's stamp of the datagram just sent from `descriptor` (CLOCK_REALTIME ns),
    /// waiting up to `timeoutMilliseconds`; nil when none came (a loaded machine can be late).
    /// Call `dropTransmitStamps` before the send, or a late stamp of an earlier datagram would
    /// be taken for this one's.
    static func transmitStamp(_ descriptor: Int32, timeoutMilliseconds: Int32 = 2) -> Int64? {
        let stamp = LinuxIO.transmitTimestamp(descriptor, timeoutMilliseconds: timeoutMilliseconds)
        return stamp != 0 ? stamp : nil
    }

    /// Reads and drops the transmit stamps waiting on `descriptor` (stamps of earlier datagrams
    /// that came after their sender stopped waiting).
    static func dropTransmitStamps(_ descriptor: Int32) {
        _ = LinuxIO.transmitTimestamp(descriptor, timeoutMilliseconds: 0)
    }

    /// A socket address as text: dotted IPv4, or IPv6 with its interface (`fe80::1%eth0`) when
    /// the address is scoped, so a reply can go back the way it came; "" for other families.
    static func describe(_ name: sockaddr_storage) -> String {
        var copy = name
        return withUnsafePointer(to: &copy) { pointer -> String in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            switch Int32(name.ss_family) {
            case AF_INET:
                var raw = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                return string(text)
            case AF_INET6:
                let address = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                var raw = address.sin6_addr
                inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                guard address.sin6_scope_id != 0 else { return string(text) }
                var interface = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
                let scope = if_indextoname(address.sin6_scope_id, &interface) != nil ? string(interface) : String(address.sin6_scope_id)
                return string(text) + "%" + scope
            default:
                return ""
            }
        }
    }

    /// A NUL-terminated C string in a buffer, as text.
    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Waits up to `milliseconds` for any of `descriptors` to be readable.
    static func wait(_ descriptors: [Int32], milliseconds: Int32) {
        var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = poll(&polled, nfds_t(polled.count), milliseconds)
    }

    /// CLOCK_MONOTONIC in nanoseconds (the playout's clock).
    public static func monotonicNanoseconds() -> Int64 { clock(CLOCK_MONOTONIC) }

    /// CLOCK_REALTIME in nanoseconds.
    public static func realtimeNanoseconds() -> Int64 { clock(CLOCK_REALTIME) }

    /// CLOCK_MONOTONIC minus CLOCK_REALTIME in nanoseconds: what turns a kernel stamp (realtime)
    /// into the playout's clock. Two reads back to back may be a preemption apart; read as they
    /// were, the offset is off by that time slice, and every Sync converted with it looks
    /// milliseconds early: the quickest of the follower's samples, which its line is raised
    /// through (one room of three once moved by 2 ms for 16 s that way). So the realtime read is
    /// bracketed by two monotonic ones, a few times, and the tightest bracket is taken.
    public static func realtimeToMonotonic() -> Int64 {
        realtimeToMonotonic { (monotonicNanoseconds(), realtimeNanoseconds(), monotonicNanoseconds()) }
    }

    /// A bracket this tight (10 µs) is taken at once; on a quiet machine the first one is.
    static let tightBracket: Int64 = 10_000

    /// `realtimeToMonotonic()` from `read`, which returns monotonic, realtime, monotonic read in
    /// that order: the tightest of at most four brackets, its monotonic mid-point less its realtime.
    static func realtimeToMonotonic(_ read: () -> (before: Int64, realtime: Int64, after: Int64)) -> Int64 {
        var best: (width: Int64, offset: Int64)?
        for _ in 0..<4 {
            let (before, realtime, after) = read()
            let width = after &- before
            let offset = before &+ width / 2 &- realtime
            if best == nil || width < best!.width { best = (width, offset) }
            if width <= tightBracket { break }
        }
        return best!.offset
    }

    private static func clock(_ id: clockid_t) -> Int64 {
        var time = timespec()
        clock_gettime(id, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
