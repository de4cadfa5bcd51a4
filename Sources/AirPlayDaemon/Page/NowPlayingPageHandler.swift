import AirPlayNowPlaying
import AirPlayReceiver
import AirPlayWire
import NIOConcurrencyHelpers
import NIOCore

/// One connection to the now-playing page: `GET /` (the page), `GET /state`, `GET /events`
/// (server-sent events: the connection stays, carrying each change), `GET /cover/N`,
/// `POST /remote?command=NAME`. Anything else gets 404 or 405 with a reason.
final class NowPlayingPageHandler: ChannelInboundHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = ByteBuffer

    private let page: NIOLockedValueBox<NowPlayingPage?>
    private var streaming = false

    init(page: NIOLockedValueBox<NowPlayingPage?>) {
        self.page = page
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !streaming else { return }
        guard case .request(let request) = unwrapInboundIn(data) else {
            if case .rejected(let rejection) = unwrapInboundIn(data) { respond(context, .text(status: rejection.status, rejection.reason), close: true) }
            return
        }
        guard let page = page.withLockedValue({ $0 }) else { return respond(context, .text(status: 503, "starting"), close: true) }
        switch (request.method, request.path) {
        case ("GET", "/"):
            respond(context, Self.bytes(200, type: "text/html; charset=utf-8", NowPlayingPageHTML.page))
        case ("GET", "/state"):
            respond(context, Self.bytes(200, type: "application/json", page.document(showsPIN: local(context))))
        case ("GET", "/events"):
            guard page.listen(context.channel, showsPIN: local(context)) else {
                return respond(context, .text(status: 503, "too many pages open"), close: true)
            }
            streaming = true
            var head = context.channel.allocator.buffer(capacity: 256)
            head.writeString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\n\r\n")
            head.writeString("retry: 2000\n\ndata: ")
            head.writeBytes(page.document(showsPIN: local(context)))
            head.writeString("\n\n")
            context.writeAndFlush(wrapOutboundOut(head), promise: nil)
        case ("GET", let path) where path.hasPrefix("/cover/"):
            guard let number = Int(path.dropFirst("/cover/".count)), let cover = page.cover(number: number) else {
                return respond(context, .text(status: 404, "no such cover (it changed)"))
            }
            var response = Self.bytes(200, type: cover.type, cover.bytes)
            // A cover's URL names its number: the same URL is always the same image.
            response.headers.add(name: "Cache-Control", value: "max-age=86400")
            respond(context, response)
        case ("POST", "/remote"):
            // Only the page itself: a custom header, which another site's page cannot send
            // without a CORS preflight this server never grants.
            guard request.headers["X-AirPlayd-Remote"] == "1" else {
                return respond(context, .text(status: 403, "send X-AirPlayd-Remote: 1 (the page does)"))
            }
            guard let name = request.queryItems.first(where: { $0.name == "command" })?.value, let command = RemoteCommand(name: name) else {
                return respond(context, .text(status: 400, "command must be play, pause, playpause, stop, next, previous, volumeup, volumedown, seek:S, position:S or volume:DB"))
            }
            let channel = context.channel
            page.perform(command) { result in
                let response: AirPlayResponse = switch result {
                case .success: AirPlayResponse(status: 204)
                case .failure(let error): .text(status: 409, error.description)
                }
                var buffer = channel.allocator.buffer(capacity: 256)
                AirPlayResponseEncoder.write(response, into: &buffer)
                channel.writeAndFlush(buffer, promise: nil)
            }
        case (_, "/"), (_, "/state"), (_, "/events"), (_, "/remote"):
            respond(context, .text(status: 405, "\(request.method.prefix(20)) is not served at \(request.path)"))
        default:
            respond(context, .text(status: 404, "nothing at \(request.path.prefix(100))"))
        }
    }

    /// A quiet connection (no request for a minute) is closed; event streams are meant to be quiet.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, !streaming {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func local(_ context: ChannelHandlerContext) -> Bool { NowPlayingPage.isLocal(context.channel.remoteAddress) }

    private func respond(_ context: ChannelHandlerContext, _ response: AirPlayResponse, close: Bool = false) {
        var buffer = context.channel.allocator.buffer(capacity: response.body.readableBytes + 256)
        AirPlayResponseEncoder.write(response, into: &buffer)
        if close {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
    }

    private static func bytes(_ status: Int, type: String, _ body: [UInt8]) -> AirPlayResponse {
        AirPlayResponse(status: status, headers: ["Content-Type": type], body: ByteBuffer(bytes: body))
    }

    private static func bytes(_ status: Int, type: String, _ body: String) -> AirPlayResponse {
        bytes(status, type: type, Array(body.utf8))
    }
}
