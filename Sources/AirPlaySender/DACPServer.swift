import AirPlayDiscovery
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The sender's remote control: receivers (shairport-sync, airplayd) find it as
/// `iTunes_Ctrl_<DACP-ID>` on `_dacp._tcp` and send `GET /ctrl-int/1/<command>` with the
/// session's `Active-Remote`; each command is handed to `handle` and answered 204. A request
/// without the right token gets 403, an unknown command 501. Every answer closes the
/// connection, as DACP clients open one per command.
public final class DACPServer: Sendable {
    private let channel: any Channel
    private let publisher: AvahiPublisher?
    /// Commands carried out, for logs and tests.
    public let handled: NIOLockedValueBox<Int>

    /// The port it listens on.
    public var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: any Channel, publisher: AvahiPublisher?, handled: NIOLockedValueBox<Int>) {
        self.channel = channel
        self.handled = handled
        self.publisher = publisher
    }

    /// Listens on every address and publishes `_dacp._tcp` when avahi-daemon is running (a
    /// stream goes on without remote control when it is not).
    public static func start(identity: RAOPClientIdentity, logger: Logger, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                             handle: @escaping @Sendable (DACPCommand) -> Void) async throws -> DACPServer {
        let counter = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayRequestDecoder(
                        limits: RequestLimits(maxHeadBytes: 8 * 1024, maxHeaderCount: 32, maxBodyBytes: 0))))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(AirPlayResponseEncoder()))
                    try channel.pipeline.syncOperations.addHandler(DACPRequestHandler(activeRemote: identity.activeRemote) { command in
                        counter.withLockedValue { $0 += 1 }
                        handle(command)
                    })
                }
            }
            .bind(host: "::", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        let advertisement = DACPAdvertisement(port: UInt16(port), dacpID: identity.dacpID)
        // Published only when avahi-daemon answers now: a stream is short, and a publisher
        // waiting for a daemon that may never come would only hold a thread and a D-Bus client.
        let daemonAnswers = (try? AvahiBrowser().browse(types: [], timeoutSeconds: 0.5)) != nil
        let publisher = daemonAnswers ? try? AvahiPublisher(deviceName: DACPCommand.serviceName(dacpID: identity.dacpID),
                                                            advertisement: advertisement, logger: logger) : nil
        try? publisher?.start()
        if publisher == nil { logger.debug("DACP remote not published: avahi-daemon is not running") }
        return DACPServer(channel: channel, publisher: publisher, handled: counter)
    }

    /// Withdraws the service and stops listening.
    public func close() async {
        publisher?.stop()
        try? await channel.close()
    }
}

/// `_dacp._tcp` as iTunes and pyatv publish it.
struct DACPAdvertisement: DeviceAdvertisement {
    let port: UInt16
    let dacpID: String

    func services(deviceName: String) -> [ServiceRegistration] {
        [ServiceRegistration(type: "_dacp._tcp", name: deviceName, port: port,
                             txt: ["txtvers": "1", "Ver": "131075", "DbId": dacpID, "OSsi": "0x1F5"])]
    }
}

/// Answers one DACP request and closes the connection.
final class DACPRequestHandler: ChannelInboundHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = AirPlayResponse

    private let activeRemote: String
    private let handle: @Sendable (DACPCommand) -> Void

    init(activeRemote: String, handle: @escaping @Sendable (DACPCommand) -> Void) {
        self.activeRemote = activeRemote
        self.handle = handle
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let response: AirPlayResponse
        switch unwrapInboundIn(data) {
        case .rejected(let rejection):
            response = .text(status: rejection.status, rejection.reason)
        case .request(let request):
            response = Self.answer(request, activeRemote: activeRemote, handle: handle)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(response)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The answer to a request: 204 for a command carried out, 400 for a property asked for
    /// (shairport-sync takes 400 as "the remote answers, without the advanced commands").
    static func answer(_ request: AirPlayRequest, activeRemote: String, handle: (DACPCommand) -> Void) -> AirPlayResponse {
        guard request.method == "GET" else { return .text(status: 405, "DACP takes GET") }
        guard request.headers["Active-Remote"] == activeRemote else {
            return .text(status: 403, "Active-Remote does not name this stream")
        }
        guard let command = DACPCommand(path: request.target) else { return .text(status: 501, "unknown DACP command") }
        if case .getProperty = command { return .text(status: 400, "no properties here") }
        handle(command)
        return AirPlayResponse(status: 204)
    }
}
