import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The TCP control port: HTTP and RTSP requests framed by `AirPlayRequestDecoder`, answered by a `ControlRouter`.
public final class ControlServer: Sendable {
    private let group: any EventLoopGroup
    private let router: ControlRouter
    private let logger: Logger
    private let limits: RequestLimits
    private let connections = ConnectionRegistry()
    private let events: EventChannels?
    private let serverChannel = NIOLockedValueBox<(any Channel)?>(nil)

    /// A server; call `bind` to listen.
    public init(group: any EventLoopGroup, router: ControlRouter, events: EventChannels? = nil,
                limits: RequestLimits = .default, logger: Logger) {
        self.events = events
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
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                connections.add(channel)
                var connectionLogger = logger
                connectionLogger[metadataKey: "peer"] = "\(channel.remoteAddress.map(Self.describe) ?? "unknown")"
                connectionLogger.info("control connection opened")
                let sessionLogger = connectionLogger
                channel.closeFuture.whenComplete { _ in
                    connections.remove(channel)
                    router.audio?.connectionClosed(ObjectIdentifier(channel))
                    sessionLogger.info("control connection closed")
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ResponseWriter(), name: ControlConnectionHandler.encoderName)
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(AirPlayRequestDecoder(limits: limits)), name: ControlConnectionHandler.decoderName)
                    try channel.pipeline.syncOperations.addHandler(
                        ControlConnectionHandler(router: router, events: events, logger: sessionLogger))
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

/// Answers each decoded request in order on one connection.
final class ControlConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = AirPlayResponse

    static let encoderName = "airplay-response-encoder"
    static let decoderName = "airplay-request-decoder"

    private let router: ControlRouter
    private let events: EventChannels?
    private let logger: Logger
    private var upgraded = false
    /// Writes waiting for a deferred answer before them (so responses keep request order).
    private var pendingWrites: EventLoopFuture<Void>?

    init(router: ControlRouter, events: EventChannels?, logger: Logger) {
        self.router = router
        self.events = events
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else { return }
        switch unwrapInboundIn(data) {
        case .request(let request):
            let channel = context.channel
            let connection = ConnectionContext(id: ObjectIdentifier(channel), local: channel.localAddress,
                                               remote: channel.remoteAddress, close: { channel.close(promise: nil) })
            let reply = router.reply(to: request, connection: connection)
            let response = reply.response
            logger.debug("request", metadata: [
                "request.method": "\(request.method)", "request.path": "\(request.path.prefix(200))",
                "response.status": "\(reply.deferred == nil ? String(response.status) : "deferred")",
            ])
            if let deferred = reply.deferred {
                // Answers that take I/O are written when ready, still in request order.
                let eventLoop = context.eventLoop
                let previous = pendingWrites ?? eventLoop.makeSucceededVoidFuture()
                let next = previous.flatMap { deferred(eventLoop) }.flatMap { answer in
                    channel.writeAndFlush(NIOAny(answer))
                }.recover { _ in }
                pendingWrites = next
                return
            }
            if let pending = pendingWrites, reply.upgradeToEventChannel == nil {
                pendingWrites = pending.flatMap { channel.writeAndFlush(NIOAny(response)) }.recover { _ in }
                return
            }
            guard let session = reply.upgradeToEventChannel, let events else {
                context.writeAndFlush(wrapOutboundOut(response), promise: nil)
                return
            }
            upgraded = true
            upgrade(context: context, response: response, session: session, events: events)
        case .rejected(let rejection):
            logger.notice("request refused", metadata: [
                "response.status": "\(rejection.status)", "reason": "\(rejection.reason)",
            ])
            let response = router.respond(to: rejection)
            let channel = context.channel
            // Behind any answer still being prepared, so responses keep request order.
            let write = (pendingWrites ?? context.eventLoop.makeSucceededVoidFuture()).flatMap {
                channel.writeAndFlush(NIOAny(response))
            }
            pendingWrites = write.recover { _ in }
            if rejection.closesConnection {
                let channel = context.channel
                write.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    /// After the 101, the connection is ours to write requests on: drop the HTTP codecs and
    /// ignore whatever the sender answers (its replies to our `POST /event`).
    private func upgrade(context: ChannelHandlerContext, response: AirPlayResponse, session: String, events: EventChannels) {
        let channel = context.channel
        let pipeline = context.pipeline
        let logger = self.logger
        let replies = EventChannelReplies()
        context.writeAndFlush(wrapOutboundOut(response)).flatMap {
            pipeline.removeHandler(name: Self.decoderName)
        }.flatMap {
            pipeline.removeHandler(name: Self.encoderName)
        }.flatMap {
            pipeline.removeHandler(self)
        }.flatMap {
            pipeline.addHandler(replies)
        }.whenComplete { result in
            switch result {
            case .success:
                events.register(sessionID: session, channel: channel, replies: replies)
                logger.info("event channel open", metadata: ["session": "\(session)"])
            case .failure(let error):
                logger.warning("event channel upgrade failed", metadata: ["error": "\(error)"])
                channel.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or broken pipe from a vanished peer ends the session; the daemon goes on.
        logger.info("control connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
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
/// replies to key requests complete their promise. Bounded: a sender that floods us is cut off.
final class EventChannelReplies: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private var buffer = ByteBuffer()
    private var waiting: [EventLoopPromise<AirPlayResponse>?] = []
    private let decoder = AirPlayResponseDecoder()

    /// Notes that a request went out (on the channel's event loop, in write order).
    func expect(_ promise: EventLoopPromise<AirPlayResponse>?) { waiting.append(promise) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.writeBuffer(&incoming)
        do {
            while let response = try decoder.next(from: &buffer) {
                guard !waiting.isEmpty else { continue }
                waiting.removeFirst()?.succeed(response)
            }
        } catch {
            context.close(promise: nil)
        }
        buffer.discardReadBytes()
        if buffer.readableBytes > 1 << 20 { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        for promise in waiting { promise?.fail(ChannelError.ioOnClosedChannel) }
        waiting = []
        context.fireChannelInactive()
    }
}

/// The open connections, so shutdown can close them all.
final class ConnectionRegistry: Sendable {
    private let channels = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) { channels.withLockedValue { $0[ObjectIdentifier(channel)] = channel } }
    func remove(_ channel: any Channel) { _ = channels.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var count: Int { channels.withLockedValue { $0.count } }

    func closeAll() async {
        let open = channels.withLockedValue { Array($0.values) }
        for channel in open { try? await channel.close() }
    }
}
