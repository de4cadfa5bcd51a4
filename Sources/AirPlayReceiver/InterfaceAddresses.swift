import AirPlayWire
import Glibc
import NIOCore

/// The addresses of the network interface a connection came in on, for AirPlay 2's
/// `timingPeerInfo`: a sender that reached the box on one address may time it on another
/// (an iPhone on IPv4 and on link-local or ULA IPv6 at once).
enum InterfaceAddresses {
    /// Where the box's PTP follower can be reached for a session that came in on `local`: every
    /// address of its interface, `local` first (an IPv4-mapped address as plain IPv4). The
    /// follower listens on IPv4 and IPv6, and senders choose from the list: OwnTone takes the
    /// first address of the family it connected over (and names a link-local one with its
    /// interface), an iPhone times over any of them.
    static func timingPeers(for local: SocketAddress) -> [String] {
        sameInterface(as: local)
    }

    /// `local` first (as a sender names it, an IPv4-mapped address as plain IPv4), then every other
    /// IPv4 and IPv6 address of its interface, without scope ids; just `local` when the interface
    /// cannot be found (a wildcard address, or one on loopback only).
    static func sameInterface(as local: SocketAddress) -> [String] {
        guard let own = local.ipAddress.map(IPAddressBytes.plain) else { return [] }
        let wanted = IPAddressBytes.of(own)
        var list: UnsafeMutablePointer<ifaddrs>?
        guard !wanted.isEmpty, getifaddrs(&list) == 0, let first = list else { return [own] }
        defer { freeifaddrs(list) }
        let entries = sequence(first: first, next: { $0.pointee.ifa_next }).compactMap { entry -> (name: String, address: String)? in
            guard let raw = entry.pointee.ifa_addr, let text = text(raw) else { return nil }
            return (String(cString: entry.pointee.ifa_name), text)
        }
        guard let interface = entries.first(where: { IPAddressBytes.of($0.address) == wanted })?.name else { return [own] }
        let others = entries.filter { $0.name == interface && IPAddressBytes.of($0.address) != wanted }.map(\.address)
        return [own] + others.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    }

    /// `address`, and for an IPv6 link-local one without its scope, with the interface that
    /// holds it. The kernel leaves the scope out of a connection's own address when the peer's
    /// address is not link-local (an iPhone whose link-local address is still tentative writes
    /// from its ULA to ours): a socket bound by it fails with EINVAL.
    static func scoped(_ address: SocketAddress) -> SocketAddress {
        guard case .v6(let v6) = address, v6.address.sin6_scope_id == 0 else { return address }
        var raw = v6.address
        let bytes = withUnsafeBytes(of: raw.sin6_addr) { Array($0) }
        guard bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 else { return address }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return address }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let candidate = entry.pointee.ifa_addr, Int32(candidate.pointee.sa_family) == AF_INET6 else { continue }
            let held = candidate.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) } }
            guard held == bytes else { continue }
            raw.sin6_scope_id = if_nametoindex(entry.pointee.ifa_name)
            return SocketAddress(raw, host: v6.host)
        }
        return address
    }

    /// An IPv4 or IPv6 socket address as text (no scope), nil for other families.
    private static func text(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            var raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case AF_INET6:
            var raw = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
