/// Where a media player is in its life.
public enum MediaState: String, Hashable, Sendable {
    /// Nothing loaded.
    case idle
    /// Loading or buffering before the first frame.
    case loading
    /// Playing.
    case playing
    /// Paused by request (rate 0).
    case paused
    /// Reached the end of the media.
    case ended
    /// Failed; see `MediaStatus.error`.
    case failed
    /// Stopped by request.
    case stopped
}

/// Why media could not be played, in the shape AirPlay's `/playback-info` error dictionary takes.
public struct MediaError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A numeric code (negative, in the style of AVFoundation errors).
    public var code: Int
    /// The error domain: GStreamer's GLib quark (`gst-resource-error-quark`, …) or ours (`airplayd.timeout`, `airplayd.url`).
    public var domain: String
    /// A human-readable message.
    public var message: String

    /// An error from its parts.
    public init(code: Int, domain: String, message: String) {
        self.code = code
        self.domain = domain
        self.message = message
    }

    /// `domain code: message`.
    public var description: String { "\(domain) \(code): \(message)" }

    /// The process a player ran in ended under it (`reason`: how), as opposed to a failure of
    /// the media it played: a new player in a new process may well play on.
    public static func playerProcessEnded(_ reason: String) -> MediaError {
        MediaError(code: -2, domain: "airplayd.player", message: reason)
    }

    /// True for `playerProcessEnded`.
    public var isPlayerProcessEnd: Bool { domain == "airplayd.player" && code == -2 }
}

/// A time range in seconds.
public struct TimeRange: Hashable, Sendable {
    /// Start, seconds.
    public var start: Double
    /// Duration, seconds.
    public var duration: Double

    /// A range from its parts.
    public init(start: Double, duration: Double) {
        self.start = start
        self.duration = duration
    }
}

/// A snapshot of a player, as `/playback-info` and `/scrub` report it.
public struct MediaStatus: Hashable, Sendable {
    /// The state.
    public var state: MediaState
    /// Position in seconds, clamped to the media.
    public var position: Double
    /// Duration in seconds; nil while unknown or when nothing is loaded; infinity for live streams.
    public var duration: Double?
    /// The playback rate (0 when paused).
    public var rate: Double
    /// Buffer fill, 0...100.
    public var bufferPercent: Int
    /// What has been downloaded.
    public var loadedRanges: [TimeRange]
    /// Where seeking is possible.
    public var seekableRanges: [TimeRange]
    /// The failure, when `state == .failed`.
    public var error: MediaError?

    /// A status from its parts.
    public init(state: MediaState, position: Double = 0, duration: Double? = nil, rate: Double = 0,
                bufferPercent: Int = 0, loadedRanges: [TimeRange] = [], seekableRanges: [TimeRange] = [],
                error: MediaError? = nil) {
        self.state = state
        self.position = position
        self.duration = duration
        self.rate = rate
        self.bufferPercent = bufferPercent
        self.loadedRanges = loadedRanges
        self.seekableRanges = seekableRanges
        self.error = error
    }

    /// Nothing loaded.
    public static let idle = MediaStatus(state: .idle)

    /// True once the first frame is ready.
    public var readyToPlay: Bool { [.playing, .paused, .ended].contains(state) }
}

/// Where playback of newly loaded media starts.
public enum StartPosition: Hashable, Sendable {
    /// Absolute seconds.
    case seconds(Double)
    /// A fraction of the duration, 0...1.
    case fraction(Double)
}

/// Plays one media URL. The receiver talks to this protocol; the daemon always wires the
/// GStreamer implementation, unit tests may use a scripted one.
public protocol MediaPlayer: AnyObject, Sendable {
    /// Starts loading `url`; playback starts at `start`, paused when `paused`.
    func load(url: String, start: StartPosition, paused: Bool) throws(MediaError)
    /// Plays at rate 1.
    func play()
    /// Pauses.
    func pause()
    /// Seeks to a position in seconds (clamped to the media).
    func seek(to seconds: Double) throws(MediaError)
    /// Plays at another rate; throws when the media cannot.
    func setRate(_ rate: Double) throws(MediaError)
    /// Sets the volume, 0...1.
    func setVolume(_ volume: Double)
    /// Stops and releases the media.
    func stop()
    /// The current status.
    var status: MediaStatus { get }
    /// Called on every state change (from any thread).
    func onStateChange(_ handler: @escaping @Sendable (MediaStatus) -> Void)
}

/// Where received audio goes: interleaved PCM in the format the output was made for (its
/// rate, channels and depth: see `PCMFormat`), written when due.
public protocol PCMOutput: AnyObject, Sendable {
    /// Writes interleaved samples at the output's depth, called by the playout clock when they are due.
    func write(_ samples: [Int32])
    /// Releases the device or file.
    func close()
    /// Seconds between a write and the moment its first frame is heard (the sink's latency):
    /// the playout writes that much earlier so frames are heard when the sender means.
    var presentationDelay: Double { get }
    /// Seconds before its time a write may come without changing when it is heard. An output
    /// with no clock of its own (a file, a FIFO read by another program's buffer) takes writes
    /// early, so the playout writes several packets a wake-up, in one call; a sink that stamps
    /// buffers with the time they arrive must be written on time (0).
    var writeAhead: Double { get }
    /// The output's own clock, read now: how many frames it holds that have not left it yet.
    /// nil for an output with no clock of its own (a file, a FIFO); a sound card answers, and
    /// the playout then follows the card's crystal rather than the system clock.
    func clockReading() -> OutputClockReading?
}

/// One reading of a sound card's clock: at `time`, `queuedFrames` of the `writtenFrames` given
/// since the card (re)started had not left it yet. The frames that left by `time` are
/// `writtenFrames - queuedFrames`; their count over time is the card's real rate.
public struct OutputClockReading: Hashable, Sendable {
    /// When it was read, in seconds on CLOCK_MONOTONIC.
    public var time: Double
    /// Frames written since the card last started (a restart after an underrun or a reopen
    /// begins again at 0 and raises `restarts`).
    public var writtenFrames: Int
    /// Frames written that had not left the card at `time` (ALSA's delay).
    public var queuedFrames: Int
    /// How many times the card stopped and started again (underrun, reopen): a new count means
    /// the readings before say nothing about where the card is now.
    public var restarts: Int
    /// When the card's current run started (its first frame written left it then), when the
    /// output knows: more exact than a delay read through a pointer that moves in steps.
    public var startTime: Double?

    /// A reading.
    public init(time: Double, writtenFrames: Int, queuedFrames: Int, restarts: Int, startTime: Double? = nil) {
        self.time = time
        self.writtenFrames = writtenFrames
        self.queuedFrames = queuedFrames
        self.restarts = restarts
        self.startTime = startTime
    }
}

extension PCMOutput {
    /// No clock of its own: the playout keeps time on the system's monotonic clock.
    public func clockReading() -> OutputClockReading? { nil }
    /// No delay: a file or FIFO receives the frames the moment they are written.
    public var presentationDelay: Double { 0 }
    /// Written on time: the safe default for a sink that plays what it gets when it gets it.
    public var writeAhead: Double { 0 }
}
