import Glibc
import NIOCore

extension SocketAddress {
    /// The same address with another port, everything else kept: an IPv6 link-local address's
    /// scope (its interface) included, which the address's text (`fe80::1`) loses. Nil for a
    /// Unix socket address.
    public func withPort(_ port: Int) -> SocketAddress? {
        switch self {
        case .v4(let address):
            var raw = address.address
            raw.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            return SocketAddress(raw, host: address.host)
        case .v6(let address):
            var raw = address.address
            raw.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            return SocketAddress(raw, host: address.host)
        default:
            return nil
        }
    }
}
