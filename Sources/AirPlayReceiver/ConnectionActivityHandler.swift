import AirPlayMedia
import AirPlayWire
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import LinuxIO

/// One connection's `ConnectionTimeouts`, shared by the handlers of its pipeline (which change
/// it on the connection's event loop only) and read by admission (`ConnectionRegistry`).
final class ConnectionTimeoutState: Sendable {
    /// Changed on the connection's loop only; read by admission from other loops too.
    private let state: NIOLockedValueBox<ConnectionTimeouts>

    /// The time-out state.
    var timeouts: ConnectionTimeouts {
        get { state.withLockedValue { $0 } }
        set { state.withLockedValue { $0 = newValue } }
    }

    init(limits: ConnectionTimeouts.Limits) {
        state = NIOLockedValueBox(ConnectionTimeouts(limits: limits, now: ConnectionTimeoutState.now()))
    }

    /// The monotonic clock the time-outs run on.
    static func now() -> Double { SystemClock().now() }
}

/// First in a control connection's pipeline: tells its time-out state when bytes arrive and responses
/// leave, looks at it once a second, and carries out a time-out (408 and close, or close).
///
/// `@unchecked Sendable`: NIO calls it on its channel's loop only; the repeated task is
/// scheduled on that loop too.
final class ConnectionActivityHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeoutState: ConnectionTimeoutState
    private let holdsSession: @Sendable () -> Bool
    private let logger: Logger
    private let serverHeader: String
    private var task: RepeatedTask?
    /// Whether the request being received speaks RTSP (the 408 then does too).
    private var receivingRTSP = false

    init(timeoutState: ConnectionTimeoutState, holdsSession: @escaping @Sendable () -> Bool, serverHeader: String, logger: Logger) {
        self.timeoutState = timeoutState
        self.serverHeader = serverHeader
        self.holdsSession = holdsSession
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        task = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let (handler, context) = loopBound.value
            handler.tick(context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        task?.cancel()
        task = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        task?.cancel()
        task = nil
        timeoutState.timeouts.stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if timeoutState.timeouts.isIdle { receivingRTSP = Self.mentionsRTSP(bytes.readableBytesView.prefix(512)) }
        timeoutState.timeouts.bytesArrived(now: ConnectionTimeoutState.now())
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        timeoutState.timeouts.responseSent(now: ConnectionTimeoutState.now())
        context.write(data, promise: promise)
    }

    /// True when the bytes hold `RTSP/` (the start of a request line's protocol): so a 408 is
    /// answered in the request's protocol. A plain scan: this runs for every request, and the
    /// generic `firstRange(of:)` cost a fifth of the CPU of a `/playback-info` poll.
    static func mentionsRTSP(_ bytes: ByteBufferView.SubSequence) -> Bool {
        let pattern: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0x52, 0x54, 0x53, 0x50, 0x2F)   // "RTSP/"
        var index = bytes.startIndex
        while index + 4 < bytes.endIndex {
            if bytes[index] == pattern.0, bytes[index + 1] == pattern.1, bytes[index + 2] == pattern.2,
               bytes[index + 3] == pattern.3, bytes[index + 4] == pattern.4 { return true }
            index += 1
        }
        return false
    }

    private func tick(context: ChannelHandlerContext) {
        switch timeoutState.timeouts.tick(now: ConnectionTimeoutState.now(), holdsSession: holdsSession()) {
        case .requestTimedOut:
            logger.notice("request timed out", metadata: ["reason": "the request did not arrive whole in time"])
            var response = AirPlayResponse.text(status: 408, "the request did not arrive whole in time")
            response.version = receivingRTSP ? .rtsp10 : .http11
            response.headers.add(name: "Server", value: serverHeader)
            response.headers.add(name: "Connection", value: "close")
            var buffer = context.channel.allocator.buffer(capacity: 256)
            AirPlayResponseEncoder.write(response, into: &buffer)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
        case .idleTimedOut:
            logger.info("idle connection closed")
            context.close(promise: nil)
        case nil:
            break
        }
    }
}
