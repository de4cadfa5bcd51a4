/// How one way of playing `airplay stream` (realtime, buffered, a mixed group) carries out
/// `StreamControl`'s steps on its receivers. It decides nothing: what to do, and when, is the
/// control's; this is only the wire.
protocol StreamPlayback: AnyObject {
    /// Seconds of the stream heard so far, for the progress line.
    var elapsed: Double { get }
    /// How long the receivers take to play what they hold once the source has run out.
    var playOutSeconds: Double { get }
    /// A second's housekeeping (a playlist's next item, receivers whose connection broke).
    func tend(report: @Sendable (RAOPStreamSession.Report) -> Void) async
    /// Keeps every receiver's session alive; throws when the stream cannot go on.
    func keepAlive(decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError)
    /// Sets every receiver's volume.
    func setVolume(decibels: Double) async throws(SenderError)
    /// Pauses every player and receiver.
    func pause() async throws(SenderError)
    /// Resumes every player and receiver from the frame not yet heard.
    func resume() async throws(SenderError)
    /// Moves through the playlist; false when that went past its last file.
    func skip(by offset: Int, paused: Bool, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) -> Bool
    /// Sets a receiver up and lets it join the running stream in step.
    func join(_ link: ReceiverLink, decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError)
    /// Stops every player.
    func stop()
}

extension StreamPlayback {
    /// Only a realtime playlist moves through files (`StreamControl` asks no one else).
    func skip(by offset: Int, paused: Bool, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) -> Bool { true }

    /// Only buffered streams and mixed groups take receivers joining (`StreamControl` turns the
    /// others away before asking).
    func join(_ link: ReceiverLink, decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        throw SenderError(.badInput, "this stream takes no receivers joining")
    }
}

extension Array where Element == ReceiverLink {
    /// Keeps every link's session alive, in order; the first failure ends it.
    func keepAlive(decibels: Double) async throws(SenderError) {
        for link in self { try await link.keepAlive(volumeDecibels: decibels) }
    }

    /// Sets every link's volume, in order; the first failure ends it.
    func setVolume(decibels: Double) async throws(SenderError) {
        for link in self { try await link.setVolume(decibels: decibels) }
    }
}

extension RAOPStreamSession {
    /// How a stream's events went: whether it was stopped early, and who joined.
    struct Played {
        /// True when it was stopped before the end.
        var quit = false
        /// Receivers that joined on the way (to tear down and sum up with the others).
        var joined: [ReceiverLink] = []
    }

    /// Plays until the source ends or a quit: each event through `control`, each of its steps
    /// carried out by `playback`. A step that fails stops the players and ends the stream with
    /// its error.
    func drive(_ playback: some StreamPlayback, control: StreamControl, events: AsyncStream<Event>,
               report: @escaping @Sendable (Report) -> Void) async throws(SenderError) -> Played {
        var control = control, played = Played()
        for await event in events {
            do throws(SenderError) {
                var actions = control.handle(event)
                while !actions.isEmpty {
                    let action = actions.removeFirst()
                    if try await carryOut(action, of: event, by: playback, control: control, played: &played, report: report) == false {
                        // Past the playlist's last file: the stream ends, as a player's queue does.
                        actions = control.handle(.quit)
                    }
                }
            } catch {
                playback.stop()
                throw error
            }
            if control.finished { break }
        }
        return played
    }

    /// Carries one step out; false when a skip went past the last file.
    private func carryOut(_ action: StreamControl.Action, of event: Event, by playback: some StreamPlayback, control: StreamControl,
                          played: inout Played, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) -> Bool {
        switch action {
        case .tend:
            await playback.tend(report: report)
        case .progress(let paused, let volume):
            report(.progress(elapsed: playback.elapsed, paused: paused, volume: volume))
        case .keepAlive(let decibels):
            try await playback.keepAlive(decibels: decibels, report: report)
        case .setVolume(let decibels):
            try await playback.setVolume(decibels: decibels)
        case .pause:
            try await playback.pause()
        case .resume:
            try await playback.resume()
        case .skip(let offset):
            return try await playback.skip(by: offset, paused: control.paused, report: report)
        case .join:
            guard case .join(let link, let done) = event else { return true }
            do {
                try await playback.join(link, decibels: Self.decibels(control.volume), report: report)
                played.joined.append(link)
                done(nil)
            } catch {
                await link.tearDown()
                done(error)
            }
        case .refuseJoin(let reason):
            guard case .join(let link, let done) = event else { return true }
            done(SenderError(.badInput, reason))
            await link.tearDown()
        case .say(let text):
            report(.state(text))
        case .stop:
            played.quit = true
            playback.stop()
        case .playOut:
            try? await Task.sleep(for: .seconds(playback.playOutSeconds))
        }
        return true
    }
}
