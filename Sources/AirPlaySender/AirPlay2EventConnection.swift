import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The sender's end of an AirPlay 2 event channel: the TCP connection to the port SETUP phase 1
/// named, encrypted from its first byte with the event keys of the control connection's pairing
/// (the sender writes with `Events-Read-Encryption-Key`). The receiver sends requests on it:
/// remote commands (`POST /command`, `sendMediaRemoteCommand`) go to `inbox`; every request
/// is answered 200 with its CSeq, so the receiver keeps the channel (shairport-sync 5 sends
/// `updateInfo` there too).
public final class AirPlay2EventConnection: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `host:port` and switches the cipher on before any byte flows; a refused
    /// connect is tried again (5 times, 0.2 s apart): a receiver may listen a moment late.
    public static func connect(host: String, port: Int, keys: EventChannelKeys, inbox: RemoteCommandInbox = RemoteCommandInbox(),
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
                                cipher, ByteToMessageHandler(AirPlayRequestDecoder(limits: RequestLimits())), EventRequestAnswerer(inbox: inbox),
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

/// Where the remote commands a receiver sends on its event channels go: the stream sets the
/// handler; until it does, commands are answered and dropped.
public final class RemoteCommandInbox: Sendable {
    private let handler = NIOLockedValueBox<(@Sendable (MediaRemoteCommand) -> Void)?>(nil)

    /// An inbox with no handler yet.
    public init() {}

    /// Hands every later command to `handle` (from an event loop: it must not block).
    public func deliver(to handle: @escaping @Sendable (MediaRemoteCommand) -> Void) { handler.withLockedValue { $0 = handle } }

    /// A command arrived.
    func receive(_ command: MediaRemoteCommand) { handler.withLockedValue { $0 }?(command) }
}

/// Answers each request the receiver sends on the event channel with 200 (and its CSeq),
/// handing remote commands to the inbox first.
private final class EventRequestAnswerer: ChannelInboundHandler, Sendable {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = ByteBuffer
    private let inbox: RemoteCommandInbox

    init(inbox: RemoteCommandInbox) { self.inbox = inbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var response = AirPlayResponse(status: 200)
        switch unwrapInboundIn(data) {
        case .request(let request):
            response.version = request.version
            if let cseq = request.cseq { response.headers.add(name: "CSeq", value: cseq) }
            if request.method == "POST", request.path == MediaRemoteCommand.path,
               let plist = try? PropertyList(decoding: Array(request.body.readableBytesView)),
               let command = MediaRemoteCommand(plist: plist) {
                inbox.receive(command)
            }
        case .rejected(let rejection):
            response = .text(status: rejection.status, rejection.reason)
            response.version = rejection.version.name == "RTSP" ? .rtsp10 : .http11
        }
        var buffer = context.channel.allocator.buffer(capacity: 128)
        AirPlayResponseEncoder.write(response, into: &buffer)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
