import AirPlayNowPlaying
import AirPlayPairing
import AirPlayWire
import Logging
import NIOCore

/// One AirPlay 2 data stream (type 130): a TCP port the sender connects to after its SETUP,
/// encrypted from the first byte with keys from the control connection's pairing and the
/// stream's seed (`DataStreamKeys`). The port listens before the reply names it; one
/// connection is kept, from the sender's host only; `DataStreamExchange` reads and answers.
/// Closing it (the control connection's TEARDOWN or end) closes the listener and the connection.
final class AirPlay2DataStream: Sendable {
    /// The port the sender is told (`dataPort`).
    var port: Int { listener.port }
    /// The stream's number in the reply (`streamID`).
    let streamID: Int
    private let listener: SenderChannelListener

    /// Carries a sender's command out, as the box's other remotes do (`NowPlaying.perform`).
    typealias Perform = @Sendable (RemoteCommand, @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) -> Void

    /// Listens on `connection`'s local address (synchronously: the reply needs the port) and
    /// serves it on `group`; the sender's commands go to `perform`.
    init(connection: ConnectionContext, keys: DataStreamKeys, streamID: Int, group: any EventLoopGroup, logger: Logger,
         perform: @escaping Perform) throws {
        self.streamID = streamID
        listener = try SenderChannelListener(connection: connection)
        let port = listener.port
        listener.serve(on: group) { child in
            let cipher = EncryptedChannelHandler(role: .receiver) { reason in
                logger.notice("AirPlay 2 data stream frame refused", metadata: ["reason": "\(reason)"])
            }
            try cipher.enable(keys: keys)
            try child.pipeline.syncOperations.addHandler(cipher)
            try child.pipeline.syncOperations.addHandler(DataStreamHandler(port: port, logger: logger, perform: perform))
        }
    }

    /// Closes the listener and the sender's connection.
    func close() { listener.close() }
}

/// Carries out `DataStreamExchange` on the decrypted bytes of one connection, on its event loop.
private final class DataStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var exchange = DataStreamExchange()
    private let port: Int
    private let logger: Logger
    private let perform: AirPlay2DataStream.Perform

    init(port: Int, logger: Logger, perform: @escaping AirPlay2DataStream.Perform) {
        self.port = port
        self.logger = logger
        self.perform = perform
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        for action in exchange.received(Array(buffer.readableBytesView)) {
            switch action {
            case .write(let bytes):
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
            case .received(let summary):
                logger.debug("AirPlay 2 data stream message", metadata: ["port": "\(port)", "message": "\(summary)"])
            case .close(let reason):
                logger.notice("AirPlay 2 data stream closed", metadata: ["port": "\(port)", "reason": "\(reason)"])
                context.close(promise: nil)
            case .command(let command, let number, let identifier):
                carryOut(command, number: number, identifier: identifier, context: context)
            }
        }
    }

    /// Carries a SEND_COMMAND out and answers it once it is done, back on the event loop.
    private func carryOut(_ command: RemoteCommand?, number: Int, identifier: String?, context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        guard let command else {
            logger.notice("AirPlay 2 data stream command not taken", metadata: ["port": "\(port)", "command": "\(number)"])
            return answer(identifier: identifier, taken: false, succeeded: false, context: context)
        }
        logger.info("AirPlay 2 data stream command", metadata: ["port": "\(port)", "command": "\(command)"])
        let eventLoop = context.eventLoop
        perform(command) { result in
            eventLoop.execute {
                if case .failure(let error) = result {
                    bound.value.handler.logger.notice("AirPlay 2 data stream command failed", metadata: ["reason": "\(error)"])
                }
                bound.value.handler.answer(identifier: identifier, taken: true, succeeded: (try? result.get()) != nil, context: bound.value.context)
            }
        }
    }

    private func answer(identifier: String?, taken: Bool, succeeded: Bool, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let bytes = exchange.result(identifier: identifier, taken: taken, succeeded: succeeded)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

    func channelInactive(context: ChannelHandlerContext) {
        logger.info("AirPlay 2 data stream ended", metadata: ["port": "\(port)", "messages": "\(exchange.messagesRead)"])
        context.fireChannelInactive()
    }
}
