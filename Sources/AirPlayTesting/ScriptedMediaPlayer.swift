import AirPlayMedia
import Foundation
import Synchronization

/// A `MediaPlayer` for unit tests: it plays nothing, records what it is asked, reports the
/// states a test gives it, and can be made slow (as a GStreamer pipeline being built is) or
/// failing.
public final class ScriptedMediaPlayer: MediaPlayer, Sendable {
    /// One call the player received.
    public enum Call: Hashable, Sendable {
        /// `load(url:start:paused:)`.
        case load(url: String, paused: Bool)
        /// `play()`.
        case play
        /// `pause()`.
        case pause
        /// `seek(to:)`.
        case seek(Double)
        /// `setRate(_:)`.
        case rate(Double)
        /// `setVolume(_:)`.
        case volume(Double)
        /// `stop()`.
        case stop
    }

    private struct State {
        var calls: [Call] = []
        var status = MediaStatus.idle
        var handler: (@Sendable (MediaStatus) -> Void)?
    }

    private let state = Mutex(State())
    /// Seconds `load` takes before it returns.
    public let loadDelay: Double
    /// What `load` throws, if anything.
    public let loadError: MediaError?

    /// A player whose `load` takes `loadDelay` seconds and then throws `loadError`, if given.
    public init(loadDelay: Double = 0, loadError: MediaError? = nil) {
        self.loadDelay = loadDelay
        self.loadError = loadError
    }

    /// Every call so far, in order.
    public var calls: [Call] { state.withLock { $0.calls } }

    /// Reports a state, as a player's bus thread would.
    public func report(_ status: MediaStatus) {
        let handler = state.withLock { state in
            state.status = status
            return state.handler
        }
        handler?(status)
    }

    /// Records the call, waits `loadDelay`, then throws `loadError` or reports `loading`.
    public func load(url: String, start: StartPosition, paused: Bool) throws(MediaError) {
        state.withLock { $0.calls.append(.load(url: url, paused: paused)) }
        if loadDelay > 0 { Thread.sleep(forTimeInterval: loadDelay) }
        if let loadError { throw loadError }
        report(MediaStatus(state: .loading))
    }

    /// Records the call.
    public func play() { state.withLock { $0.calls.append(.play) } }
    /// Records the call.
    public func pause() { state.withLock { $0.calls.append(.pause) } }
    /// Records the call.
    public func seek(to seconds: Double) throws(MediaError) { state.withLock { $0.calls.append(.seek(seconds)) } }
    /// Records the call.
    public func setRate(_ rate: Double) throws(MediaError) { state.withLock { $0.calls.append(.rate(rate)) } }
    /// Records the call.
    public func setVolume(_ volume: Double) { state.withLock { $0.calls.append(.volume(volume)) } }
    /// Records the call.
    public func stop() { state.withLock { $0.calls.append(.stop) } }
    /// The last state reported.
    public var status: MediaStatus { state.withLock { $0.status } }

    /// Keeps the handler `report` calls.
    public func onStateChange(_ handler: @escaping @Sendable (MediaStatus) -> Void) {
        state.withLock { $0.handler = handler }
    }
}
