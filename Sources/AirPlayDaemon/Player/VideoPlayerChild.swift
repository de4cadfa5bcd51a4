import AirPlayMedia
import Dispatch
import Glibc
import GStreamerMedia
import NIOConcurrencyHelpers

/// The video player process (`airplayd --video-player`, started by `VideoPlayerHost`): GStreamer
/// and the untrusted media it decodes live here, so that a crash in them (Debian 12's
/// GStreamer 1.22.0 aborts in hlsdemux2 on some HLS) ends one video, not the daemon with its
/// audio sessions and zones. It carries out the daemon's messages on its players, in order, and
/// reports each player's status on every change and four times a second while it plays. It
/// exits when the daemon's end of the socket closes.
enum VideoPlayerChild {
    /// Serves the daemon until it goes away.
    static func run() -> Never {
        let socket = PlayerSocket(fd: ChildProcess.helperSocket)
        let players = NIOLockedValueBox<[Int: PlaybinPlayer]>([:])
        // Position reports while playing: the daemon's /playback-info reads its last one.
        let ticker = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "airplayd.video-player.status"))
        ticker.schedule(deadline: .now() + 0.25, repeating: 0.25)
        ticker.setEventHandler {
            for (id, player) in players.withLockedValue({ $0 }) {
                let status = player.status
                if [.loading, .playing, .paused].contains(status.state) { socket.send(.status(player: id, status, change: false)) }
            }
        }
        ticker.resume()
        while let message = socket.receive() {
            handle(message, players: players, socket: socket)
        }
        // The daemon is gone: nothing to play for.
        _exit(0)
    }

    private static func handle(_ message: PlayerMessage, players: NIOLockedValueBox<[Int: PlaybinPlayer]>, socket: PlayerSocket) {
        switch message {
        case .load(let id, let request, let setup, let url, let start, let paused):
            var configuration = PlaybinPlayer.Configuration(videoSink: setup.videoSink, audioOutput: setup.audioOutput)
            configuration.followRedirects = setup.followRedirects
            if setup.classic { configuration.element = "playbin" }
            do {
                let player = try PlaybinPlayer(configuration: configuration)
                player.onStateChange { status in socket.send(.status(player: id, status, change: true)) }
                players.withLockedValue { $0[id] = player }
                try player.load(url: url, start: start, paused: paused)
                socket.send(.status(player: id, player.status, change: false))
                socket.send(.reply(request: request, error: nil))
            } catch {
                socket.send(.reply(request: request, error: error))
            }
        case .play(let id): players.withLockedValue { $0[id] }?.play()
        case .pause(let id): players.withLockedValue { $0[id] }?.pause()
        case .seek(let id, let request, let seconds):
            answer(request, id, players: players, socket: socket) { player throws(MediaError) in try player.seek(to: seconds) }
        case .rate(let id, let request, let rate):
            answer(request, id, players: players, socket: socket) { player throws(MediaError) in try player.setRate(rate) }
        case .volume(let id, let volume): players.withLockedValue { $0[id] }?.setVolume(volume)
        case .stop(let id):
            let player = players.withLockedValue { $0.removeValue(forKey: id) }
            player?.stop()
        case .reply, .status:
            break
        }
    }

    /// Carries out a request on a player and answers it, the player's fresh status first (the
    /// daemon reads its position as soon as the answer comes: a seek's must show).
    private static func answer(_ request: Int, _ id: Int, players: NIOLockedValueBox<[Int: PlaybinPlayer]>, socket: PlayerSocket,
                               _ body: (PlaybinPlayer) throws(MediaError) -> Void) {
        let player = players.withLockedValue { $0[id] }
        let error = attempt(player, body)
        if let player { socket.send(.status(player: id, player.status, change: false)) }
        socket.send(.reply(request: request, error: error))
    }

    /// Runs `body` on the player; the error it throws, or that there is no such player.
    private static func attempt(_ player: PlaybinPlayer?, _ body: (PlaybinPlayer) throws(MediaError) -> Void) -> MediaError? {
        guard let player else { return MediaError(code: -1, domain: "airplayd.player", message: "no such player") }
        do {
            try body(player)
            return nil
        } catch {
            return error
        }
    }
}
