import AirPlayWire
import FoundationEssentials
import Glibc
import NIOCore
import NIOPosix

/// The three UDP ports of a RAOP session.
enum RAOPPortRole: String, Hashable, Sendable, CaseIterable {
    /// `server_port`: audio packets.
    case audio
    /// `control_port`: sync packets, resend requests and retransmissions.
    case control
    /// `timing_port`: NTP-like timing requests and replies.
    case timing
}

/// Binding a session's UDP ports and the per-packet address checks.
enum RAOPPorts {
    /// Binds a UDP socket on `local` (the control connection's own address), port 0,
    /// synchronously: SETUP's reply needs the port, and a bind is a non-blocking system call. NIO
    /// adopts the socket afterwards; datagrams that arrive before wait in it.
    static func bindUDP(local: SocketAddress?) throws -> (NIOBSDSocket.Handle, Int) {
        try bind(local: local, type: SOCK_DGRAM, listening: false)
    }

    /// Binds a socket of `type` on `local`'s address, port 0 (and listens, for a TCP one);
    /// returns it and its port. The UDP ports and AirPlay 2's event and data ports are made this
    /// way. The address is taken whole, an IPv6 link-local one's scope (interface) included: by
    /// its text alone (`fe80::1`) the bind fails with EINVAL. Nil binds every IPv4 address.
    static func bind(local: SocketAddress?, type: __socket_type, listening: Bool) throws -> (NIOBSDSocket.Handle, Int) {
        let address = try portZero(local)
        let family = address.protocol == .inet6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        guard address.withSockAddr({ Glibc.bind(descriptor, $0, socklen_t($1)) }) == 0,
              !listening || Glibc.listen(descriptor, 4) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw IOError(errnoCode: code, reason: (listening ? "bind/listen " : "bind ") + "\(address)")
        }
        return (descriptor, boundPort(descriptor, family: family))
    }

    /// `local` with port 0, scope id kept; 0.0.0.0 when there is none.
    static func portZero(_ local: SocketAddress?) throws -> SocketAddress {
        try local.map(InterfaceAddresses.scoped)?.withPort(0) ?? SocketAddress(ipAddress: "0.0.0.0", port: 0)
    }

    /// The port a socket of `family` was bound to (`getsockname`).
    static func boundPort(_ descriptor: NIOBSDSocket.Handle, family: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return withUnsafePointer(to: &storage) { pointer -> Int in
            family == AF_INET6
                ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// Hands a bound socket to NIO with `handler`; `adopted` runs with the channel once it is live.
    static func adopt(_ descriptor: NIOBSDSocket.Handle, group: any EventLoopGroup, handler: RAOPDatagramHandler,
                      adopted: @escaping @Sendable (any Channel) -> Void) {
        DatagramBootstrap(group: group)
            // NIO reads 2 KiB datagrams by default; ALAC packets of 4096 frames are larger.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .withBoundSocket(descriptor)
            .whenComplete { result in
                if case .success(let channel) = result { adopted(channel) }
            }
    }

    /// Sends one datagram on an adopted UDP socket, on its channel's event loop (so never after
    /// NIO has closed the socket), with `sendto` itself rather than through the channel: NIO
    /// closes a datagram channel on any send error but two, and a local firewall's EPERM, a
    /// full queue's ENOBUFS or a moment of ENETUNREACH on Wi-Fi must cost one request, not the
    /// session's control or timing port. A request that could not leave is simply lost, as on
    /// the wire; the machine asks again.
    static func send(_ bytes: [UInt8], on channel: any Channel, descriptor: Int32, to destination: SocketAddress) {
        channel.eventLoop.execute {
            guard channel.isActive else { return }
            destination.withSockAddr { address, length in
                _ = bytes.withUnsafeBytes { Glibc.sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), address, socklen_t(length)) }
            }
        }
    }

    /// The host part of an address as 4 bytes (IPv4, also IPv4-mapped IPv6) or 16 (IPv6), read
    /// straight from the socket address: no text on the per-packet path.
    static func hostBytes(_ address: SocketAddress) -> [UInt8] {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { isIPv4Mapped($0) ? Array($0.suffix(4)) : Array($0) }
        default:
            return []
        }
    }

    /// True for an IPv6 address of the form ::ffff:a.b.c.d (the IPv4 host a.b.c.d).
    static func isIPv4Mapped(_ address: UnsafeRawBufferPointer) -> Bool {
        address.count == 16 && address[10] == 0xFF && address[11] == 0xFF && (0..<10).allSatisfy { address[$0] == 0 }
    }

    /// The sender's address with another port (its control or timing port from SETUP).
    static func address(_ remote: SocketAddress, port: UInt16) -> SocketAddress {
        var address = remote
        address.port = Int(port)
        return address
    }
}

/// Receives the control or timing port's datagrams for a session (a few a second) and hands
/// them, parsed, to `AudioSessions`; the audio port is a `UDPDatagramSocket` the playout reads.
///
/// `@unchecked Sendable`: NIO calls it on its channel's loop only; the references it keeps are
/// to `Sendable` objects.
final class RAOPDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let role: RAOPPortRole
    private weak var session: RAOPSessionResources?
    private weak var owner: AudioSessions?

    init(role: RAOPPortRole, session: RAOPSessionResources, owner: AudioSessions) {
        self.role = role
        self.session = session
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let session, let owner else { return }
        // Only the sender whose RTSP session this is may feed it, from any of its ports
        // (PulseAudio and PipeWire send audio from an ephemeral one).
        guard RAOPPorts.hostBytes(envelope.remoteAddress) == session.senderHost else {
            owner.dropped(session, .strayHost, "datagram from another host (\(role))")
            return
        }
        guard let packet = RAOPPacket.parse(Array(envelope.data.readableBytesView)) else {
            owner.dropped(session, .malformed, "not a RAOP packet (\(role), \(envelope.data.readableBytes) bytes)")
            return
        }
        switch (role, packet) {
        case (.control, .retransmitted(let audio)):
            owner.audioPacket(audio, session: session, retransmitted: true)
        case (.control, .sync(let sync)):
            owner.senderAlive(session)
            session.timeline.addSync(sync)
        case (.control, .ptpAnchor(let anchor)) where session.anchored != nil && !session.buffered:
            owner.senderAlive(session)
            owner.realtimeAnchor(anchor, session: session)
        case (.timing, .timingReply(let reply)):
            session.timeline.addTimingReply(reply)
        case (.timing, .timingRequest(let request)):
            // Answer a sender's timing request with our clock.
            let reply = RAOPTiming.reply(to: request, clock: NTPClock.now).bytes(reply: true)
            var buffer = context.channel.allocator.buffer(capacity: reply.count)
            buffer.writeBytes(reply)
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
        default:
            owner.dropped(session, .malformed, "unexpected packet on the \(role) port")
        }
    }
}

/// The wall clock as NTP 32.32 fixed point (seconds since 1900).
enum NTPClock {
    static func now() -> UInt64 { NTPTime.timestamp(NTPTime.wallClock()) }
}
