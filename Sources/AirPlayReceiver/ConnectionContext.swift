import NIOCore

/// Who sent a request: the control connection it came on.
public struct ConnectionContext: Sendable {
    /// Identifies the connection while it is open.
    public var id: ObjectIdentifier
    /// Our address on it (UDP ports for RAOP are bound on the same address).
    public var local: SocketAddress?
    /// The peer's address.
    public var remote: SocketAddress?
    /// Closes the connection (a sender that is taken over loses its RTSP session too).
    public var close: @Sendable () -> Void

    /// A context from its parts.
    public init(id: ObjectIdentifier, local: SocketAddress?, remote: SocketAddress?, close: @escaping @Sendable () -> Void) {
        self.id = id
        self.local = local
        self.remote = remote
        self.close = close
    }
}
