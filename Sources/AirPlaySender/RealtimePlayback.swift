import AirPlayMedia
import AirPlayWire

/// Realtime audio (RAOP, or AirPlay 2 type 96) from one `RAOPStreamer` to every receiver of the
/// session: a pause is a FLUSH, a resume a RECORD at the next packet, and a playlist moves
/// through its files with both, telling the receivers each new item before its audio (Sonos
/// emits nothing until it has it).
final class RealtimePlayback: StreamPlayback {
    private let session: RAOPStreamSession
    private let streamer: RAOPStreamer
    private let playlist: PlaylistSource?
    /// The stream's first RTP time.
    private let streamStart: UInt32
    private var artwork: (type: String, bytes: [UInt8])?
    /// The playlist's item the receivers were last told of.
    private var shownItem = 0

    /// The playback of `session`'s links by `streamer`, whose first RTP time is `streamStart`.
    init(session: RAOPStreamSession, streamer: RAOPStreamer, streamStart: UInt32) {
        self.session = session
        self.streamer = streamer
        self.streamStart = streamStart
        playlist = session.source as? PlaylistSource
        artwork = RAOPStreamSession.artwork(session.source.tags)
    }

    var elapsed: Double { Double(streamer.framesSent) / RAOPStreamer.sampleRate - RAOPStreamer.latencySeconds }

    var playOutSeconds: Double { RAOPStreamer.latencySeconds + 0.5 }

    private var links: [ReceiverLink] { session.links }

    /// The item that plays, its artwork and its progress to every link, as of RTP time `rtpTime`.
    func sendItem(at rtpTime: UInt32) async {
        for link in links {
            await link.sendMetadata(session.currentItem(), artwork: artwork, progress: progress(at: rtpTime), rtpTime: rtpTime)
        }
    }

    /// Start, current and end of the item in RTP time, when its length is known. The file's
    /// first frame is `startOffset` seconds before the stream's; a later file starts where the
    /// playlist says.
    private func progress(at current: UInt32) -> (UInt32, UInt32, UInt32)? {
        let frames = playlist?.position.startFrame ?? 0
        let itemStart = frames == 0 ? streamStart &- UInt32(truncatingIfNeeded: Int64(session.startOffset * RAOPStreamer.sampleRate))
                                    : streamStart &+ UInt32(truncatingIfNeeded: frames)
        return (playlist?.tags ?? session.source.tags).duration.map {
            (itemStart, current, itemStart &+ UInt32(truncatingIfNeeded: Int64(min($0, 1e9) * RAOPStreamer.sampleRate)))
        }
    }

    /// The playlist moved on by itself: the receivers learn the new item.
    func tend(report: @Sendable (RAOPStreamSession.Report) -> Void) async {
        guard let playlist, playlist.position.index != shownItem else { return }
        showCurrentItem(of: playlist)
        await sendItem(at: streamer.playingTimestamp)
        report(.state(itemLine(of: playlist)))
    }

    func keepAlive(decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        try await links.keepAlive(decibels: decibels)
    }

    func setVolume(decibels: Double) async throws(SenderError) { try await links.setVolume(decibels: decibels) }

    func pause() async throws(SenderError) {
        guard let point = streamer.pause() else { return }
        for link in links {
            try await link.flush(sequence: point.sequence, rtpTime: point.timestamp)
            await link.sendMediaRemoteState(.paused)
        }
    }

    func resume() async throws(SenderError) {
        let point = streamer.nextPoint
        for link in links { try await link.record(sequence: point.sequence, rtpTime: point.timestamp) }
        await sendItem(at: point.timestamp)
        streamer.resume()
    }

    /// Stops, drops what the receivers hold of this item, and goes on with the other one (still
    /// paused when it was).
    func skip(by offset: Int, paused: Bool, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) -> Bool {
        guard let playlist else { return true }
        if !paused, let point = streamer.pause() {
            for link in links { try await link.flush(sequence: point.sequence, rtpTime: point.timestamp) }
        }
        guard playlist.skip(by: offset) else { return false }
        showCurrentItem(of: playlist)
        let resumeAt = streamer.nextPoint
        if !paused { for link in links { try await link.record(sequence: resumeAt.sequence, rtpTime: resumeAt.timestamp) } }
        await sendItem(at: resumeAt.timestamp)
        if !paused { streamer.resume(replayUnheard: false) }
        report(.state(itemLine(of: playlist)))
        return true
    }

    func stop() { streamer.stop() }

    private func showCurrentItem(of playlist: PlaylistSource) {
        shownItem = playlist.position.index
        artwork = RAOPStreamSession.artwork(playlist.tags)
    }

    private func itemLine(of playlist: PlaylistSource) -> String {
        "item \(shownItem + 1) of \(playlist.position.count): \(session.currentItem().title ?? "?")"
    }
}
