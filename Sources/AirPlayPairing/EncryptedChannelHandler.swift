import NIOCore

/// First in a control connection's pipeline, on either side: passes bytes through until a
/// pair-verify (or transient pair-setup) succeeds, then seals every byte written and opens every
/// byte read in HAP's ChaCha20-Poly1305 frames. A frame that does not authenticate closes the
/// connection: the stream cannot be resynchronised.
///
/// NIO calls it on its channel's loop only; `enable` is called there too, right after the last
/// clear message (the M4 response on the receiver, its reading on the sender).
public final class EncryptedChannelHandler: ChannelDuplexHandler {
    /// Inbound bytes.
    public typealias InboundIn = ByteBuffer
    /// Inbound bytes, opened.
    public typealias InboundOut = ByteBuffer
    /// Outbound bytes.
    public typealias OutboundIn = ByteBuffer
    /// Outbound bytes, sealed.
    public typealias OutboundOut = ByteBuffer

    /// Which end of the connection this is: it picks the key each direction uses.
    public enum Role: Sendable {
        /// The receiver: reads with `Control-Write`, writes with `Control-Read`.
        case receiver
        /// The sender: writes with `Control-Write`, reads with `Control-Read`.
        case sender
    }

    private let role: Role
    private var sealer: EncryptedFrames.Sealer?
    private var opener: EncryptedFrames.Opener?
    private let onRefusedFrame: @Sendable (String) -> Void

    /// A pass-through handler until `enable`; `onRefusedFrame` hears why a frame was refused.
    public init(role: Role, onRefusedFrame: @escaping @Sendable (String) -> Void = { _ in }) {
        self.role = role
        self.onRefusedFrame = onRefusedFrame
    }

    /// Frames opened so far: a request that reaches the connection's handler after encryption
    /// was decided, without this having grown, came in clear (injected) and must be refused.
    public private(set) var framesOpened = 0

    /// Encrypts from the next byte in each direction.
    public func enable(keys: ControlChannelKeys) throws {
        try enable(receiverWrites: keys.receiverToSender, senderWrites: keys.senderToReceiver)
    }

    /// Encrypts an AirPlay 2 event channel from the next byte: the receiver writes with
    /// `Events-Write-Encryption-Key`, the sender with `Events-Read-Encryption-Key`.
    public func enable(keys: EventChannelKeys) throws {
        try enable(receiverWrites: keys.receiverToSender, senderWrites: keys.senderToReceiver)
    }

    /// Encrypts an AirPlay 2 data stream (type 130) from the next byte: the sender writes with
    /// `DataStream-Output-Encryption-Key`, the receiver with `DataStream-Input-Encryption-Key`.
    public func enable(keys: DataStreamKeys) throws {
        try enable(receiverWrites: keys.receiverToSender, senderWrites: keys.senderToReceiver)
    }

    private func enable(receiverWrites: [UInt8], senderWrites: [UInt8]) throws {
        let (write, read) = role == .receiver ? (receiverWrites, senderWrites) : (senderWrites, receiverWrites)
        sealer = try EncryptedFrames.Sealer(key: write)
        opener = try EncryptedFrames.Opener(key: read)
    }

    /// Opens what arrives (or passes it on while in clear).
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard opener != nil else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        do {
            let before = opener!.pendingCount
            let plain = try opener!.open(bytes)
            if opener!.pendingCount < before + bytes.count { framesOpened += 1 }
            guard !plain.isEmpty else { return }
            context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: plain)))
        } catch {
            onRefusedFrame("\(error)")
            context.close(promise: nil)
        }
    }

    /// Seals what is written (or passes it on while in clear).
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
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
