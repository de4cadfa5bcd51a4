import Foundation
import NIOCore

/// A UDP socket connected to one address, written from the caller's thread: the path a RAOP
/// stream's audio takes (125 packets a second). Measured through the event loop, each packet
/// cost a hop onto it, a pipeline pass and the address converted for `sendmsg`: a quarter of
/// `airplay stream`'s CPU. Here it is one `send` on the streamer's thread.
///
/// `@unchecked Sendable`: the descriptor is written under `lock` only when closed; `send` may
/// be called from any thread (the kernel serialises datagrams).
final class ConnectedUDPSocket: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: Int32

    /// A socket connected to `address`, sending from `local` (any port) when given; nil when
    /// the system refuses one.
    ///
    /// A receiver takes a session's datagrams only from the address its RTSP connection came
    /// from, so they must leave from that same address. Left to the kernel, the source is
    /// picked when the socket connects, and it can differ: a host whose IPv6 link-local address
    /// was still tentative when the RTSP connection opened (it went out from a ULA) but valid by
    /// SETUP sent all its audio from the link-local one, and the box dropped every packet.
    init?(to address: SocketAddress, from local: SocketAddress? = nil) {
        let family = address.protocol == .inet6 ? AF_INET6 : AF_INET
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        // A refused bind (never seen: the address is ours) leaves the choice to the kernel.
        _ = local?.withSockAddr { bind(descriptor, $0, socklen_t($1)) }
        let connected = address.withSockAddr { connect(descriptor, $0, socklen_t($1)) }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    deinit { close() }

    /// Sends one datagram without waiting; a datagram the kernel cannot take now is lost, as on
    /// the network (the receiver asks for it again).
    func send(_ bytes: [UInt8]) {
        let descriptor = lock.withLock { self.descriptor }
        guard descriptor >= 0 else { return }
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    }

    /// Closes the socket (once).
    func close() {
        lock.withLock {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }
}
