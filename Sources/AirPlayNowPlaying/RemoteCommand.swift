/// A remote-control command from one of the box's surfaces (MPRIS, MQTT, the page), carried
/// out on the video player or sent to the audio sender (DACP).
public enum RemoteCommand: Hashable, Sendable {
    /// Play (resume).
    case play
    /// Pause.
    case pause
    /// Toggle play and pause.
    case playPause
    /// Stop the session.
    case stop
    /// The next item.
    case next
    /// The previous item.
    case previous
    /// Move the position by this many seconds (negative: back).
    case seek(by: Double)
    /// Move to this position in seconds.
    case setPosition(Double)
    /// Set the volume in AirPlay dB (-30...0, -144 muted).
    case setVolume(decibels: Double)
    /// One step louder.
    case volumeUp
    /// One step quieter.
    case volumeDown

    /// Parses the names the surfaces accept (`play`, `pause`, `playpause`, `stop`, `next`,
    /// `previous`, `volumeup`, `volumedown`, `seek:SECONDS`, `position:SECONDS`, `volume:DB`).
    public init?(name: String) {
        let parts = name.lowercased().split(separator: ":", maxSplits: 1).map(String.init)
        let value = parts.count == 2 ? Double(parts[1]).flatMap { $0.isFinite ? $0 : nil } : nil
        switch (parts.first ?? "", value) {
        case ("play", nil): self = .play
        case ("pause", nil): self = .pause
        case ("playpause", nil), ("toggle", nil): self = .playPause
        case ("stop", nil): self = .stop
        case ("next", nil), ("nextitem", nil): self = .next
        case ("previous", nil), ("previtem", nil): self = .previous
        case ("volumeup", nil): self = .volumeUp
        case ("volumedown", nil): self = .volumeDown
        case ("seek", let seconds?): self = .seek(by: seconds)
        case ("position", let seconds?) where seconds >= 0: self = .setPosition(seconds)
        case ("volume", let decibels?) where decibels <= 0: self = .setVolume(decibels: max(decibels, -30))
        default: return nil
        }
    }
}

/// Why a remote-control command was not carried out, in words for the person who asked.
public struct RemoteControlError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// The command went out but no answer came: the sender may still carry it out, so a
    /// command that is not idempotent (next, previous) must not be sent another way too.
    public var mayHaveActed: Bool

    /// An error with its reason.
    public init(_ description: String, mayHaveActed: Bool = false) {
        self.description = description
        self.mayHaveActed = mayHaveActed
    }
}

/// Carries remote-control commands out for the session that plays.
public protocol RemoteControl: Sendable {
    /// Carries `command` out and calls `completion` once, from any thread.
    func perform(_ command: RemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void)
}

/// Receives every now-playing event with the state after it. Called on the now-playing
/// thread, one event at a time and in order: a surface must not block for long (write
/// without waiting, hand slow work to its own thread).
public protocol NowPlayingSurface: AnyObject, Sendable {
    /// `event` happened; `state` is the state after it.
    func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double)
    /// The daemon stops: say goodbye where the surface can (MQTT's `offline`), let go of the rest.
    func stop()
}

extension NowPlayingSurface {
    /// Nothing to say goodbye to.
    public func stop() {}
}
