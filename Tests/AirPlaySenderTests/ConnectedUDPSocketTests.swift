import Glibc
import NIOCore
import Testing
@testable import AirPlaySender

/// A stream's audio leaves from the address its RTSP connection came from: a receiver drops
/// datagrams from any other address of the sender's host as a stranger's.
@Suite struct ConnectedUDPSocketTests {
    /// A UDP socket on 127.0.0.1 and an ephemeral port, and that port.
    private static func listener() throws -> (Int32, Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(descriptor >= 0)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let any = try SocketAddress(ipAddress: "127.0.0.1", port: 0)
        try #require(any.withSockAddr { bind(descriptor, $0, socklen_t($1)) } == 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The source address of the next datagram `descriptor` receives, as text.
    private static func sourceOfNextDatagram(_ descriptor: Int32) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 64)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &source) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, &buffer, buffer.count, 0, $0, &length) }
        }
        try #require(count == 3, "the datagram arrived")
        let host = UInt32(bigEndian: source.sin_addr.s_addr)
        return [24, 16, 8, 0].map { String((host >> $0) & 0xFF) }.joined(separator: ".")
    }

    /// Aimed at 127.0.0.1 the kernel would send from 127.0.0.1; told to send from 127.0.0.2
    /// (as from the RTSP connection's own end), the socket does.
    @Test func datagramsLeaveFromTheAddressAskedFor() throws {
        let (descriptor, port) = try Self.listener()
        defer { close(descriptor) }
        let receiver = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        let unbound = try #require(ConnectedUDPSocket(to: receiver))
        unbound.send([1, 2, 3])
        #expect(try Self.sourceOfNextDatagram(descriptor) == "127.0.0.1")
        let bound = try #require(ConnectedUDPSocket(to: receiver, from: try SocketAddress(ipAddress: "127.0.0.2", port: 0)))
        bound.send([1, 2, 3])
        #expect(try Self.sourceOfNextDatagram(descriptor) == "127.0.0.2")
    }
}
