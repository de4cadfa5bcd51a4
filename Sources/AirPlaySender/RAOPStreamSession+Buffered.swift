import AirPlayTiming
import AirPlayWire
import Foundation

/// `airplay stream --mode buffered`: the same session, its audio buffered on AirPlay 2
/// receivers and anchored on our PTP grandmaster (`BufferedStreamer`).
extension RAOPStreamSession {
    func runBuffered(grandmaster: PTPGrandmaster, events: AsyncStream<Event>, continuation: AsyncStream<Event>.Continuation,
                     warn: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) -> Summary {
        let start = Self.rtpStart()
        let volume = initialVolume
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
        let timeline = Self.timeline(heardAt: anchor.networkTime ?? 0, on: grandmaster)
        var failure = await Self.send(anchor, to: links)
        report(.started)
        let source = self.source
        var played = Played()
        if failure == nil {
            Thread {
                streamer.play(read: { source.read(frames: streamer.framesPerPacket) })
                continuation.yield(.ended)
            }.start()
            let playback = BufferedPlayback(session: self, streamer: streamer, grandmaster: grandmaster, warn: warn)
            do {
                played = try await drive(playback, control: StreamControl(mode: .buffered, volume: volume), events: events, report: report)
            } catch {
                failure = error
            }
        }
        for link in streamer.links { await link.tearDown() }
        grandmaster.stop()
        if let failure { throw failure }
        var result = summary(seconds: Double(streamer.framesSent) / rate, quit: played.quit, joined: played.joined)
        result.timeline = timeline
        return result
    }

    /// The buffered stream's encoder in the session's codec, for the source's format.
    func bufferedEncoder() throws(SenderError) -> any BufferedEncoder {
        guard bufferedCodec == .aac else { return ALACBufferedEncoder(format: source.format) }
        guard let aacEncoder else { throw SenderError(.badInput, "AAC is sent through an encoder this program was not given") }
        do {
            return PacketBufferedEncoder(try aacEncoder(source.format))
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
        for link in links { await link.sendMetadata(item, artwork: artwork, progress: progress, rtpTime: rtpTime, sampleRate: rate) }
        return artwork
    }

    /// A receiver joins buffered: set up, given the anchor in force, then the audio not yet heard.
    func joinBuffered(_ link: ReceiverLink, streamer: BufferedStreamer, grandmaster: PTPGrandmaster, decibels: Double,
                      warn: @escaping @Sendable (String) -> Void, report: @Sendable (Report) -> Void) async throws(SenderError) {
        try await link.setUpBuffered(grandmaster: grandmaster, format: source.format, codec: bufferedCodec, volumeDecibels: decibels,
                                     warn: warn)
        try await link.sendAnchor(streamer.currentAnchor())
        let caughtUp = streamer.join(link)
        report(.state("joined \(link.name) (\(caughtUp) packets to catch up)"))
    }

    /// A receiver that keeps its own clock, joining a stream already playing, is served the
    /// group's: the timeline of a stream that plays cannot become another clock.
    static func keepTheTimeline(for link: ReceiverLink, report: @Sendable (Report) -> Void) {
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
    static func send(_ anchor: RateAnchor, to links: [ReceiverLink]) async -> SenderError? {
        do throws(SenderError) {
            for link in links { try await link.sendAnchor(anchor) }
            return nil
        } catch {
            return error
        }
    }
}

/// Buffered audio (AirPlay 2 type 103) from one `BufferedStreamer`, anchored on the PTP
/// timeline: a pause and a resume are new anchors (rate 0, then 1 at the frame not yet heard),
/// and a receiver that stops answering leaves the group while the others play on.
final class BufferedPlayback: StreamPlayback {
    private let session: RAOPStreamSession
    private let streamer: BufferedStreamer
    private let grandmaster: PTPGrandmaster
    private let warn: @Sendable (String) -> Void

    /// The playback of `streamer`'s links for `session`, on `grandmaster`'s timeline.
    init(session: RAOPStreamSession, streamer: BufferedStreamer, grandmaster: PTPGrandmaster, warn: @escaping @Sendable (String) -> Void) {
        self.session = session
        self.streamer = streamer
        self.grandmaster = grandmaster
        self.warn = warn
    }

    var elapsed: Double { streamer.secondsPlayed }

    /// The receivers hold seconds of audio: it sounds before they are told to stop.
    var playOutSeconds: Double { streamer.secondsToEnd + 0.3 }

    func tend(report: @Sendable (RAOPStreamSession.Report) -> Void) async {
        await RAOPStreamSession.letGoOfDropped(streamer, report: report)
    }

    func keepAlive(decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        for link in streamer.links {
            do {
                try await link.keepAlive(volumeDecibels: decibels)
            } catch {
                let remaining = streamer.leave(link)
                report(.state("left \(link.name): \(error.message)"))
                await link.tearDown()
                if remaining == 0 { throw error }
            }
        }
    }

    func setVolume(decibels: Double) async throws(SenderError) { try await streamer.links.setVolume(decibels: decibels) }

    func pause() async throws(SenderError) {
        guard let anchor = streamer.pause() else { return }
        for link in streamer.links {
            try await link.sendAnchor(anchor)
            await link.sendMediaRemoteState(.paused)
        }
    }

    func resume() async throws(SenderError) {
        guard let anchor = streamer.resume() else { return }
        for link in streamer.links {
            try await link.sendAnchor(anchor)
            await link.sendMediaRemoteState(.playing)
        }
    }

    func join(_ link: ReceiverLink, decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        RAOPStreamSession.keepTheTimeline(for: link, report: report)
        try await session.joinBuffered(link, streamer: streamer, grandmaster: grandmaster, decibels: decibels, warn: warn, report: report)
    }

    func stop() { streamer.stop() }
}
