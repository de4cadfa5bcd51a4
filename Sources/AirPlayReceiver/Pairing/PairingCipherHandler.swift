import AirPlayPairing
import Logging
import NIOCore

/// First in a control connection's pipeline: passes bytes through until a pair-verify (or a
/// transient pair-setup) succeeds, then seals every byte written and opens every byte read in
/// HAP's ChaCha20-Poly1305 frames. A frame that does not authenticate closes the connection.
///
/// NIO calls it on its channel's loop only; `enable` is called there too, right after the M4
/// response was written (which therefore still leaves in clear).
final class PairingCipherHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var sealer: EncryptedFrames.Sealer?
    private var opener: EncryptedFrames.Opener?
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    /// True once the connection is encrypted.
    var isEncrypting: Bool { sealer != nil }

    /// Encrypts from the next byte in each direction.
    func enable(keys: ControlChannelKeys) throws {
        sealer = try EncryptedFrames.Sealer(key: keys.receiverToSender)
        opener = try EncryptedFrames.Opener(key: keys.senderToReceiver)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard opener != nil else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        do {
            let plain = try opener!.open(bytes)
            guard !plain.isEmpty else { return }
            context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: plain)))
        } catch {
            logger.notice("encrypted frame does not authenticate: closing", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard sealer != nil else {
            context.write(data, promise: promise)
            return
        }
        var buffer = unwrapOutboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        do {
            let sealed = try sealer!.seal(bytes)
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: sealed)), promise: promise)
        } catch {
            promise?.fail(error)
            context.close(promise: nil)
        }
    }
}
