/// What `airplay stream` does about each thing that happens while it plays, decided without
/// I/O, threads or clocks: the session's events go in, the steps to carry out come back, in
/// order. The three ways of playing (realtime, buffered, a mixed group) decide alike and differ
/// only in how they carry the steps out on the wire (`StreamPlayback`).
struct StreamControl: Sendable {
    /// How the stream plays, as far as deciding goes.
    enum Mode: Equatable, Sendable {
        /// Realtime audio (RAOP, or AirPlay 2 type 96); `playlist`: several files to move through.
        case realtime(playlist: Bool)
        /// Buffered audio (AirPlay 2 type 103) to every receiver.
        case buffered
        /// A mixed group: a realtime player and a buffered one, reading one source.
        case mixed
    }

    /// One step to carry out.
    enum Action: Equatable, Sendable {
        /// A second's housekeeping: a playlist's next item told, receivers that dropped let go.
        case tend
        /// The progress line: the seconds heard come from the players.
        case progress(paused: Bool, volume: Double)
        /// Keeps every receiver's session alive (and its volume, for receivers that forget it).
        case keepAlive(decibels: Double)
        /// Sets every receiver's volume.
        case setVolume(decibels: Double)
        /// Stops sending and tells the receivers to drop what they have not played.
        case pause
        /// Plays again from the frame not yet heard.
        case resume
        /// Moves through the playlist by this many files (and ends the stream past the last).
        case skip(Int)
        /// Sets the receiver of the `join` event up and lets it join the stream in step.
        case join
        /// Turns the receiver of the `join` event away, with the reason.
        case refuseJoin(String)
        /// Tells the user (the live line, `--json`'s state).
        case say(String)
        /// Stops the players now: the stream ends early.
        case stop
        /// The source ran out: lets the receivers play what they hold, then the stream ends.
        case playOut
    }

    /// The mode decided for.
    let mode: Mode
    /// The volume (0-100).
    private(set) var volume: Double
    /// Whether the stream is paused.
    private(set) var paused = false
    /// Whether the stream has ended (`stop` or `playOut` was the last step): events after that
    /// change nothing.
    private(set) var finished = false
    /// Ticks so far: a keep-alive goes with every other one.
    private var ticks = 0
    /// Players that have run out of audio (a mixed group has two).
    private var playersEnded = 0

    /// The control of a stream in `mode` that starts at `volume` (0-100), playing.
    init(mode: Mode, volume: Double) {
        self.mode = mode
        self.volume = Self.clamped(volume)
    }

    /// The steps for `event`.
    mutating func handle(_ event: RAOPStreamSession.Event) -> [Action] {
        guard !finished else { return [] }
        switch event {
        case .tick:
            ticks += 1
            let tended: [Action] = [.tend, .progress(paused: paused, volume: volume)]
            return ticks % 2 == 0 ? tended + [.keepAlive(decibels: RAOPStreamSession.decibels(volume))] : tended
        case .togglePause:
            return setPaused(!paused)
        case .setPaused(let wanted):
            return wanted == paused ? [] : setPaused(wanted)
        case .setVolume(let target):
            return setVolume(target)
        case .volume(let change):
            return setVolume(volume + change)
        case .skip(let offset):
            switch mode {
            case .realtime(playlist: true): return [.skip(offset)]
            case .realtime(playlist: false): return [.say("one file: nothing to skip to")]
            // A queue of buffered audio would need FLUSHBUFFERED of what the receivers hold.
            case .buffered, .mixed: return [.say("next and previous move through files in realtime mode only")]
            }
        case .join:
            return join()
        case .quit:
            finished = true
            return [.stop]
        case .ended:
            playersEnded += 1
            guard playersEnded >= (mode == .mixed ? 2 : 1) else { return [] }
            finished = true
            return [.playOut]
        }
    }

    /// The steps for a receiver asking to join (`airplay group add`): a realtime stream's
    /// receivers each got its RTP start in SETUP, so only buffered ones and mixed groups take it.
    func join() -> [Action] {
        guard !finished else { return [] }
        if case .realtime = mode { return [.refuseJoin("receivers join only a buffered stream (--mode buffered)")] }
        return [.join]
    }

    private mutating func setPaused(_ wanted: Bool) -> [Action] {
        paused = wanted
        return wanted ? [.pause, .say("paused")] : [.resume, .say("playing")]
    }

    private mutating func setVolume(_ target: Double) -> [Action] {
        volume = Self.clamped(target)
        return [.setVolume(decibels: RAOPStreamSession.decibels(volume)), .say("volume \(Int(volume))")]
    }

    private static func clamped(_ volume: Double) -> Double { min(100, max(0, volume)) }
}
