import AirPlayNowPlaying
import AirPlayWire
import Logging

/// The box's remote control: a command from any surface goes to whatever plays, the video
/// player or the audio sender (over DACP). Volume steps on audio go to the sender too, so its
/// slider moves and it sends the new volume back, as with a remote in iTunes.
public final class ReceiverRemoteControl: RemoteControl {
    private let nowPlaying: NowPlaying
    private let video: VideoSessions?
    private let dacp: DACPClient
    private let logger: Logger

    /// A remote control for what `nowPlaying` shows, reaching audio senders' DACP services
    /// through `findDACP`.
    public convenience init(nowPlaying: NowPlaying, video: VideoSessions?, findDACP: @escaping DACPServiceFinder, logger: Logger) {
        self.init(nowPlaying: nowPlaying, video: video, dacp: DACPClient(find: findDACP), logger: logger)
    }

    init(nowPlaying: NowPlaying, video: VideoSessions?, dacp: DACPClient, logger: Logger) {
        self.nowPlaying = nowPlaying
        self.video = video
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
            guard let dacpCommand = Self.dacpCommand(command, state: state) else {
                return done(.failure(RemoteControlError("an audio sender cannot seek from here (DACP has no seek)")))
            }
            dacp.send(dacpCommand, to: sender, completion: done)
        }
    }

    /// The DACP command for a remote command on audio; nil for seeks.
    static func dacpCommand(_ command: RemoteCommand, state: NowPlayingState) -> DACPCommand? {
        switch command {
        case .play: .play
        case .pause: .pause
        case .playPause: .playPause
        case .stop: .stop
        case .next: .nextItem
        case .previous: .previousItem
        case .volumeUp: .volumeUp
        case .volumeDown: .volumeDown
        case .setVolume(let decibels): .setDeviceVolume(decibels)
        case .seek, .setPosition: nil
        }
    }
}
