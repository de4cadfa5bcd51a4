@testable import AirPlayTiming
import AirPlayWire
import Glibc
import Testing

/// PTP over IPv6: how a datagram's source is named, and how that name is sent back to.
@Suite struct PTPSocketsIPv6Tests {
    /// A link-local source is named with its interface (by name), and that text is a socket
    /// address again with the same interface, so a Delay_Req goes back out the link it came in on.
    @Test func aLinkLocalSourceKeepsItsInterface() throws {
        let loopback = if_nametoindex("lo")
        var source = sockaddr_in6()
        source.sin6_family = sa_family_t(AF_INET6)
        source.sin6_scope_id = loopback
        inet_pton(AF_INET6, "fe80::a0b:cff:fe0d:e0f", &source.sin6_addr)
        var storage = sockaddr_storage()
        withUnsafeBytes(of: source) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
        let text = PTPSockets.describe(storage)
        #expect(text == "fe80::a0b:cff:fe0d:e0f%lo")
        let back = try #require(PTPSockets.socketAddress(text, port: 319))
        let parsed = withUnsafeBytes(of: back.address) { $0.load(as: sockaddr_in6.self) }
        #expect(Int32(parsed.sin6_family) == AF_INET6 && parsed.sin6_scope_id == loopback && UInt16(bigEndian: parsed.sin6_port) == 319)
    }

    /// Global and ULA addresses carry no interface; IPv4 stays dotted; names are never looked up.
    @Test func otherAddressesAsTheyAre() throws {
        #expect(PTPSockets.socketAddress("fd97::1", port: 320) != nil)
        #expect(PTPSockets.socketAddress("10.0.0.1", port: 320).map { Int32($0.address.ss_family) } == AF_INET)
        #expect(PTPSockets.socketAddress("localhost", port: 320) == nil, "no name resolution on a sender's say-so")
        #expect(PTPSockets.socketAddress("fe80::1%nosuchinterface0", port: 320) == nil)
    }

    /// Addresses in a sender's `timingPeerInfo` and in a datagram's source name the same host
    /// whatever their spelling.
    @Test func hostsCompareByAddressNotSpelling() {
        #expect(IPAddressBytes.host("FE80:0:0:0:0A0B:0CFF:FE0D:0E0F") == "fe80::a0b:cff:fe0d:e0f")
        #expect(IPAddressBytes.host("fe80::a0b:cff:fe0d:e0f%veth1") == "fe80::a0b:cff:fe0d:e0f")
        #expect(IPAddressBytes.host("::ffff:10.0.0.5") == "10.0.0.5")
        #expect(IPAddressBytes.host("10.0.0.5") == "10.0.0.5")
        #expect(IPAddressBytes.host("not an address") == "not an address")
    }
}
