import AirPlayPairing
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// How many control connections are served and how long each may wait.
public struct ControlConnectionPolicy: Hashable, Sendable {
    /// Connections served at once; beyond them a newcomer takes the place of one doing nothing
    /// useful (`ConnectionAdmission`), else gets 503 and is closed.
    public var maxConnections: Int
    /// Request and idle time-outs.
    public var timeouts: ConnectionTimeouts.Limits

    /// A policy from its parts.
    public init(maxConnections: Int, timeouts: ConnectionTimeouts.Limits) {
        self.maxConnections = maxConnections
        self.timeouts = timeouts
    }

    /// 32 connections, 10 s per request, 120 s idle.
    public static let `default` = ControlConnectionPolicy(maxConnections: 32, timeouts: .default)
}

/// The TCP control port: HTTP and RTSP requests framed by `AirPlayRequestDecoder`, answered by a `ControlRouter`.
public final class ControlServer: Sendable {
    private let group: any EventLoopGroup
    private let router: ControlRouter
    private let logger: Logger
    private let limits: RequestLimits
    private let policy: ControlConnectionPolicy
    private let connections = ConnectionRegistry()
    private let events: EventChannels?
    private let serverChannel = NIOLockedValueBox<(any Channel)?>(nil)

    /// A server; call `bind` to listen.
    public init(group: any EventLoopGroup, router: ControlRouter, events: EventChannels? = nil,
                limits: RequestLimits = .default, policy: ControlConnectionPolicy = .default, logger: Logger) {
        self.events = events
        self.policy = policy
        self.group = group
        self.router = router
        self.limits = limits
        self.logger = logger
    }

    /// Listens on all addresses (IPv6 and IPv4 where the system allows both); returns the bound port.
    public func bind(host: String = "::", port: Int) async throws -> Int {
        let router = self.router
        let logger = self.logger
        let limits = self.limits
        let connections = self.connections
        let events = self.events
        let policy = self.policy
        let bootstrap = ServerBootstrap(group: group)
            // A crowd connecting at once (a thousand in the load test) must not overflow the
            // accept queue: dropped SYNs are retried by clients only after seconds.
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // TCP_NODELAY at the TCP level: as a socket-level option its number (1) is SO_DEBUG, which
            // needs CAP_NET_ADMIN, and without it every connection was reset (a daemon under its
            // unit's dynamic user, `airplay` run by a user).
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            // A peer that half-closes still gets its answers (ControlConnectionHandler closes
            // once they are out) rather than a connection closed at its end of input.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                let timeoutState = ConnectionTimeoutState(limits: policy.timeouts)
                let id = ObjectIdentifier(channel)
                let holdsSession: @Sendable () -> Bool = { router.audio?.ownsSession(id) ?? false }
                let decision = connections.admit(channel, timeoutState: timeoutState, holdsSession: holdsSession, limit: policy.maxConnections)
                let overLimit = if case .refuse = decision { true } else { false }
                var connectionLogger = logger
                connectionLogger[metadataKey: "peer"] = "\(channel.remoteAddress.map(Self.describe) ?? "unknown")"
                connectionLogger.info("control connection opened")
                if case .serveInPlaceOf(let evicted) = decision {
                    connectionLogger.notice("all \(policy.maxConnections) connections taken: closing one that waited, \(evicted.remoteAddress.map(Self.describe) ?? "unknown")")
                    evicted.close(promise: nil)
                }
                let sessionLogger = connectionLogger
                channel.closeFuture.whenComplete { _ in
                    connections.remove(channel)
                    router.audio?.connectionClosed(ObjectIdentifier(channel))
                    router.pairing?.connectionClosed(ObjectIdentifier(channel))
                    router.videoPassword?.connectionClosed(ObjectIdentifier(channel))
                    sessionLogger.info("control connection closed")
                }
                return channel.eventLoop.makeCompletedFuture {
                    let cipher = EncryptedChannelHandler(role: .receiver) { reason in
                        sessionLogger.notice("encrypted frame does not authenticate: closing", metadata: ["error": "\(reason)"])
                    }
                    try channel.pipeline.syncOperations.addHandler(cipher)
                    try channel.pipeline.syncOperations.addHandler(ConnectionActivityHandler(
                        timeoutState: timeoutState, holdsSession: holdsSession, serverHeader: router.serverHeader,
                        logger: sessionLogger))
                    try channel.pipeline.syncOperations.addHandler(
                        ResponseWriter(), name: ControlConnectionHandler.encoderName)
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(AirPlayRequestDecoder(limits: limits)), name: ControlConnectionHandler.decoderName)
                    try channel.pipeline.syncOperations.addHandler(
                        ControlConnectionHandler(router: router, events: events, timeoutState: timeoutState, refuse: overLimit
                            ? "this receiver serves \(policy.maxConnections) connections at once; try again later" : nil,
                            cipher: cipher, logger: sessionLogger), name: ControlConnectionHandler.handlerName)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch where host == "::" {
            // No IPv6 on this machine: listen on IPv4 only.
            channel = try await bootstrap.bind(host: "0.0.0.0", port: port).get()
        }
        serverChannel.withLockedValue { $0 = channel }
        return channel.localAddress?.port ?? port
    }

    /// Stops accepting, closes every open session and waits for them to end.
    public func shutdown() async {
        let channel = serverChannel.withLockedValue { value -> (any Channel)? in
            defer { value = nil }
            return value
        }
        try? await channel?.close()
        await connections.closeAll()
    }

    /// The number of open control connections.
    public var openConnections: Int { connections.count }

    static func describe(_ address: SocketAddress) -> String {
        switch address {
        case .v4: "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
        case .v6: "[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
        default: "\(address)"
        }
    }
}

/// Serialises responses; removable, unlike NIO's MessageToByteHandler, for the /reverse upgrade.
final class ResponseWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = AirPlayResponse
    typealias OutboundOut = ByteBuffer

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let response = unwrapOutboundIn(data)
        var buffer = context.channel.allocator.buffer(capacity: 256 + response.body.readableBytes)
        AirPlayResponseEncoder.write(response, into: &buffer)
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}

/// Reads the sender's replies on an event channel, in order: replies to events are dropped,
/// replies to key requests complete their promise. Behind a `ByteToMessageHandler` with an
/// `AirPlayResponseFrameDecoder` (`add(to:)`), bounded: a sender that floods us is cut off.
final class EventChannelReplies: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AirPlayResponse
    private var waiting: [EventLoopPromise<AirPlayResponse>?] = []
    /// The most a sender may have sent of replies not yet whole.
    static let maximumHeldBytes = 1 << 20

    /// Notes that a request went out (on the channel's event loop, in write order).
    func expect(_ promise: EventLoopPromise<AirPlayResponse>?) { waiting.append(promise) }

    /// Adds the frame decoder and this handler to `pipeline`, on the channel's event loop.
    func add(to pipeline: ChannelPipeline) throws {
        try pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayResponseFrameDecoder(), maximumBufferSize: Self.maximumHeldBytes))
        try pipeline.syncOperations.addHandler(self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let response = unwrapInboundIn(data)
        guard !waiting.isEmpty else { return }
        waiting.removeFirst()?.succeed(response)
    }

    /// A malformed reply, or more held than the bound: the channel closes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The sender closed its side of the event channel: it is gone (half-closure is allowed on
    /// the control port for requests, not for events).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else { return context.fireUserInboundEventTriggered(event) }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for promise in waiting { promise?.fail(ChannelError.ioOnClosedChannel) }
        waiting = []
        context.fireChannelInactive()
    }
}

/// The open connections: admission (`ConnectionAdmission`) decides on each newcomer over them,
/// and shutdown closes them all.
final class ConnectionRegistry: Sendable {
    /// What admission needs of a connection.
    private struct Entry {
        var channel: any Channel
        var peer: String
        var timeoutState: ConnectionTimeoutState
        var holdsSession: @Sendable () -> Bool
    }

    /// The decision carried out: served, served in another's place (to be closed), or refused.
    enum Admission {
        case serve
        case serveInPlaceOf(any Channel)
        case refuse
    }

    private let channels = NIOLockedValueBox<[ObjectIdentifier: Entry]>([:])

    /// Decides on `channel` and records it (a refused one too, until it closes: it is being told 503).
    func admit(_ channel: any Channel, timeoutState: ConnectionTimeoutState, holdsSession: @escaping @Sendable () -> Bool, limit: Int) -> Admission {
        let peer = Self.peer(of: channel)
        let now = ConnectionTimeoutState.now()
        return channels.withLockedValue { table in
            guard table.count >= limit else {
                table[ObjectIdentifier(channel)] = Entry(channel: channel, peer: peer, timeoutState: timeoutState, holdsSession: holdsSession)
                return .serve
            }
            var keys: [Int: ObjectIdentifier] = [:]
            let open = table.enumerated().map { index, item -> ConnectionAdmission.Connection in
                keys[index] = item.key
                return ConnectionAdmission.Connection(id: index, peer: item.value.peer, waiting: item.value.timeoutState.timeouts.waiting,
                                                      holdsSession: item.value.holdsSession())
            }
            let decision = ConnectionAdmission.decide(newcomer: peer, open: open, limit: limit, now: now)
            table[ObjectIdentifier(channel)] = Entry(channel: channel, peer: peer, timeoutState: timeoutState, holdsSession: holdsSession)
            switch decision {
            case .serve: return .serve
            case .refuse: return .refuse
            case .serveInPlaceOf(let index):
                guard let key = keys[index], let evicted = table.removeValue(forKey: key) else { return .serve }
                // No longer waiting: it is not chosen twice before it has closed.
                return .serveInPlaceOf(evicted.channel)
            }
        }
    }

    func remove(_ channel: any Channel) { _ = channels.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var count: Int { channels.withLockedValue { $0.count } }

    func closeAll() async {
        let open = channels.withLockedValue { table in table.values.map(\.channel) }
        for channel in open { try? await channel.close() }
    }

    /// The peer's address without its port (an IPv4-mapped IPv6 address as IPv4).
    static func peer(of channel: any Channel) -> String {
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        return address.hasPrefix("::ffff:") ? String(address.dropFirst(7)) : address
    }
}
