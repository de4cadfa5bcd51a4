import AirPlayPlist
import AirPlayWire
import NIOCore
import NIOPosix

/// Supplies an HLS key the receiver cannot fetch itself (a custom-scheme URI): the key bytes,
/// or why not.
public typealias KeyProvider = @Sendable (_ uri: String) async -> Result<[UInt8], SenderError>

/// Listens on a receiver's reverse (PTTH) channel for `/event` plists of one session, and
/// answers its `POST /key` requests with a key provider.
public final class EventListener: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Opens the channel: `POST /reverse` with `Upgrade: PTTH/1.0`; after the 101 every
    /// `POST /event` the receiver sends is answered 200 and handed to `onEvent`.
    public static func open(host: String, port: Int, sessionID: String,
                            group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, keys: KeyProvider? = nil,
                            onEvent: @escaping @Sendable (PropertyList) -> Void) async throws(SenderError) -> EventListener {
        let upgraded: EventLoopPromise<Void>
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .connect(host: host, port: port).get()
            upgraded = channel.eventLoop.makePromise(of: Void.self)
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayResponseFrameDecoder()),
                                                               name: ReverseUpgradeHandler.decoderName)
                try channel.pipeline.syncOperations.addHandler(ReverseUpgradeHandler(upgraded: upgraded, keys: keys, onEvent: onEvent))
            }.get()
            var request = AirPlayRequest(method: "POST", target: "/reverse", version: .http11, headers: [
                "Upgrade": "PTTH/1.0", "Connection": "Upgrade", "X-Apple-Purpose": "event", "X-Apple-Session-ID": sessionID,
            ])
            request.body = ByteBuffer()
            var out = ByteBuffer()
            AirPlayRequestEncoder.write(request, into: &out)
            try await channel.writeAndFlush(out).get()
        } catch {
            throw SenderError(.notFound, "cannot open the event channel to \(host):\(port): \(error)")
        }
        do {
            try await upgraded.futureResult.get()
        } catch {
            try? await channel.close()
            throw SenderError(.refused(status: 0), "the receiver refused the event channel: \(error)")
        }
        return EventListener(channel: channel)
    }

    /// Completes when the receiver closes the channel.
    public func waitUntilClosed() async { try? await channel.closeFuture.get() }

    /// Closes the channel.
    public func close() async { try? await channel.close() }
}

/// Reads the receiver's answer to `POST /reverse` (behind a response frame decoder): on the 101
/// the connection turns around, and requests from the receiver are read from then on.
final class ReverseUpgradeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = AirPlayResponse
    /// The name of the response decoder in front, removed with this handler after the 101.
    static let decoderName = "reverse-response-decoder"

    private var upgraded: EventLoopPromise<Void>?
    private let keys: KeyProvider?
    private let onEvent: @Sendable (PropertyList) -> Void

    init(upgraded: EventLoopPromise<Void>, keys: KeyProvider?, onEvent: @escaping @Sendable (PropertyList) -> Void) {
        self.upgraded = upgraded
        self.keys = keys
        self.onEvent = onEvent
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let response = unwrapInboundIn(data)
        guard let promise = upgraded else { return }
        upgraded = nil
        guard response.status == 101 else {
            promise.fail(SenderError(.refused(status: response.status), "status \(response.status)"))
            context.close(promise: nil)
            return
        }
        do {
            // The request side goes in behind us first: the response decoder hands it whatever
            // it read past the 101 when it is removed.
            let pipeline = context.pipeline.syncOperations
            try pipeline.addHandler(ByteToMessageHandler(AirPlayRequestDecoder()))
            try pipeline.addHandler(ReverseChannelHandler(keys: keys, onEvent: onEvent))
            pipeline.removeHandler(context: context, promise: nil)
            context.pipeline.removeHandler(name: Self.decoderName, promise: nil)
            promise.succeed(())
        } catch {
            promise.fail(error)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        upgraded?.fail(error)
        upgraded = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        upgraded?.fail(SenderError(.connectionLost, "closed before the upgrade"))
        upgraded = nil
        context.fireChannelInactive()
    }
}

/// Answers the receiver's requests on the turned-around channel: `/event` plists go to
/// `onEvent`, `/key` to the key provider; replies go out in request order.
final class ReverseChannelHandler: ChannelInboundHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = ByteBuffer

    private let onEvent: @Sendable (PropertyList) -> Void
    private let keys: KeyProvider?
    /// Replies go out in request order, also when a key takes a while.
    private var lastReply: EventLoopFuture<Void>?

    init(keys: KeyProvider?, onEvent: @escaping @Sendable (PropertyList) -> Void) {
        self.keys = keys
        self.onEvent = onEvent
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .request(let request) = unwrapInboundIn(data) else { return }
        let eventLoop = context.eventLoop, channel = context.channel
        let reply: EventLoopFuture<ByteBuffer>
        if request.path == "/key" {
            reply = answerKeyRequest(request, on: eventLoop)
        } else {
            if request.path == "/event", let plist = try? PropertyList(decoding: Array(request.body.readableBytesView)) {
                onEvent(plist)
            }
            reply = eventLoop.makeSucceededFuture(Self.reply(200, []))
        }
        let previous = lastReply ?? eventLoop.makeSucceededVoidFuture()
        lastReply = previous.flatMap { reply }.flatMap { channel.writeAndFlush($0) }.recover { _ in }
    }

    /// `POST /key` with a plist `{uri}`: the provider's key as the body of a 200, else 404 with the reason.
    private func answerKeyRequest(_ request: AirPlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<ByteBuffer> {
        guard case .dictionary(let fields)? = try? PropertyList(decoding: Array(request.body.readableBytesView)),
              let uri = fields["uri"]?.stringValue else {
            return eventLoop.makeSucceededFuture(Self.reply(400, Array("the key request needs a plist with uri".utf8)))
        }
        guard let keys else {
            return eventLoop.makeSucceededFuture(Self.reply(404, Array("this sender has no way to get \(uri); give --key-command".utf8)))
        }
        let promise = eventLoop.makePromise(of: ByteBuffer.self)
        Self.resolve(uri, with: keys, into: promise)
        return promise.futureResult
    }

    private static func resolve(_ uri: String, with keys: @escaping KeyProvider, into promise: EventLoopPromise<ByteBuffer>) {
        Task {
            let result = await keys(uri)
            switch result {
            case .success(let key): promise.succeed(reply(200, key, type: "application/octet-stream"))
            case .failure(let error): promise.succeed(reply(404, Array(error.message.utf8)))
            }
        }
    }

    static func reply(_ status: Int, _ body: [UInt8], type: String = "text/plain; charset=utf-8") -> ByteBuffer {
        var out = ByteBuffer()
        out.writeString("HTTP/1.1 \(status) \(status == 200 ? "OK" : "Error")\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n\r\n")
        out.writeBytes(body)
        return out
    }
}
