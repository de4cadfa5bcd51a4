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
    /// The secret of the pair-verify or transient pair-setup that encrypted this connection:
    /// AirPlay 2's event channel keys derive from it. Nil on a clear connection.
    public var pairingSecret: [UInt8]?

    /// A context from its parts.
    public init(id: ObjectIdentifier, local: SocketAddress?, remote: SocketAddress?, pairingSecret: [UInt8]? = nil,
                close: @escaping @Sendable () -> Void) {
        self.id = id
        self.local = local
        self.remote = remote
        self.pairingSecret = pairingSecret
        self.close = close
    }
}
