import AirPlayPlist
import AirPlayWire
import NIOCore
import NIOPosix

/// Listens on a receiver's reverse (PTTH) channel for `/event` plists of one session.
public final class EventListener: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Opens the channel: `POST /reverse` with `Upgrade: PTTH/1.0`; after the 101 every
    /// `POST /event` the receiver sends is answered 200 and handed to `onEvent`.
    public static func open(host: String, port: Int, sessionID: String,
                            group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                            onEvent: @escaping @Sendable (PropertyList) -> Void) async throws(SenderError) -> EventListener {
        let upgraded: EventLoopPromise<Void>
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .connect(host: host, port: port).get()
            upgraded = channel.eventLoop.makePromise(of: Void.self)
            try await channel.pipeline.addHandler(ReverseChannelHandler(upgraded: upgraded, onEvent: onEvent)).get()
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

/// Reads the 101, then requests from the receiver, answering each.
final class ReverseChannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var upgraded: EventLoopPromise<Void>?
    private let onEvent: @Sendable (PropertyList) -> Void
    private var buffer = ByteBuffer()
    private var requests = AirPlayRequestDecoder()

    init(upgraded: EventLoopPromise<Void>, onEvent: @escaping @Sendable (PropertyList) -> Void) {
        self.upgraded = upgraded
        self.onEvent = onEvent
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer.writeBuffer(&incoming)
        if let promise = upgraded {
            do {
                guard let response = try AirPlayResponseDecoder().next(from: &buffer) else { return }
                upgraded = nil
                guard response.status == 101 else {
                    promise.fail(SenderError(.refused(status: response.status), "status \(response.status)"))
                    context.close(promise: nil)
                    return
                }
                promise.succeed(())
            } catch {
                upgraded = nil
                promise.fail(error)
                context.close(promise: nil)
                return
            }
        }
        while let message = requests.next(from: &buffer) {
            guard case .request(let request) = message else { continue }
            if request.path == "/event", let plist = try? PropertyList(decoding: Array(request.body.readableBytesView)) {
                onEvent(plist)
            }
            var reply = context.channel.allocator.buffer(capacity: 64)
            reply.writeString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
        }
        buffer.discardReadBytes()
    }

    func channelInactive(context: ChannelHandlerContext) {
        upgraded?.fail(SenderError(.connectionLost, "closed before the upgrade"))
        upgraded = nil
        context.fireChannelInactive()
    }
}
