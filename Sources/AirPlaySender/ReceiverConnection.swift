import AirPlayPairing
import AirPlayWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Why a call to a receiver failed; the CLI maps each kind to an exit code.
public struct SenderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Kind: Hashable, Sendable {
        /// No receiver matched, or none could be reached.
        case notFound
        /// The receiver answered with an error status.
        case refused(status: Int)
        /// The connection broke or timed out.
        case connectionLost
        /// The user's input (file, URL, arguments) is unusable.
        case badInput
    }

    /// What happened.
    public var kind: Kind
    /// A message for the user.
    public var message: String

    /// An error from its parts.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// One HTTP connection to a receiver's control port: requests go out one at a time, in order.
public final class ReceiverConnection: Sendable {
    private let channel: any Channel
    /// The connection's cipher, switched on after a pair-verify or transient pair-setup.
    private let cipher: NIOLoopBound<EncryptedChannelHandler>
    /// The receiver's address as given.
    public let host: String
    /// The receiver's port.
    public let port: Int
    private let secret = NIOLockedValueBox<[UInt8]?>(nil)

    /// The secret of the pair-verify or transient pair-setup that encrypted this connection
    /// (AirPlay 2's event channel keys derive from it); nil while it is clear.
    public var pairingSecret: [UInt8]? { secret.withLockedValue { $0 } }

    private init(channel: any Channel, cipher: NIOLoopBound<EncryptedChannelHandler>, host: String, port: Int) {
        self.channel = channel
        self.cipher = cipher
        self.host = host
        self.port = port
    }

    /// Connects within `timeout` seconds.
    public static func connect(host: String, port: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                               timeout: Double = 5) async throws(SenderError) -> ReceiverConnection {
        do {
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(.milliseconds(Int64(timeout * 1000)))
                // TCP_NODELAY at the TCP level: as a socket-level option its number (1) is SO_DEBUG, which
                // needs CAP_NET_ADMIN, and without it every connection was reset (a daemon under its
                // unit's dynamic user, `airplay` run by a user).
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(EncryptedChannelHandler(role: .sender))
                        let held = HeldResponseBytes()
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayResponseFrameDecoder(held: held)))
                        try channel.pipeline.syncOperations.addHandler(ResponseMatcher(held: held))
                    }
                }
                .connect(host: host, port: port).get()
            let cipher = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: EncryptedChannelHandler.self), eventLoop: channel.eventLoop)
            }.get()
            return ReceiverConnection(channel: channel, cipher: cipher, host: host, port: port)
        } catch {
            throw SenderError(.notFound, "cannot connect to \(host):\(port): \(error)")
        }
    }

    /// The local address of this connection: the address the receiver can reach us at.
    public var localAddress: SocketAddress? { channel.localAddress }

    /// The receiver's IP address as connected (what its Apple-Response must sign).
    public var remoteIP: String? { channel.remoteAddress?.ipAddress }

    /// The receiver's address for a new connection to another of its ports: its IP, with the
    /// interface for an IPv6 link-local one (`fe80::1%eth0`: without it the connect fails).
    public var connectableHost: String {
        guard case .v6(let address)? = channel.remoteAddress, address.address.sin6_scope_id != 0, let ip = remoteIP else {
            return remoteIP ?? host
        }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(address.address.sin6_scope_id, &name) != nil else { return ip }
        return ip + "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The receiver's address with another port, its scope kept (where its UDP ports are).
    public func remote(port: Int) -> SocketAddress? {
        channel.remoteAddress?.withPort(port) ?? (try? SocketAddress(ipAddress: host, port: port))
    }

    /// Sends a request and waits (at most `timeout` seconds) for its response.
    public func send(_ request: AirPlayRequest, timeout: Double = 15) async throws(SenderError) -> AirPlayResponse {
        guard channel.isActive else {
            throw SenderError(.connectionLost, "the connection to \(host):\(port) is closed")
        }
        let promise = channel.eventLoop.makePromise(of: AirPlayResponse.self)
        // A write that fails (the connection closed meanwhile) fails the request at once.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { [host, port] error in
            promise.fail(SenderError(.connectionLost, "connection to \(host):\(port) lost: \(error)"))
        }
        channel.writeAndFlush(PendingRequest(request: request, promise: promise), promise: written)
        let deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
            promise.fail(SenderError(.connectionLost, "no answer from \(self.host):\(self.port) within \(Int(timeout)) s"))
        }
        defer { deadline.cancel() }
        do {
            return try await promise.futureResult.get()
        } catch let error as SenderError {
            throw error
        } catch {
            throw SenderError(.connectionLost, "connection to \(host):\(port) lost: \(error)")
        }
    }

    /// Encrypts every later byte both ways with the control keys of a pair-verify or transient setup.
    public func encrypt(with keys: ControlChannelKeys) async throws(SenderError) {
        let cipher = self.cipher, pipeline = channel.pipeline
        do {
            try await channel.eventLoop.submit {
                // Bytes already read past M4 were sent in clear: an on-path injection, never a reply.
                guard try pipeline.syncOperations.handler(type: ResponseMatcher.self).isIdle else {
                    throw SenderError(.connectionLost, "the receiver sent clear bytes after pair-verify")
                }
                try cipher.value.enable(keys: keys)
            }.get()
            secret.withLockedValue { $0 = keys.sharedSecret }
        } catch let error as SenderError {
            throw error
        } catch {
            throw SenderError(.connectionLost, "cannot encrypt the connection: \(error)")
        }
    }

    /// Closes the connection.
    public func close() async { try? await channel.close() }
}

struct PendingRequest {
    var request: AirPlayRequest
    var promise: EventLoopPromise<AirPlayResponse>
}

/// Matches responses to requests in order (HTTP/1.1 without pipelining surprises). Behind a
/// `ByteToMessageHandler(AirPlayResponseFrameDecoder(held:))`, which frames the responses.
final class ResponseMatcher: ChannelDuplexHandler {
    typealias InboundIn = AirPlayResponse
    typealias OutboundIn = PendingRequest
    typealias OutboundOut = ByteBuffer

    private var waiting: [EventLoopPromise<AirPlayResponse>] = []
    /// The bytes the frame decoder in front holds (shared with it).
    let held: HeldResponseBytes

    init(held: HeldResponseBytes) { self.held = held }

    /// No request waits and no byte of a response is held.
    var isIdle: Bool { waiting.isEmpty && held.count == 0 }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let pending = unwrapOutboundIn(data)
        waiting.append(pending.promise)
        var out = context.channel.allocator.buffer(capacity: 256 + pending.request.body.readableBytes)
        AirPlayRequestEncoder.write(pending.request, into: &out)
        context.write(wrapOutboundOut(out), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let response = unwrapInboundIn(data)
        guard !waiting.isEmpty else { return }
        waiting.removeFirst().succeed(response)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(SenderError(.connectionLost, "the receiver closed the connection"))
        context.fireChannelInactive()
    }

    /// A malformed or oversized response (from the frame decoder) or a broken connection.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let bad = error is AirPlayResponseDecoder.Failure
        failAll(SenderError(.connectionLost, bad ? "bad response from the receiver: \(error)" : "connection error: \(error)"))
        context.close(promise: nil)
    }

    private func failAll(_ error: SenderError) {
        let all = waiting
        waiting = []
        for promise in all { promise.fail(error) }
    }
}
