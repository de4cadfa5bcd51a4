import AirPlayNowPlaying
import AirPlayReceiver
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The now-playing page: a web page for a TV's kiosk browser or a phone (cover, title, artist,
/// album, a progress bar that moves, play state, the sender, controls, the pairing PIN), served
/// on `web_listen`. It gets the state at `/state` and every change as server-sent events at
/// `/events`; its buttons post to `/remote`, the same remote control MPRIS and MQTT use.
public final class NowPlayingPage: NowPlayingSurface, Sendable {
    /// Event-stream clients served at once; more get 503.
    static let maxListeners = 32
    /// Connections open at once; more are closed.
    static let maxConnections = 64
    /// Seconds a connection may sit with no request (event streams excepted).
    static let idleSeconds: Int64 = 60

    private let nowPlaying: NowPlaying
    private let name: String
    private let pin: @Sendable () -> String?
    private let channel: any Channel
    /// The event streams, each with whether it may see the pairing PIN (a browser on the box).
    private let listeners = NIOLockedValueBox<[ObjectIdentifier: (channel: any Channel, showsPIN: Bool)]>([:])
    /// Connections open now.
    private let connections = NIOLockedValueBox(0)
    private let refresh: RepeatedTask
    /// Event messages written to listeners, for benchmarks.
    let eventsSent = NIOLockedValueBox(0)

    /// The port it listens on.
    public var port: Int { channel.localAddress?.port ?? 0 }

    private init(nowPlaying: NowPlaying, name: String, pin: @escaping @Sendable () -> String?, channel: any Channel, refresh: RepeatedTask) {
        self.nowPlaying = nowPlaying
        self.name = name
        self.pin = pin
        self.channel = channel
        self.refresh = refresh
    }

    /// Listens on `host:port`. `pin` says which pairing PIN is on show.
    public static func start(host: String, port: Int, nowPlaying: NowPlaying, name: String, pin: @escaping @Sendable () -> String?,
                             group: any EventLoopGroup, logger: Logger) async throws -> NowPlayingPage {
        let holder = NIOLockedValueBox<NowPlayingPage?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard holder.withLockedValue({ $0 })?.admit(channel) ?? false else {
                        channel.close(promise: nil)
                        return
                    }
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(NowPlayingPage.idleSeconds)))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayRequestDecoder(
                        limits: RequestLimits(maxHeadBytes: 8 * 1024, maxHeaderCount: 64, maxBodyBytes: 1024))))
                    try channel.pipeline.syncOperations.addHandler(NowPlayingPageHandler(page: holder))
                }
            }
            .bind(host: host, port: port).get()
        // Every 5 s the listeners get the state again: the PIN's expiry, and any drift.
        let refresh = group.next().scheduleRepeatedTask(initialDelay: .seconds(5), delay: .seconds(5)) { _ in
            holder.withLockedValue { $0 }?.broadcast()
        }
        let page = NowPlayingPage(nowPlaying: nowPlaying, name: name, pin: pin, channel: channel, refresh: refresh)
        holder.withLockedValue { $0 = page }
        logger.info("now-playing page", metadata: ["address": "\(host):\(page.port)"])
        return page
    }

    /// Stops listening and ends the event streams.
    public func stop() {
        refresh.cancel()
        channel.close(promise: nil)
        for listener in listeners.withLockedValue({ Array($0.values) }) { listener.channel.close(promise: nil) }
    }

    /// Sends the new state to every open page.
    public func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double) {
        broadcast(state: state, at: time)
    }

    /// The page's state document: the now-playing JSON with the receiver's name; the cover by
    /// URL (`/cover/N`), not inline. The PIN on show goes only to a browser on the box itself
    /// (`showsPIN`): a PIN anyone on the network could read would prove nothing.
    func document(state: NowPlayingState? = nil, at time: Double? = nil, showsPIN: Bool) -> [UInt8] {
        var object = (state ?? nowPlaying.state).json(now: time ?? nowPlaying.now(), artworkBytes: false)
        object["receiver"] = .string(name)
        object["pairing"] = ["pin": .string(showsPIN ? pin() : nil)]
        if let number = (state ?? nowPlaying.state).item.artwork?.number { object["cover"] = .string("/cover/\(number)") }
        return JSONValue.object(object).bytes
    }

    /// The cover numbered `number`, if it is the current one.
    func cover(number: Int) -> NowPlayingState.Artwork? {
        nowPlaying.state.item.artwork.flatMap { $0.number == number ? $0 : nil }
    }

    /// Carries a command from the page's buttons out.
    func perform(_ command: RemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        nowPlaying.perform(command, completion: completion)
    }

    /// Takes a listener of the event stream; false when there are too many.
    func listen(_ channel: any Channel, showsPIN: Bool) -> Bool {
        let added = listeners.withLockedValue { listeners -> Bool in
            guard listeners.count < Self.maxListeners else { return false }
            listeners[ObjectIdentifier(channel)] = (channel, showsPIN)
            return true
        }
        if added {
            channel.closeFuture.whenComplete { [weak self] _ in self?.listeners.withLockedValue { $0[ObjectIdentifier(channel)] = nil } }
        }
        return added
    }

    /// Sends the state to every listener. A listener that does not keep up (its socket full)
    /// misses this one: the next carries the whole state again.
    private func broadcast(state: NowPlayingState? = nil, at time: Double? = nil) {
        let current = listeners.withLockedValue { Array($0.values) }
        guard !current.isEmpty else { return }
        let message = { (showsPIN: Bool) in Array("data: ".utf8) + self.document(state: state, at: time, showsPIN: showsPIN) + Array("\n\n".utf8) }
        let (local, remote) = (message(true), message(false))
        for listener in current where listener.channel.isWritable {
            listener.channel.writeAndFlush(ByteBuffer(bytes: listener.showsPIN ? local : remote), promise: nil)
            eventsSent.withLockedValue { $0 += 1 }
        }
    }

    /// Counts a new connection; false when `maxConnections` are open (it is closed at once).
    func admit(_ channel: any Channel) -> Bool {
        let admitted = connections.withLockedValue { count -> Bool in
            guard count < Self.maxConnections else { return false }
            count += 1
            return true
        }
        if admitted { channel.closeFuture.whenComplete { [connections] _ in connections.withLockedValue { $0 -= 1 } } }
        return admitted
    }

    /// Whether a peer is this box (a loopback address).
    static func isLocal(_ address: SocketAddress?) -> Bool { ControlRouter.isLoopbackAddress(address?.ipAddress ?? "") }
}
