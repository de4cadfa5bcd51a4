import AirPlayMedia
import Synchronization
import LinuxIO

/// A video player that plays in airplayd's video player process (`VideoPlayerHost`): the
/// receiver drives it like any `MediaPlayer`. Loads, seeks and rate changes wait for the child's
/// answer (they run on the video sessions' own queue, never an event loop); the status is the
/// child's last report, its position carried forward at the rate while it plays, so a
/// `/playback-info` never waits on the child.
final class ChildMediaPlayer: MediaPlayer, Sendable {
    /// The player's number in the child.
    let id: Int
    private let setup: PlayerMessage.Setup
    private let host: VideoPlayerHost
    private let reported = Mutex<(status: MediaStatus, at: Double)>((.idle, 0))
    private let handler = Mutex<(@Sendable (MediaStatus) -> Void)?>(nil)
    /// True while `load` waits for the child: a death then fails the load, which says so itself.
    private let loading = Mutex(false)

    init(id: Int, setup: PlayerMessage.Setup, host: VideoPlayerHost) {
        self.id = id
        self.setup = setup
        self.host = host
    }

    private static func now() -> Double { SystemClock().now() }

    func load(url: String, start: StartPosition, paused: Bool) throws(MediaError) {
        update(MediaStatus(state: .loading), change: false)
        loading.withLock { $0 = true }
        defer { loading.withLock { $0 = false } }
        if let error = host.call({ .load(player: id, request: $0, setup: setup, url: url, start: start, paused: paused) }, timeout: 30) {
            throw error
        }
    }

    func play() { host.send(.play(player: id)) }

    /// Pauses; the status says so at once (a `/playback-info` right after a remote's pause must
    /// not read rate 1), and the child's next report, four a second, says what really happened.
    func pause() {
        host.send(.pause(player: id))
        let paused = status
        guard paused.state == .playing else { return }
        var now = paused
        now.state = .paused
        now.rate = 0
        update(now, change: false)
    }

    func seek(to seconds: Double) throws(MediaError) {
        if let error = host.call({ .seek(player: id, request: $0, seconds: seconds) }, timeout: 15) { throw error }
    }

    func setRate(_ rate: Double) throws(MediaError) {
        if let error = host.call({ .rate(player: id, request: $0, rate: rate) }, timeout: 15) { throw error }
    }

    func setVolume(_ volume: Double) { host.send(.volume(player: id, volume: volume)) }

    func stop() {
        host.send(.stop(player: id))
        host.forget(id)
        update(MediaStatus(state: .stopped), change: false)
    }

    var status: MediaStatus {
        let (status, at) = reported.withLock { $0 }
        guard status.state == .playing, status.rate != 0 else { return status }
        var carried = status
        carried.position += (Self.now() - at) * status.rate
        if let duration = status.duration, duration.isFinite { carried.position = min(max(0, carried.position), duration) }
        return carried
    }

    func onStateChange(_ handler: @escaping @Sendable (MediaStatus) -> Void) {
        self.handler.withLock { $0 = handler }
    }

    /// A report from the child: kept; a state change (the child's player reported one) is
    /// passed on, as the player in the daemon would have.
    func update(_ status: MediaStatus, change: Bool) {
        reported.withLock { $0 = (status, Self.now()) }
        if change { handler.withLock { $0 }?(status) }
    }

    /// The child died under this player: failed where it had got to (the position carried
    /// forward, so a new player can play on from there). Not while it loads: the load throws.
    func failed(_ error: MediaError) {
        guard !loading.withLock({ $0 }) else { return }
        guard ![.stopped, .ended, .failed].contains(reported.withLock({ $0.status.state })) else { return }
        var status = self.status
        status.state = .failed
        status.error = error
        update(status, change: true)
    }
}
