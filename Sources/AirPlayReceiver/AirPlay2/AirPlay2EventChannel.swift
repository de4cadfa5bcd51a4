import AirPlayPairing
import AirPlayWire
import FoundationEssentials
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The event channel of one AirPlay 2 session: a TCP port the sender connects to after SETUP
/// phase 1, encrypted from its first byte with keys from the control connection's pairing
/// (`Events-Salt`; the receiver writes with `Events-Write-Encryption-Key`).
///
/// The port is bound and listening before SETUP's reply names it (pyatv connects at once and
/// only retries a refused connect). One connection is kept, from the sender's host only. On it
/// the receiver is the client: it sends requests (remote commands) and reads the sender's
/// answers, numbered and timed by `EventChannelRequests`. Closing the session closes the
/// listener and the connection.
final class AirPlay2EventChannel: Sendable {
    /// The port the sender is told (`eventPort`).
    var port: Int { listener.port }
    /// The control connection the session belongs to.
    let connection: ConnectionContext
    private let listener: SenderChannelListener
    private let requests: NIOLockedValueBox<RequestState>

    /// The request machine and the callers waiting on it.
    private struct RequestState {
        var machine: EventChannelRequests
        var nextID = 0
        var waiting: [Int: @Sendable (EventChannelRequests.Outcome) -> Void] = [:]
    }

    /// Listens on `connection`'s local address (synchronously: the reply needs the port) and
    /// serves it on `group`; a request the receiver sends waits `answerWithin` seconds for the
    /// sender's answer.
    init(connection: ConnectionContext, keys: EventChannelKeys, group: any EventLoopGroup, answerWithin: Double = 2, logger: Logger) throws {
        self.connection = connection
        self.requests = NIOLockedValueBox(RequestState(machine: EventChannelRequests(answerWithin: answerWithin)))
        listener = try SenderChannelListener(connection: connection)
        listener.serve(on: group) { [weak self] child in
            guard let self else { throw ChannelError.ioOnClosedChannel }
            let cipher = EncryptedChannelHandler(role: .receiver) { reason in
                logger.notice("AirPlay 2 event channel frame refused", metadata: ["reason": "\(reason)"])
            }
            try cipher.enable(keys: keys)
            try child.pipeline.syncOperations.addHandler(cipher)
            try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayResponseFrameDecoder(),
                                                                              maximumBufferSize: Self.maximumHeldBytes))
            try child.pipeline.syncOperations.addHandler(SenderAnswers(owner: self))
        }
    }

    /// The most a sender may have sent of answers not yet whole; more closes the channel.
    static let maximumHeldBytes = 64 * 1024

    /// Whether the sender has connected.
    var isConnected: Bool { listener.accepted?.isActive ?? false }

    /// Sends `request` to the sender; `completion` hears once how it ended (the sender's status,
    /// or why it did not answer): at once on the caller's thread when the channel is not open,
    /// else from the channel's event loop.
    func send(_ request: AirPlayRequest, completion: @escaping @Sendable (EventChannelRequests.Outcome) -> Void) {
        guard let channel = listener.accepted, channel.isActive else {
            return completion(.failed("the sender has not connected its event channel"))
        }
        // `submit`, not `execute`: an event loop shutting down fails the future rather than
        // dropping the work, so the caller always hears.
        channel.eventLoop.submit { [self] in
            let actions = requests.withLockedValue { state -> [EventChannelRequests.Action] in
                let id = state.nextID
                state.nextID += 1
                state.waiting[id] = completion
                return state.machine.send(request, id: id, now: Self.now())
            }
            carryOut(actions, on: channel)
        }.whenFailure { _ in completion(.failed("the box is shutting down")) }
    }

    /// The sender answered (on the channel's event loop).
    fileprivate func answered(_ response: AirPlayResponse, on channel: any Channel) {
        carryOut(requests.withLockedValue { $0.machine.answered(response, now: Self.now()) }, on: channel)
    }

    /// The connection is gone: what waits fails.
    fileprivate func channelClosed() {
        carryOut(requests.withLockedValue { $0.machine.channelClosed() }, on: nil)
    }

    private func carryOut(_ actions: [EventChannelRequests.Action], on channel: (any Channel)?) {
        for action in actions {
            switch action {
            case .write(let request):
                guard let channel else { continue }
                var buffer = channel.allocator.buffer(capacity: 256 + request.body.readableBytes)
                AirPlayRequestEncoder.write(request, into: &buffer)
                channel.writeAndFlush(buffer, promise: nil)
            case .finish(let id, let outcome):
                requests.withLockedValue { $0.waiting.removeValue(forKey: id) }?(outcome)
            case .wakeUp(let time):
                guard let channel else { continue }
                let delay = TimeAmount.nanoseconds(Int64(max(0, time - Self.now()) * 1e9) + 1_000_000)
                channel.eventLoop.scheduleTask(in: delay) { [self] in
                    carryOut(requests.withLockedValue { $0.machine.tick(now: Self.now()) }, on: channel)
                }
            }
        }
    }

    /// Seconds on the monotonic clock the machine is timed by.
    private static func now() -> Double { Double(NIODeadline.now().uptimeNanoseconds) / 1e9 }

    /// Closes the listener and the sender's connection (once).
    func close() { listener.close() }
}

/// Hands the sender's answers to the channel's request machine; a malformed answer, too many
/// bytes held, or the sender's end closing ends the channel (and fails what waits).
private final class SenderAnswers: ChannelInboundHandler, Sendable {
    typealias InboundIn = AirPlayResponse
    private let owner: AirPlay2EventChannel

    init(owner: AirPlay2EventChannel) { self.owner = owner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner.answered(unwrapInboundIn(data), on: context.channel)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else { return context.fireUserInboundEventTriggered(event) }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        owner.channelClosed()
        context.fireChannelInactive()
    }
}
