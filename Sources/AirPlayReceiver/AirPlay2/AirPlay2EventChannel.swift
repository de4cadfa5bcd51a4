import AirPlayPairing
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The event channel of one AirPlay 2 session: a TCP port the sender connects to after SETUP
/// phase 1, encrypted from its first byte with keys from the control connection's pairing
/// (`Events-Salt`; the receiver writes with `Events-Write-Encryption-Key`).
///
/// The port is bound and listening before SETUP's reply names it (pyatv connects at once and
/// only retries a refused connect). One connection is kept, from the sender's host only; what
/// the sender writes on it is opened and dropped (pyatv writes nothing; the receiver's own
/// requests on it, `updateInfo` and remote commands, come with the now-playing work). Closing
/// the session closes the listener and the connection.
final class AirPlay2EventChannel: Sendable {
    /// The port the sender is told (`eventPort`).
    let port: Int
    /// The control connection the session belongs to.
    let connection: ConnectionContext
    private let state = NIOLockedValueBox<(listener: (any Channel)?, accepted: (any Channel)?, closed: Bool)>((nil, nil, false))

    /// Binds a listening socket on `connection`'s local address (synchronously: the reply needs
    /// the port) and serves it on `group`.
    init(connection: ConnectionContext, keys: EventChannelKeys, group: any EventLoopGroup, logger: Logger) throws {
        self.connection = connection
        let (descriptor, port) = try RAOPPorts.bind(local: connection.local, type: SOCK_STREAM, listening: true)
        self.port = port
        let expectedHost = connection.remote.map(RAOPPorts.hostBytes)
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4)
            .childChannelInitializer { [weak self] child in
                guard let self, self.admit(child, expectedHost: expectedHost) else {
                    return child.close()
                }
                return child.eventLoop.makeCompletedFuture {
                    let cipher = EncryptedChannelHandler(role: .receiver) { reason in
                        logger.notice("AirPlay 2 event channel frame refused", metadata: ["reason": "\(reason)"])
                    }
                    try cipher.enable(keys: keys)
                    try child.pipeline.syncOperations.addHandlers([cipher, DiscardingHandler()])
                }
            }
            .withBoundSocket(descriptor)
            .whenComplete { [weak self] result in
                guard case .success(let listener) = result else { return }
                let keep = self?.state.withLockedValue { state -> Bool in
                    guard !state.closed else { return false }
                    state.listener = listener
                    return true
                } ?? false
                if !keep { listener.close(promise: nil) }
            }
    }

    /// Keeps the first connection from the sender's host; refuses the rest.
    private func admit(_ child: any Channel, expectedHost: [UInt8]?) -> Bool {
        guard let remote = child.remoteAddress, expectedHost == nil || RAOPPorts.hostBytes(remote) == expectedHost else { return false }
        return state.withLockedValue { state in
            guard !state.closed, state.accepted == nil else { return false }
            state.accepted = child
            return true
        }
    }

    /// Whether the sender has connected.
    var isConnected: Bool { state.withLockedValue { $0.accepted?.isActive ?? false } }

    /// Closes the listener and the sender's connection (once).
    func close() {
        let channels = state.withLockedValue { state -> [any Channel] in
            defer { state = (nil, nil, true) }
            return [state.listener, state.accepted].compactMap { $0 }
        }
        for channel in channels { channel.close(promise: nil) }
    }
}

/// Opens and drops what a sender writes on its event channel: nothing there is for us yet, and
/// nothing is kept.
private final class DiscardingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
