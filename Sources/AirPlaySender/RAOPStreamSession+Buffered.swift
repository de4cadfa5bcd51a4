import AirPlayTiming
import Foundation

/// `airplay stream --mode buffered`: the same session, its audio buffered on AirPlay 2
/// receivers and anchored on our PTP grandmaster (`BufferedStreamer`).
extension RAOPStreamSession {
    func runBuffered(grandmaster: PTPGrandmaster, events: AsyncStream<Event>, continuation: AsyncStream<Event>.Continuation,
                     warn: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) -> Summary {
        let start = Self.rtpStart()
        var volume = initialVolume
        let encoder = try bufferedEncoder()
        let codec = bufferedCodec
        do {
            for link in Self.followedClocksFirst(links) {
                try await link.setUpBuffered(grandmaster: grandmaster, format: source.format, codec: codec, volumeDecibels: Self.decibels(volume),
                                             warn: warn)
            }
        } catch {
            for link in links { await link.tearDown() }
            throw error
        }
        let streamer = BufferedStreamer(links: links, clock: grandmaster, firstTimestamp: start.timestamp, format: source.format, encoder: encoder)
        let rate = Double(source.format.sampleRate)
        await sendStartMetadata(rtpTime: start.timestamp)
        // One anchor for all: every receiver plays the first frame at the same PTP time.
        let anchor = streamer.startAnchor()
        let timeline = Self.timeline(heardAt: anchor.networkTime, on: grandmaster)
        var failure = await Self.send(anchor, to: links)
        report(.started)
        let source = self.source
        let player = Thread {
            streamer.play(read: { source.read(frames: streamer.framesPerPacket) })
            continuation.yield(.ended)
        }
        if failure == nil { player.start() }
        var ticks = 0, quitEarly = false
        var joined: [RAOPLink] = []
        loop: for await event in events {
            if failure != nil { break }
            do throws(SenderError) {
                switch event {
                case .tick:
                    ticks += 1
                    await Self.letGoOfDropped(streamer, report: report)
                    report(.progress(elapsed: streamer.secondsPlayed, paused: streamer.isPaused, volume: volume))
                    if ticks % 2 == 0 {
                        // A receiver that stopped answering leaves the group; the others play on.
                        for link in streamer.links {
                            do {
                                try await link.keepAlive(volumeDecibels: Self.decibels(volume))
                            } catch {
                                let remaining = streamer.leave(link)
                                report(.state("left \(link.name): \(error.message)"))
                                await link.tearDown()
                                if remaining == 0 { throw error }
                            }
                        }
                    }
                case .setPaused(let paused) where paused == streamer.isPaused:
                    continue loop
                case .skip:
                    // A queue in buffered mode would need FLUSHBUFFERED of what the receivers hold.
                    report(.state("next and previous move through files in realtime mode only"))
                case .setVolume(let target):
                    volume = min(100, max(0, target))
                    for link in streamer.links { try await link.setVolume(decibels: Self.decibels(volume)) }
                    report(.state("volume \(Int(volume))"))
                case .togglePause, .setPaused:
                    if let resume = streamer.resume() {
                        for link in streamer.links { try await link.sendAnchor(resume) }
                        report(.state("playing"))
                    } else if let pause = streamer.pause() {
                        for link in streamer.links { try await link.sendAnchor(pause) }
                        report(.state("paused"))
                    }
                case .volume(let change):
                    volume = min(100, max(0, volume + change))
                    for link in streamer.links { try await link.setVolume(decibels: Self.decibels(volume)) }
                    report(.state("volume \(Int(volume))"))
                case .join(let link, let done):
                    Self.keepTheTimeline(for: link, report: report)
                    do {
                        try await joinBuffered(link, streamer: streamer, grandmaster: grandmaster, volume: volume, warn: warn, report: report)
                        joined.append(link)
                        done(nil)
                    } catch {
                        await link.tearDown()
                        done(error)
                    }
                case .quit:
                    quitEarly = true
                    streamer.stop()
                    break loop
                case .ended:
                    // The receivers hold seconds of audio: let it sound before they are told to stop.
                    try? await Task.sleep(for: .seconds(streamer.secondsToEnd + 0.3))
                    break loop
                }
            } catch {
                failure = error
                streamer.stop()
                break loop
            }
        }
        for link in streamer.links { await link.tearDown() }
        grandmaster.stop()
        if let failure { throw failure }
        var result = summary(seconds: Double(streamer.framesSent) / rate, quit: quitEarly, joined: joined)
        result.timeline = timeline
        return result
    }

    /// The buffered stream's encoder in the session's codec, for the source's format.
    func bufferedEncoder() throws(SenderError) -> any BufferedEncoder {
        do {
            return try bufferedCodec == .aac ? AACBufferedEncoder(format: source.format) : ALACBufferedEncoder(format: source.format)
        } catch {
            throw SenderError(.badInput, error.message)
        }
    }

    /// The item, its artwork and its progress to every link, for a stream starting at `rtpTime`;
    /// returns the artwork (sent again on a resume).
    @discardableResult
    func sendStartMetadata(rtpTime: UInt32) async -> (type: String, bytes: [UInt8])? {
        let tags = source.tags
        let artwork = tags.artwork.flatMap { bytes in tags.artworkType.map { (type: $0, bytes: bytes) } }
        let rate = Double(source.format.sampleRate)
        let trackStart = rtpTime &- UInt32(truncatingIfNeeded: Int64(startOffset * rate))
        let progress = tags.duration.map { (trackStart, rtpTime, trackStart &+ UInt32(truncatingIfNeeded: Int64(min($0, 1e9) * rate))) }
        for link in links { await link.sendMetadata(item, artwork: artwork, progress: progress, rtpTime: rtpTime) }
        return artwork
    }

    /// A receiver joins buffered: set up, given the anchor in force, then the audio not yet heard.
    func joinBuffered(_ link: RAOPLink, streamer: BufferedStreamer, grandmaster: PTPGrandmaster, volume: Double,
                      warn: @escaping @Sendable (String) -> Void, report: @Sendable (Report) -> Void) async throws(SenderError) {
        try await link.setUpBuffered(grandmaster: grandmaster, format: source.format, codec: bufferedCodec, volumeDecibels: Self.decibels(volume),
                                     warn: warn)
        try await link.sendAnchor(streamer.currentAnchor())
        let caughtUp = streamer.join(link)
        report(.state("joined \(link.name) (\(caughtUp) packets to catch up)"))
    }

    /// A receiver that keeps its own clock, joining a stream already playing, is served the
    /// group's: the timeline of a stream that plays cannot become another clock.
    static func keepTheTimeline(for link: RAOPLink, report: @Sendable (Report) -> Void) {
        guard link.followsReceiverClock else { return }
        link.followsReceiverClock = false
        report(.state("\(link.name) keeps its own PTP clock, but joins a stream on the group's: it may stay silent"))
    }

    /// Receivers whose data connection broke were dropped by the streamer: say so, and let go.
    static func letGoOfDropped(_ streamer: BufferedStreamer, report: @Sendable (Report) -> Void) async {
        for link in streamer.takeDropped() {
            report(.state("left \(link.name): its data connection broke"))
            await link.tearDown()
        }
    }

    /// The first anchor to every buffered link; the error of the first that failed.
    static func send(_ anchor: RateAnchorMessage, to links: [RAOPLink]) async -> SenderError? {
        do throws(SenderError) {
            for link in links { try await link.sendAnchor(anchor) }
            return nil
        } catch {
            return error
        }
    }
}
