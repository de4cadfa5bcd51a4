import AirPlayMedia
import AirPlayTiming
import Foundation

/// `airplay stream --mode auto` to a group of AirPlay 2 speakers and older ones, as Apple's
/// senders play it: buffered audio (type 103, anchored on our PTP grandmaster) to the receivers
/// that take it, realtime audio (type 96, NTP syncs or 0xD7 anchors) to the others, one source
/// read by both (`PCMTee`), on one timeline. The realtime streamer's first frame is due at a set
/// moment, heard one latency later; the buffered anchor says that same frame sounds at that
/// same moment on our PTP clock (this host's realtime clock, read beside the monotonic one the
/// realtime streamer paces by). A pause stops both; a resume
/// anchors the buffered receivers on the frame the realtime ones hear first again, when they
/// hear it.
extension RAOPStreamSession {
    /// How long after its set-up the group's first frame is due: time to send the anchor.
    static let mixedStartDelay = 0.5

    func runMixed(grandmaster: PTPGrandmaster, events: AsyncStream<Event>, continuation: AsyncStream<Event>.Continuation,
                  warn: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) -> Summary {
        let realtimeLinks = links.filter { !$0.buffered }, bufferedLinks = links.filter(\.buffered)
        let start = Self.rtpStart()
        let volume = initialVolume
        let encoder = try bufferedEncoder()
        do {
            for link in Self.followedClocksFirst(realtimeLinks + bufferedLinks) {
                if link.buffered {
                    try await link.setUpBuffered(grandmaster: grandmaster, format: source.format, codec: bufferedCodec,
                                                 volumeDecibels: Self.decibels(volume), warn: warn)
                } else {
                    try await link.setUp(sequence: start.sequence, rtpTime: start.timestamp, volumeDecibels: Self.decibels(volume), warn: warn)
                }
            }
        } catch {
            for link in links { await link.tearDown() }
            throw error
        }
        let realtime = RAOPStreamer(links: realtimeLinks, firstSequence: start.sequence, firstTimestamp: start.timestamp)
        let buffered = BufferedStreamer(links: bufferedLinks, clock: grandmaster, firstTimestamp: start.timestamp, format: source.format,
                                        encoder: encoder)
        let rate = Double(source.format.sampleRate)
        let artwork = await sendStartMetadata(rtpTime: start.timestamp)
        // The first frame is due at `due` and heard one latency later, everywhere.
        let due = RAOPClock.monotonic.now() + Self.mixedStartDelay
        // The group's clock relation, taken once: the first frame is heard at this moment of
        // the PTP clock and of our NTP clock alike (each timeline's anchor says so).
        let anchor = buffered.startAnchor(soundsAt: realtime.ptpTime(atUptime: due + RAOPStreamer.latencySeconds, on: grandmaster))
        let timeline = Self.timeline(heardAt: anchor.networkTime ?? 0, ntp: RAOPClock.ntp(atUptime: due + RAOPStreamer.latencySeconds),
                                     on: grandmaster)
        var failure = await Self.send(anchor, to: bufferedLinks)
        report(.started)
        let tee = PCMTee(source)
        let (realtimeSource, bufferedSource) = (tee.branch(0), tee.branch(1))
        let realtimePlayer = Thread {
            realtime.play(startingAt: due, read: { realtimeSource.read(frames: RAOPStreamer.framesPerPacket) })
            continuation.yield(.ended)
        }
        let bufferedPlayer = Thread {
            buffered.play(read: { bufferedSource.read(frames: buffered.framesPerPacket) })
            continuation.yield(.ended)
        }
        var played = Played()
        if failure == nil {
            realtimePlayer.start()
            bufferedPlayer.start()
            let playback = MixedPlayback(session: self, realtime: realtime, buffered: buffered, grandmaster: grandmaster, artwork: artwork,
                                         warn: warn)
            do {
                played = try await drive(playback, control: StreamControl(mode: .mixed, volume: volume), events: events, report: report)
            } catch {
                failure = error
            }
        }
        for link in links + played.joined { await link.tearDown() }
        grandmaster.stop()
        if let failure { throw failure }
        var result = summary(seconds: Double(realtime.framesSent) / rate, quit: played.quit, joined: played.joined)
        result.timeline = timeline
        return result
    }
}

/// A mixed group: realtime audio from a `RAOPStreamer` to the receivers that take no buffered
/// audio, buffered audio from a `BufferedStreamer` to the others, on one timeline. A pause
/// stops both; a resume anchors the buffered receivers on the frame the realtime ones hear
/// first again, when they hear it.
final class MixedPlayback: StreamPlayback {
    private let session: RAOPStreamSession
    private let realtime: RAOPStreamer
    private let buffered: BufferedStreamer
    private let grandmaster: PTPGrandmaster
    private let artwork: (type: String, bytes: [UInt8])?
    private let warn: @Sendable (String) -> Void

    /// The playback of both streamers' links for `session`, on `grandmaster`'s timeline.
    init(session: RAOPStreamSession, realtime: RAOPStreamer, buffered: BufferedStreamer, grandmaster: PTPGrandmaster,
         artwork: (type: String, bytes: [UInt8])?, warn: @escaping @Sendable (String) -> Void) {
        self.session = session
        self.realtime = realtime
        self.buffered = buffered
        self.grandmaster = grandmaster
        self.artwork = artwork
        self.warn = warn
    }

    var elapsed: Double { Double(realtime.framesSent) / Double(session.source.format.sampleRate) - RAOPStreamer.latencySeconds }

    /// Both players have ended (the buffered one first: it reads ahead); the realtime receivers
    /// play out their latency.
    var playOutSeconds: Double { RAOPStreamer.latencySeconds + 0.5 }

    private var links: [ReceiverLink] { realtime.links + buffered.links }

    func tend(report: @Sendable (RAOPStreamSession.Report) -> Void) async {
        await RAOPStreamSession.letGoOfDropped(buffered, report: report)
    }

    func keepAlive(decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        try await links.keepAlive(decibels: decibels)
    }

    func setVolume(decibels: Double) async throws(SenderError) { try await links.setVolume(decibels: decibels) }

    func pause() async throws(SenderError) {
        guard let point = realtime.pause() else { return }
        for link in realtime.links { try await link.flush(sequence: point.sequence, rtpTime: point.timestamp) }
        if let anchor = buffered.pause() {
            for link in buffered.links { try await link.sendAnchor(anchor) }
        }
    }

    /// The realtime receivers hear again from the frame they had not heard, one latency after
    /// the new schedule starts: the buffered ones too.
    func resume() async throws(SenderError) {
        let point = realtime.nextPoint
        for link in realtime.links { try await link.record(sequence: point.sequence, rtpTime: point.timestamp) }
        for link in realtime.links { await link.sendMetadata(session.item, artwork: artwork, progress: nil, rtpTime: point.timestamp) }
        guard let resumed = realtime.resume() else { return }
        let heard = realtime.ptpTime(atUptime: resumed + RAOPStreamer.latencySeconds, on: grandmaster)
        if let anchor = buffered.resume(frame: realtime.framesSent, soundsAt: heard) {
            for link in buffered.links { try await link.sendAnchor(anchor) }
        }
    }

    /// A receiver that takes buffered audio joins the buffered ones on the current anchor; any
    /// other joins the realtime ones at their next packet, with a first sync (or 0xD7 anchor)
    /// of its own: one timeline either way.
    func join(_ link: ReceiverLink, decibels: Double, report: @Sendable (RAOPStreamSession.Report) -> Void) async throws(SenderError) {
        RAOPStreamSession.keepTheTimeline(for: link, report: report)
        if link.buffered {
            try await session.joinBuffered(link, streamer: buffered, grandmaster: grandmaster, decibels: decibels, warn: warn, report: report)
            return
        }
        let point = realtime.nextPoint
        try await link.setUp(sequence: point.sequence, rtpTime: point.timestamp, volumeDecibels: decibels, warn: warn)
        await link.sendMetadata(session.item, artwork: artwork, progress: nil, rtpTime: point.timestamp)
        realtime.join(link)
        report(.state("joined \(link.name)"))
    }

    func stop() {
        realtime.stop()
        buffered.stop()
    }
}
