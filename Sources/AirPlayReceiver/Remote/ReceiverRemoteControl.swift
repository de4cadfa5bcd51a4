import AirPlayNowPlaying
import AirPlayWire
import AirPlayMedia
import Logging
import NIOConcurrencyHelpers
import LinuxIO

/// The event channel of the AirPlay 2 session that plays, as the remote control reaches it.
public protocol SenderEventChannel: Sendable {
    /// Whether the playing session's sender has its event channel connected.
    var isEventChannelOpen: Bool { get }
    /// Sends `command` on it; `completion` hears once whether the sender took it.
    func send(_ command: MediaRemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void)
}

/// The box's remote control: a command from any surface goes to whatever plays, the video
/// player or the audio sender (on the AirPlay 2 event channel, or over DACP; see
/// `AudioRemoteRoute`). Volume steps on audio go to the sender too, so its slider moves and it
/// sends the new volume back, as with a remote in iTunes.
public final class ReceiverRemoteControl: RemoteControl, NowPlayingSurface {
    private let nowPlaying: NowPlaying
    private let video: VideoSessions?
    private let events: (any SenderEventChannel)?
    private let dacp: DACPClient
    private let logger: Logger
    /// What the box last asked an audio sender (play or pause), of which sender, and when: the
    /// sender shows a pause only when its FLUSH comes, so a press right after another goes by it.
    private let asked = NIOLockedValueBox<(playing: Bool, sender: NowPlayingSender, at: Double)?>(nil)
    /// Seconds the box goes by what it asked rather than by what the sender shows.
    static let askedHolds = 2.0

    /// A remote control for what `nowPlaying` shows, reaching AirPlay 2 senders through
    /// `events` and audio senders' DACP services through `findDACP`.
    public convenience init(nowPlaying: NowPlaying, video: VideoSessions?, events: (any SenderEventChannel)?,
                            findDACP: @escaping DACPServiceFinder, logger: Logger) {
        self.init(nowPlaying: nowPlaying, video: video, events: events, dacp: DACPClient(find: findDACP), logger: logger)
    }

    init(nowPlaying: NowPlaying, video: VideoSessions?, events: (any SenderEventChannel)? = nil, dacp: DACPClient, logger: Logger) {
        self.nowPlaying = nowPlaying
        self.video = video
        self.events = events
        self.dacp = dacp
        self.logger = logger
    }

    /// Sends `command` to whatever plays; `completion` hears the outcome once.
    public func perform(_ command: RemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        let state = nowPlaying.state
        guard let sender = state.sender else { return completion(.failure(RemoteControlError("nothing is playing"))) }
        let logger = self.logger
        let done: @Sendable (Result<Void, RemoteControlError>) -> Void = { result in
            if case .failure(let error) = result {
                logger.notice("remote control failed", metadata: ["command": "\(command)", "reason": "\(error)"])
            } else {
                logger.info("remote control", metadata: ["command": "\(command)", "session": "\(sender.kind.rawValue)"])
            }
            completion(result)
        }
        switch sender.kind {
        case .video:
            guard let video else { return done(.failure(RemoteControlError("video is off"))) }
            // On the players' queue, in order with the sender's own requests; the player may wait
            // on GStreamer, so never on the caller's thread (a D-Bus or NIO one).
            video.playerQueue.async { done(video.remote(command)) }
        case .audio:
            let open = events?.isEventChannelOpen ?? false
            let now = SystemClock().now()
            let recent = asked.withLockedValue { $0 }.flatMap { $0.sender == sender && now - $0.at < Self.askedHolds ? $0.playing : nil }
            let playing = recent ?? (state.playback.rate != 0)
            let routes = AudioRemoteRoute.routes(for: command, state: state, playing: playing, eventChannelOpen: open)
            guard !routes.isEmpty else {
                return done(.failure(RemoteControlError(AudioRemoteRoute.refusal(for: command, state: state, playing: playing, eventChannelOpen: open))))
            }
            follow(routes[...], command: command, sender: sender, failures: [], done: done)
        }
    }

    /// A surface too: when an audio session whose sender announces DACP begins, its service is
    /// looked up at once rather than at the first press (or the first fallback to it).
    public func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double) {
        guard case .began(let sender, _) = event, sender.kind == .audio else { return }
        dacp.prepare(for: sender)
    }

    /// Tries each route in turn until one carries the command; the failure names them all.
    /// A next or previous that may have been carried out is not sent again another way (the
    /// sender would skip twice); play, pause, stop and volumes may be, since twice is once.
    private func follow(_ routes: ArraySlice<AudioRemoteRoute>, command: RemoteCommand, sender: NowPlayingSender, failures: [String],
                        done: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        guard let route = routes.first else {
            return done(.failure(RemoteControlError(failures.joined(separator: "; then "))))
        }
        let next: @Sendable (Result<Void, RemoteControlError>, String) -> Void = { [self] result, path in
            switch result {
            case .success:
                logger.info("remote command delivered", metadata: ["path": "\(path)"])
                done(.success(()))
            case .failure(let error) where error.mayHaveActed && (command == .next || command == .previous):
                done(.failure(RemoteControlError((failures + ["\(path): \(error)"]).joined(separator: "; then "), mayHaveActed: true)))
            case .failure(let error):
                follow(routes.dropFirst(), command: command, sender: sender, failures: failures + ["\(path): \(error)"], done: done)
            }
        }
        switch route {
        case .alreadySo(let reason):
            logger.debug("remote control: nothing to send", metadata: ["reason": "\(reason)"])
            done(.success(()))
        case .eventChannel(let eventCommand):
            guard let events else { return next(.failure(RemoteControlError("no event channel")), "event channel") }
            // Noted before it goes, so a second press while the first is on its way goes by it;
            // taken back if the sender never got it.
            let before = asked.withLockedValue { asked in
                defer { if eventCommand == .play || eventCommand == .pause { asked = (eventCommand == .play, sender, SystemClock().now()) } }
                return asked
            }
            events.send(eventCommand) { [asked] result in
                if case .failure(let error) = result, !error.mayHaveActed, eventCommand == .play || eventCommand == .pause {
                    asked.withLockedValue { $0 = before }
                }
                next(result, "event channel")
            }
        case .dacp(let command):
            dacp.send(command, to: sender) { next($0, "DACP") }
        }
    }
}
