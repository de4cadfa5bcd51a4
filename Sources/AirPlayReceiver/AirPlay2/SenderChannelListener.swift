import Glibc
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP port for one connection from a control connection's sender (an AirPlay 2 event
/// channel, a data stream): bound and listening on the address the sender reached at once (the
/// reply that names the port must not come first: pyatv connects at once and only retries a
/// refused connect), then served; the first connection from the sender's host is kept, the
/// rest refused. Closing it closes the listener and that connection.
final class SenderChannelListener: Sendable {
    /// The port the sender is told.
    let port: Int
    private let descriptor: CInt
    private let expectedHost: [UInt8]?
    private let state = NIOLockedValueBox<(listener: (any Channel)?, accepted: (any Channel)?, closed: Bool)>((nil, nil, false))

    /// Binds and listens on `connection`'s local address.
    init(connection: ConnectionContext) throws {
        (descriptor, port) = try RAOPPorts.bind(local: connection.local, type: SOCK_STREAM, listening: true)
        expectedHost = connection.remote.map(RAOPPorts.hostBytes)
    }

    /// Serves the port on `group`: the admitted connection gets its handlers from `configure`.
    func serve(on group: any EventLoopGroup, configure: @escaping @Sendable (any Channel) throws -> Void) {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4)
            .childChannelInitializer { [weak self] child in
                guard let self, self.admit(child) else { return child.close() }
                return child.eventLoop.makeCompletedFuture { try configure(child) }
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
    private func admit(_ child: any Channel) -> Bool {
        guard let remote = child.remoteAddress, expectedHost == nil || RAOPPorts.hostBytes(remote) == expectedHost else { return false }
        return state.withLockedValue { state in
            guard !state.closed, state.accepted == nil else { return false }
            state.accepted = child
            return true
        }
    }

    /// The sender's connection, once it came.
    var accepted: (any Channel)? { state.withLockedValue { $0.accepted } }

    /// Closes the listener and the sender's connection (once).
    func close() {
        let channels = state.withLockedValue { state -> [any Channel] in
            defer { state = (nil, nil, true) }
            return [state.listener, state.accepted].compactMap { $0 }
        }
        for channel in channels { channel.close(promise: nil) }
    }
}
