import AirPlayMedia
import Dispatch
import Glibc
import Logging
import Synchronization

/// airplayd's side of its video player process (`VideoPlayerChild`): starts it when the first
/// video needs a player (and again after it died), hands out `ChildMediaPlayer`s that drive
/// players in it, and when it dies (a crash in GStreamer, a kill), fails every player it held
/// with the reason (`MediaError.playerProcessEnded`): the video sessions then play on in a new
/// process once, and end with an error event the second time, while the daemon plays on.
final class VideoPlayerHost: Sendable {
    private struct Child: Sendable {
        var socket: PlayerSocket
        var pid: pid_t
    }

    private struct State: Sendable {
        var child: Child?
        var nextPlayer = 1
        var nextRequest = 1
        var players: [Int: ChildMediaPlayer] = [:]
        var waiting: [Int: ReplyBox] = [:]
    }

    /// Where one request's reply lands.
    final class ReplyBox: Sendable {
        let done = DispatchSemaphore(value: 0)
        let error = Mutex<MediaError??>(nil)
    }

    private let state = Mutex(State())
    private let executable: String
    private let logger: Logger

    /// A host starting `executable --video-player` (the daemon's own binary).
    init(executable: String = "/proc/self/exe", logger: Logger) {
        self.executable = executable
        self.logger = logger
    }

    /// A new player in the child (which starts on its `load`).
    func makePlayer(_ setup: PlayerMessage.Setup) -> ChildMediaPlayer {
        let player = state.withLock { state -> ChildMediaPlayer in
            defer { state.nextPlayer += 1 }
            return ChildMediaPlayer(id: state.nextPlayer, setup: setup, host: self)
        }
        state.withLock { $0.players[player.id] = player }
        return player
    }

    /// Sends a message that is not answered.
    func send(_ message: PlayerMessage) {
        state.withLock { $0.child?.socket }?.send(message)
    }

    /// Sends a request and waits for its answer (starting the child if needed): nil, or the failure.
    func call(_ make: (Int) -> PlayerMessage, timeout: Double) -> MediaError? {
        let box = ReplyBox()
        let sent: Bool
        do {
            sent = try state.withLock { state throws(MediaError) -> Bool in
                let child: Child
                if let running = state.child { child = running } else { child = try start(&state) }
                let request = state.nextRequest
                state.nextRequest += 1
                state.waiting[request] = box
                return child.socket.send(make(request))
            }
        } catch {
            return error
        }
        // A send that failed met a dead child: its reader fails every request it held, this one
        // too, once it has reaped it (so a retry starts a new child, not the dead one).
        guard box.done.wait(timeout: .now() + (sent ? timeout : 5)) == .success else {
            if !sent { return .playerProcessEnded("the video player process is gone") }
            return MediaError(code: -1, domain: "airplayd.player", message: "the video player process did not answer within \(Int(timeout)) s")
        }
        return box.error.withLock { $0 } ?? nil
    }

    /// The player is done with; its reports are no longer wanted.
    func forget(_ id: Int) {
        state.withLock { _ = $0.players.removeValue(forKey: id) }
    }

    /// Spawns the child on a fresh socket pair and starts reading from it. Under the lock.
    private func start(_ state: inout State) throws(MediaError) -> Child {
        let (ours, pid) = try ChildProcess.helper(executable, "--video-player")
        let child = Child(socket: ours, pid: pid)
        state.child = child
        logger.info("video player process started", metadata: ["pid": "\(pid)"])
        // The child's reports are read on a thread of their own, blocked in recv until it ends.
        DispatchQueue(label: "airplayd.video-player.\(pid)").async { [self] in read(child) }
        return child
    }

    /// Reads the child's messages until it is gone; then fails what it held.
    private func read(_ child: Child) {
        while let message = child.socket.receive() {
            switch message {
            case .reply(let request, let error):
                if let box = state.withLock({ $0.waiting.removeValue(forKey: request) }) {
                    box.error.withLock { $0 = .some(error) }
                    box.done.signal()
                }
            case .status(let id, let status, let change):
                state.withLock { $0.players[id] }?.update(status, change: change)
            default:
                break
            }
        }
        let reason = ChildProcess.reap(child.pid)
        let (players, waiting) = state.withLock { state -> ([ChildMediaPlayer], [ReplyBox]) in
            if state.child?.pid == child.pid { state.child = nil }
            defer { (state.players, state.waiting) = ([:], [:]) }
            return (Array(state.players.values), Array(state.waiting.values))
        }
        child.socket.close()
        logger.warning("video player process ended", metadata: ["pid": "\(child.pid)", "reason": "\(reason)", "players": "\(players.count)"])
        let error = MediaError.playerProcessEnded("the video player process ended (\(reason)); airplayd goes on")
        for box in waiting {
            box.error.withLock { $0 = .some(error) }
            box.done.signal()
        }
        for player in players { player.failed(error) }
    }
}
