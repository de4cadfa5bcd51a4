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
        var volume = initialVolume
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
        let timeline = Self.timeline(heardAt: anchor.networkTime, ntp: RAOPClock.ntp(atUptime: due + RAOPStreamer.latencySeconds),
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
        if failure == nil {
            realtimePlayer.start()
            bufferedPlayer.start()
        }
        var ticks = 0, ended = 0, quitEarly = false
        var joined: [RAOPLink] = []
        loop: for await event in events {
            if failure != nil { break }
            do throws(SenderError) {
                switch event {
                case .tick:
                    ticks += 1
                    await Self.letGoOfDropped(buffered, report: report)
                    report(.progress(elapsed: Double(realtime.framesSent) / rate - RAOPStreamer.latencySeconds,
                                     paused: realtime.isPaused, volume: volume))
                    if ticks % 2 == 0 {
                        for link in realtime.links + buffered.links { try await link.keepAlive(volumeDecibels: Self.decibels(volume)) }
                    }
                case .setPaused(let paused) where paused == realtime.isPaused:
                    continue loop
                case .togglePause, .setPaused:
                    if realtime.isPaused {
                        let point = realtime.nextPoint
                        for link in realtime.links { try await link.record(sequence: point.sequence, rtpTime: point.timestamp) }
                        for link in realtime.links { await link.sendMetadata(item, artwork: artwork, progress: nil, rtpTime: point.timestamp) }
                        // The realtime receivers hear again from the frame they had not heard,
                        // one latency after the new schedule starts: the buffered ones too.
                        guard let resumed = realtime.resume() else { continue loop }
                        let heard = realtime.ptpTime(atUptime: resumed + RAOPStreamer.latencySeconds, on: grandmaster)
                        if let anchor = buffered.resume(frame: realtime.framesSent, soundsAt: heard) {
                            for link in buffered.links { try await link.sendAnchor(anchor) }
                        }
                        report(.state("playing"))
                    } else if let point = realtime.pause() {
                        for link in realtime.links { try await link.flush(sequence: point.sequence, rtpTime: point.timestamp) }
                        if let anchor = buffered.pause() {
                            for link in buffered.links { try await link.sendAnchor(anchor) }
                        }
                        report(.state("paused"))
                    }
                case .setVolume(let target):
                    volume = min(100, max(0, target))
                    for link in realtime.links + buffered.links { try await link.setVolume(decibels: Self.decibels(volume)) }
                    report(.state("volume \(Int(volume))"))
                case .volume(let change):
                    volume = min(100, max(0, volume + change))
                    for link in realtime.links + buffered.links { try await link.setVolume(decibels: Self.decibels(volume)) }
                    report(.state("volume \(Int(volume))"))
                case .skip:
                    report(.state("next and previous move through files in realtime mode only"))
                case .join(let link, let done):
                    // A receiver that takes buffered audio joins the buffered ones on the current
                    // anchor; any other joins the realtime ones at their next packet, with a
                    // first sync (or 0xD7 anchor) of its own: one timeline either way.
                    Self.keepTheTimeline(for: link, report: report)
                    do {
                        if link.buffered {
                            try await joinBuffered(link, streamer: buffered, grandmaster: grandmaster, volume: volume, warn: warn, report: report)
                        } else {
                            let point = realtime.nextPoint
                            try await link.setUp(sequence: point.sequence, rtpTime: point.timestamp, volumeDecibels: Self.decibels(volume),
                                                 warn: warn)
                            await link.sendMetadata(item, artwork: artwork, progress: nil, rtpTime: point.timestamp)
                            realtime.join(link)
                            report(.state("joined \(link.name)"))
                        }
                        joined.append(link)
                        done(nil)
                    } catch {
                        await link.tearDown()
                        done(error)
                    }
                case .quit:
                    quitEarly = true
                    realtime.stop()
                    buffered.stop()
                    break loop
                case .ended:
                    // Both players end (the buffered one first: it reads ahead); then the
                    // realtime receivers play out their latency.
                    ended += 1
                    guard ended == 2 else { continue loop }
                    try? await Task.sleep(for: .seconds(RAOPStreamer.latencySeconds + 0.5))
                    break loop
                }
            } catch {
                failure = error
                realtime.stop()
                buffered.stop()
                break loop
            }
        }
        for link in links + joined { await link.tearDown() }
        grandmaster.stop()
        if let failure { throw failure }
        var result = summary(seconds: Double(realtime.framesSent) / rate, quit: quitEarly, joined: joined)
        result.timeline = timeline
        return result
    }
}
