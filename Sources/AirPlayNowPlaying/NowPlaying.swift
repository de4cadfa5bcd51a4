import AirPlayWire
import FoundationEssentials
import NIOConcurrencyHelpers
import LinuxIO

/// The box's now-playing state and the hub of its surfaces. Sessions `post` events; the state
/// applies each at once (so `state` is always current), and one thread of its own hands each
/// event, with the state after it, to every surface in order. Playback never waits on a
/// surface: the hand-over queue is bounded, and when surfaces fall behind by more than
/// `queueLimit` events the oldest are dropped (counted in `droppedEvents`).
public final class NowPlaying: Sendable {
    /// How many events may wait for the surfaces.
    public static let queueLimit = 512

    private let clock: any MonotonicClock
    private let current = NIOLockedValueBox(NowPlayingState())
    private let surfaces = NIOLockedValueBox<[any NowPlayingSurface]>([])
    private let remoteControl = NIOLockedValueBox<(any RemoteControl)?>(nil)
    private let queue = ConditionLock(value: 0)
    private let pending = NIOLockedValueBox<(events: [(NowPlayingEvent, NowPlayingState, Double)], dropped: Int, started: Bool)>(([], 0, false))

    /// An idle state; `clock` times positions (a manual clock in tests).
    public init(clock: any MonotonicClock = SystemClock()) {
        self.clock = clock
    }

    /// The state now.
    public var state: NowPlayingState { current.withLockedValue { $0 } }

    /// The monotonic time surfaces measure positions against.
    public func now() -> Double { clock.now() }

    /// Events dropped because the surfaces fell behind.
    public var droppedEvents: Int { pending.withLockedValue { $0.dropped } }

    /// Adds a surface; it hears every event posted from now on.
    public func attach(_ surface: any NowPlayingSurface) {
        surfaces.withLockedValue { $0.append(surface) }
        startThreadOnce()
    }

    /// Who carries remote-control commands out (the receiver sets itself).
    public func setRemoteControl(_ remote: any RemoteControl) { remoteControl.withLockedValue { $0 = remote } }

    /// Carries a command out through the remote control; fails at once when nothing plays.
    public func perform(_ command: RemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        guard state.sender != nil else { return completion(.failure(RemoteControlError("nothing is playing"))) }
        guard let remote = remoteControl.withLockedValue({ $0 }) else {
            return completion(.failure(RemoteControlError("remote control is not available")))
        }
        remote.perform(command, completion: completion)
    }

    /// Applies `event` to the state and queues it for the surfaces. Sessions post from several
    /// threads (the event loop, the audio thread, the players): the state is applied and the
    /// event queued under one lock, so surfaces hear events in the order the state took them.
    /// A cover still waiting when a newer one comes is dropped: only the newest is worth showing,
    /// and covers are what is large.
    public func post(_ event: NowPlayingEvent) {
        queue.lock()
        let time = clock.now()
        let after = current.withLockedValue { state in
            state = state.applying(event, now: time)
            return state
        }
        guard surfaces.withLockedValue({ !$0.isEmpty }) else { return queue.unlock() }
        pending.withLockedValue { pending in
            if case .artwork = event, let older = pending.events.firstIndex(where: { if case .artwork = $0.0 { true } else { false } }) {
                pending.events.remove(at: older)
                pending.dropped += 1
            }
            if pending.events.count >= Self.queueLimit {
                pending.events.removeFirst()
                pending.dropped += 1
            }
            pending.events.append((event, after, time))
        }
        queue.unlock(withValue: 1)
    }

    /// Waits until the surfaces have heard every event posted so far (tests, orderly stops);
    /// gives up after `timeout` seconds.
    @discardableResult
    public func drain(timeout: Double = 2) -> Bool {
        // The real clock: a test's manual clock would never reach the deadline.
        let deadline = SystemClock().now() + timeout
        while SystemClock().now() < deadline {
            if queue.lock(whenValue: 0, timeoutSeconds: 0.01) {
                queue.unlock()
                return true
            }
        }
        return false
    }

    private func startThreadOnce() {
        let start = pending.withLockedValue { pending in
            defer { pending.started = true }
            return !pending.started
        }
        guard start else { return }
        DedicatedThread.start(name: "now-playing") { [weak self] in
            while let self, self.deliverNext() {}
        }
    }

    /// Waits for the next event (up to a second, so the thread ends with the hub) and hands it
    /// to every surface; false once the hub is gone.
    private func deliverNext() -> Bool {
        guard queue.lock(whenValue: 1, timeoutSeconds: 1) else { return true }
        let next = pending.withLockedValue { pending in pending.events.isEmpty ? nil : pending.events.removeFirst() }
        let more = pending.withLockedValue { !$0.events.isEmpty }
        // The value stays 1 while the surfaces work, so `drain` waits for them too.
        queue.unlock(withValue: 1)
        if let (event, state, time) = next {
            for surface in surfaces.withLockedValue({ $0 }) { surface.nowPlaying(event, state: state, at: time) }
        }
        if !more {
            queue.lock()
            let empty = pending.withLockedValue { $0.events.isEmpty }
            queue.unlock(withValue: empty ? 0 : 1)
        }
        return true
    }
}
