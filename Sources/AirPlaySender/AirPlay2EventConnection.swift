import AirPlayPairing
import AirPlayWire
import NIOCore
import NIOPosix

/// The sender's end of an AirPlay 2 event channel: the TCP connection to the port SETUP phase 1
/// named, encrypted from its first byte with the event keys of the control connection's pairing
/// (the sender writes with `Events-Read-Encryption-Key`). The receiver may send requests on it
/// (`POST /command` with `updateInfo`, remote commands); each is answered 200 so the receiver
/// keeps the channel, and nothing else is done with them yet.
public final class AirPlay2EventConnection: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `host:port` and switches the cipher on before any byte flows; a refused
    /// connect is tried again (5 times, 0.2 s apart): a receiver may listen a moment late.
    public static func connect(host: String, port: Int, keys: EventChannelKeys,
                               group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws(SenderError) -> AirPlay2EventConnection {
        var lastError: (any Error)?
        for attempt in 0..<5 {
            if attempt > 0 { try? await Task.sleep(for: .milliseconds(200)) }
            do {
                let channel = try await ClientBootstrap(group: group)
                    .connectTimeout(.seconds(5))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let cipher = EncryptedChannelHandler(role: .sender)
                            try cipher.enable(keys: keys)
                            try channel.pipeline.syncOperations.addHandlers([
                                cipher, ByteToMessageHandler(AirPlayRequestDecoder(limits: RequestLimits())), EventRequestAnswerer(),
                            ])
                        }
                    }
                    .connect(host: host, port: port).get()
                return AirPlay2EventConnection(channel: channel)
            } catch {
                lastError = error
            }
        }
        throw SenderError(.connectionLost, "cannot open the AirPlay 2 event channel at \(host):\(port): \(lastError.map { "\($0)" } ?? "?")")
    }

    /// Whether the receiver still holds the channel open.
    public var isOpen: Bool { channel.isActive }

    /// Closes the channel.
    public func close() async { try? await channel.close() }
}

/// Answers each request the receiver sends on the event channel with 200 (and its CSeq).
private final class EventRequestAnswerer: ChannelInboundHandler, Sendable {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var response = AirPlayResponse(status: 200)
        switch unwrapInboundIn(data) {
        case .request(let request):
            response.version = request.version
            if let cseq = request.cseq { response.headers.add(name: "CSeq", value: cseq) }
        case .rejected(let rejection):
            response = .text(status: rejection.status, rejection.reason)
            response.version = rejection.version.name == "RTSP" ? .rtsp10 : .http11
        }
        var buffer = context.channel.allocator.buffer(capacity: 128)
        AirPlayResponseEncoder.write(response, into: &buffer)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
