import AirPlayWire
import CLinuxIO
import Glibc

/// The socket work the PTP follower and grandmaster share: binding the PTP ports with kernel
/// time stamps, joining the multicast group, sending to an address, reading the clocks.
public enum PTPSockets {
    /// Why a PTP socket could not be set up.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What went wrong.
        public let description: String
    }

    /// A UDP socket on `port` of every address, with kernel receive and transmit time stamps,
    /// `SO_REUSEADDR` so other PTP programs (another airplayd) can bind it too.
    static func bind(port: UInt16) throws(Failure) -> Int32 {
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

    /// Sends `bytes` from `descriptor` to `address:port` (IPv4) without waiting; false when it did not go.
    @discardableResult
    static func send(_ bytes: [UInt8], from descriptor: Int32, to address: String, port: UInt16) -> Bool {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &target.sin_addr) == 1 else { return false }
        let sent = bytes.withUnsafeBytes { body in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, body.baseAddress, body.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count
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

    /// One waiting datagram with its kernel receive stamp (CLOCK_REALTIME, or the clock now when
    /// the kernel gave none) plus `realtimeToMonotonic` (0 keeps it on CLOCK_REALTIME), or nil
    /// when none waits.
    static func receive(_ descriptor: Int32, into buffer: inout [UInt8], realtimeToMonotonic: Int64) -> (bytes: [UInt8], from: String, arrival: Int64)? {
        var name = sockaddr_storage()
        var stamp: Int64 = 0
        let count = buffer.withUnsafeMutableBytes { clinuxio_receive_timestamped(descriptor, $0.baseAddress, $0.count, &name, &stamp) }
        guard count > 0 else { return nil }
        let arrival = (stamp != 0 ? stamp : realtimeNanoseconds()) + realtimeToMonotonic
        return (Array(buffer[0..<count]), describe(name), arrival)
    }

    /// The kernel's stamp of the datagram just sent from `descriptor` (CLOCK_REALTIME ns), else `fallback`.
    static func transmitStamp(_ descriptor: Int32, fallback: Int64) -> Int64 {
        let stamp = clinuxio_transmit_timestamp(descriptor, 2)
        return stamp != 0 ? stamp : fallback
    }

    /// The dotted IPv4 address of a socket address ("" for other families).
    static func describe(_ name: sockaddr_storage) -> String {
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

    /// Waits up to `milliseconds` for any of `descriptors` to be readable.
    static func wait(_ descriptors: [Int32], milliseconds: Int32) {
        var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        _ = poll(&polled, nfds_t(polled.count), milliseconds)
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
