import AirPlayPairing
import AirPlayWire
import Logging
import NIOCore

/// What a control connection asks of the receiver (`ControlRouter`, or a test's stand-in).
protocol ControlResponding: Sendable {
    /// The reply to one request, with what the connection must do after sending it.
    func reply(to request: AirPlayRequest, connection: ConnectionContext?) -> ControlReply
    /// The response to a request the decoder refused.
    func respond(to rejection: RequestRejection) -> AirPlayResponse
    /// A response made ready to send for a request of `version` with `cseq`.
    func finish(_ response: AirPlayResponse, version: ProtocolVersion, cseq: String?) -> AirPlayResponse
}

extension ControlRouter: ControlResponding {}

/// Answers each decoded request in order on one connection.
final class ControlConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = AirPlayResponse

    static let encoderName = "airplay-response-encoder"
    static let decoderName = "airplay-request-decoder"
    static let handlerName = "airplay-control-handler"

    private let router: any ControlResponding
    private let events: EventChannels?
    private let logger: Logger
    private let timeoutState: ConnectionTimeoutState
    /// Set when the connection is over the limit: its first request gets 503 with this text.
    private let refusal: String?
    private var upgraded = false
    /// Writes waiting for a deferred answer before them (so responses keep request order).
    private var pendingWrites: EventLoopFuture<Void>?
    /// The last answer written at once, while no deferred one was waiting.
    private var lastWrite: EventLoopFuture<Void>?
    /// The connection's cipher, switched on after a pair-verify or transient pair-setup.
    private let cipher: EncryptedChannelHandler?
    /// Set when encryption was decided: the cipher's opened-frame count then. A request that
    /// arrives before the count grows was sent in clear after M3 (an on-path injection).
    private var encryptedFrom: Int?
    /// The secret the connection is encrypted under, once it is (for AirPlay 2's event keys).
    private var pairingSecret: [UInt8]?

    init(router: any ControlResponding, events: EventChannels?, timeoutState: ConnectionTimeoutState, refuse refusal: String? = nil,
         cipher: EncryptedChannelHandler? = nil, logger: Logger) {
        self.cipher = cipher
        self.timeoutState = timeoutState
        self.refusal = refusal
        self.router = router
        self.events = events
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else { return }
        timeoutState.timeouts.requestDecoded()
        if let refusal {
            refuseOverLimit(context: context, request: unwrapInboundIn(data), reason: refusal)
            return
        }
        if let from = encryptedFrom {
            guard let cipher, cipher.framesOpened > from else {
                logger.notice("a clear request after encryption was decided: closing")
                context.close(promise: nil)
                return
            }
            encryptedFrom = nil
        }
        switch unwrapInboundIn(data) {
        case .request(let request):
            let channel = context.channel
            let connection = ConnectionContext(id: ObjectIdentifier(channel), local: channel.localAddress,
                                               remote: channel.remoteAddress, pairingSecret: pairingSecret,
                                               close: { channel.close(promise: nil) })
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
                    channel.writeAndFlush(answer)
                }.recover { _ in }
                pendingWrites = next
                return
            }
            if let keys = reply.startEncryption {
                // The M4 response itself leaves in clear; every byte after it is sealed, and
                // every request after it must have come through the cipher.
                encryptedFrom = cipher?.framesOpened ?? 0
                pairingSecret = keys.sharedSecret
                let cipher = self.cipher, logger = self.logger
                let loopBound = NIOLoopBound(cipher, eventLoop: context.eventLoop)
                let write = (pendingWrites ?? context.eventLoop.makeSucceededVoidFuture()).flatMap {
                    let written = channel.writeAndFlush(response)
                    do {
                        guard let cipher = loopBound.value else { throw PairingUnavailable() }
                        try cipher.enable(keys: keys)
                    } catch {
                        logger.error("cannot encrypt the connection: closing", metadata: ["error": "\(error)"])
                        channel.close(promise: nil)
                    }
                    return written
                }
                pendingWrites = write.recover { _ in }
                return
            }
            // A reply that says so ends the connection once it is out.
            let closes = response.headers["Connection"]?.lowercased() == "close"
            if let pending = pendingWrites, reply.upgradeToEventChannel == nil {
                pendingWrites = pending.flatMap { channel.writeAndFlush(response) }.map {
                    if closes { channel.close(promise: nil) }
                }.recover { _ in }
                return
            }
            guard let session = reply.upgradeToEventChannel, let events else {
                let written = context.writeAndFlush(wrapOutboundOut(response))
                lastWrite = written
                if closes { written.whenComplete { _ in channel.close(promise: nil) } }
                return
            }
            upgraded = true
            timeoutState.timeouts.stop()
            upgrade(context: context, response: response, session: session, events: events)
        case .rejected(let rejection):
            logger.notice("request refused", metadata: [
                "response.status": "\(rejection.status)", "reason": "\(rejection.reason)",
            ])
            let response = router.respond(to: rejection)
            let channel = context.channel
            // Behind any answer still being prepared, so responses keep request order.
            let write = (pendingWrites ?? context.eventLoop.makeSucceededVoidFuture()).flatMap {
                channel.writeAndFlush(response)
            }
            pendingWrites = write.recover { _ in }
            if rejection.closesConnection {
                let channel = context.channel
                write.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    /// One connection too many: 503 in the request's protocol, then close.
    private func refuseOverLimit(context: ChannelHandlerContext, request: InboundRequest, reason: String) {
        let (version, cseq): (ProtocolVersion, String?) = switch request {
        case .request(let request): (request.version, request.cseq)
        case .rejected(let rejection): (rejection.version.name == "RTSP" ? rejection.version : .http11, rejection.cseq)
        }
        var response = router.finish(.text(status: 503, reason), version: version, cseq: cseq)
        response.headers.replaceOrAdd(name: "Connection", value: "close")
        logger.notice("connection refused", metadata: ["reason": "\(reason)"])
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(response)).whenComplete { _ in channel.close(promise: nil) }
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
            pipeline.removeHandler(name: Self.handlerName)
        }.flatMapThrowing {
            try replies.add(to: pipeline)
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

    /// No cipher handler in this pipeline.
    private struct PairingUnavailable: Error {}

    /// The peer half-closed (it sends nothing more, as `nc -N` and scripted clients do): every
    /// answer still owed goes out, the deferred ones too, then the connection closes.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else { return context.fireUserInboundEventTriggered(event) }
        let channel = context.channel
        let owed = [pendingWrites, lastWrite].compactMap { $0 }
        EventLoopFuture.andAllComplete(owed, on: context.eventLoop).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or broken pipe from a vanished peer ends the session; the daemon goes on.
        logger.info("control connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
