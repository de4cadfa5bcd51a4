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

    /// Listens on `connection`'s local address (synchronously: the reply needs the port) and
    /// serves it on `group`.
    init(connection: ConnectionContext, keys: DataStreamKeys, streamID: Int, group: any EventLoopGroup, logger: Logger) throws {
        self.streamID = streamID
        listener = try SenderChannelListener(connection: connection)
        let port = listener.port
        listener.serve(on: group) { child in
            let cipher = EncryptedChannelHandler(role: .receiver) { reason in
                logger.notice("AirPlay 2 data stream frame refused", metadata: ["reason": "\(reason)"])
            }
            try cipher.enable(keys: keys)
            try child.pipeline.syncOperations.addHandler(cipher)
            try child.pipeline.syncOperations.addHandler(DataStreamHandler(port: port, logger: logger))
        }
    }

    /// Closes the listener and the sender's connection.
    func close() { listener.close() }
}

/// Carries out `DataStreamExchange` on the decrypted bytes of one connection.
private final class DataStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private var exchange = DataStreamExchange()
    private let port: Int
    private let logger: Logger

    init(port: Int, logger: Logger) {
        self.port = port
        self.logger = logger
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
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

    func channelInactive(context: ChannelHandlerContext) {
        logger.info("AirPlay 2 data stream ended", metadata: ["port": "\(port)", "messages": "\(exchange.messagesRead)"])
        context.fireChannelInactive()
    }
}
