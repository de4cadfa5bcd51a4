import AirPlayMedia
import AirPlayTiming
import AirPlayWire
import Foundation

/// One `airplay stream`: local audio from a `PCMSource` played on one or more RAOP receivers in
/// step. It sets the links up, sends the track's metadata, streams on a thread of its own and
/// reacts to what happens meanwhile (a tick, pause, volume, quit, the end); the command that
/// owns it only parses arguments and prints.
public final class RAOPStreamSession: Sendable {
    /// What happens while streaming, in the order the session handles it.
    public enum Event: Sendable {
        /// A second passed: progress, and a keep-alive every other tick.
        case tick
        /// Pause if playing, resume if paused.
        case togglePause
        /// Pause (true) or play (false); nothing when already so (DACP `pause`, `play`).
        case setPaused(Bool)
        /// Set the volume (0-100; DACP `setproperty?dmcp.device-volume`).
        case setVolume(Double)
        /// Move through the playlist: 1 the next file, -1 the previous (DACP `nextitem`, `previtem`).
        case skip(Int)
        /// Volume up or down by this many points (0-100 scale).
        case volume(Double)
        /// Stop now.
        case quit
        /// The source ran out (sent by the session itself).
        case ended
        /// Buffered mode: a receiver (connected, not set up) joins the running stream; `done`
        /// hears how it went (nil: it plays in step with the others).
        case join(ReceiverLink, done: @Sendable (SenderError?) -> Void)
    }

    /// What the session tells its owner.
    public enum Report: Sendable {
        /// The receivers are set up and have the metadata; audio starts now.
        case started
        /// Once a second: seconds played, whether paused, the volume (0-100).
        case progress(elapsed: Double, paused: Bool, volume: Double)
        /// A change: `playing`, `paused`, `volume N`.
        case state(String)
    }

    /// How a stream went, per receiver and in all.
    public struct Summary: Sendable {
        /// One receiver's figures.
        public struct Receiver: Sendable {
            /// Its name.
            public var name: String
            /// The codec sent.
            public var codec: String
            /// Whether the audio was encrypted.
            public var encrypted: Bool
            /// Whether the session was AirPlay 2's (ChaCha20-Poly1305 audio).
            public var airPlay2 = false
            /// Packets it asked for again and got.
            public var resent: Int
            /// The best timing round trip, in seconds.
            public var bestRoundTrip: Double?
            /// On PTP, whose clock timed it: "sender" (our grandmaster's) or "receiver" (its
            /// own, followed: a standalone HomePod); nil off PTP.
            public var ptpClock: String?
        }

        /// Seconds of audio sent.
        public var seconds: Double
        /// True when it was stopped before the end.
        public var quit: Bool
        /// Per receiver.
        public var receivers: [Receiver]
        /// A PTP session's one timeline: the moment its first frame was heard, on each clock
        /// the group is timed by, and whose PTP clock it was.
        public struct Timeline: Sendable {
            /// That moment on the PTP clock (nanoseconds).
            public var ptpNanoseconds: Int64
            /// The same moment on our NTP clock (32.32), when AirPlay 1 rooms were timed by it.
            public var ntp: UInt64?
            /// The PTP clock's identity (ours, or the followed receiver's).
            public var clockIdentity: UInt64
            /// "sender" (our grandmaster's time) or "receiver" (a receiver's own clock, followed).
            public var owner: String
        }

        /// The timeline of a PTP session (buffered, or a mixed group); nil otherwise.
        public var timeline: Timeline?
        /// With several receivers, how far apart their playback can be at most (half the two
        /// worst best round trips: each receiver's idea of our clock is off by at most half its
        /// round trip), in seconds; nil when a receiver never answered a timing request.
        public var skewBound: Double?
    }

    let links: [ReceiverLink]
    let source: any PCMSource
    let item: DMAP.Item
    let startOffset: Double
    let initialVolume: Double
    /// Buffered mode (AirPlay 2 receivers, type 103): the PTP grandmaster the anchors are on.
    private let grandmaster: PTPGrandmaster?
    /// Buffered mode's codec.
    let bufferedCodec: BufferedCodec
    /// Makes the AAC encoder when `bufferedCodec` is AAC (a media engine's, handed in).
    let aacEncoder: AudioEncoderFactory?

    /// A session over connected links; `item` is the metadata sent, `startOffset` how many
    /// seconds into the track the source starts, `volume` 0-100. With `grandmaster` the
    /// buffered links get buffered audio anchored on its clock, in `bufferedCodec`, and the
    /// others realtime audio in step with them (`runMixed`); without, all get realtime audio.
    /// AAC needs `aacEncoder` (ALAC is the sender's own).
    public init(links: [ReceiverLink], source: any PCMSource, item: DMAP.Item, startOffset: Double, volume: Double,
                grandmaster: PTPGrandmaster? = nil, bufferedCodec: BufferedCodec = .alac, aacEncoder: AudioEncoderFactory? = nil) {
        self.grandmaster = grandmaster
        self.bufferedCodec = bufferedCodec
        self.aacEncoder = aacEncoder
        self.links = links
        self.source = source
        self.item = item
        self.startOffset = startOffset
        initialVolume = volume
    }

    /// AirPlay volume: -30 dB (1 %) … 0 dB (100 %), -144 mutes.
    public static func decibels(_ volume: Double) -> Double { AirPlayVolume.decibels(linear: volume / 100) }

    /// The links in the order they are set up: a receiver whose own clock is followed first,
    /// since its clock becomes the timeline served to the others.
    static func followedClocksFirst(_ links: [ReceiverLink]) -> [ReceiverLink] {
        links.filter(\.followsReceiverClock) + links.filter { !$0.followsReceiverClock }
    }

    /// A random RTP starting point (RTP wants one); `AIRPLAY_RTP_START=SEQ:TIME` fixes it, so
    /// tests can start just before both counters wrap.
    public static func rtpStart() -> (sequence: UInt16, timestamp: UInt32) {
        if let text = ProcessInfo.processInfo.environment["AIRPLAY_RTP_START"] {
            let parts = text.split(separator: ":")
            if parts.count == 2, let sequence = UInt16(parts[0]), let timestamp = UInt32(parts[1]) { return (sequence, timestamp) }
        }
        return (UInt16.random(in: 0...UInt16.max), UInt32.random(in: 0...UInt32.max))
    }

    /// Sets every link up (tearing all down if one fails), sends the metadata, then streams
    /// until the source ends or `quit`, handling `events` (the session adds `.ended` through
    /// `continuation`). Tears the links down before it returns.
    public func run(events: AsyncStream<Event>, continuation: AsyncStream<Event>.Continuation,
                    warn: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (Report) -> Void) async throws(SenderError)
        -> Summary {
        if let grandmaster {
            if links.allSatisfy(\.buffered) {
                return try await runBuffered(grandmaster: grandmaster, events: events, continuation: continuation, warn: warn, report: report)
            }
            return try await runMixed(grandmaster: grandmaster, events: events, continuation: continuation, warn: warn, report: report)
        }
        let start = Self.rtpStart()
        let volume = initialVolume
        do {
            for link in Self.followedClocksFirst(links) {
                try await link.setUp(sequence: start.sequence, rtpTime: start.timestamp, volumeDecibels: Self.decibels(volume), warn: warn)
            }
        } catch {
            for link in links { await link.tearDown() }
            throw error
        }
        let streamer = RAOPStreamer(links: links, firstSequence: start.sequence, firstTimestamp: start.timestamp)
        let playback = RealtimePlayback(session: self, streamer: streamer, streamStart: start.timestamp)
        await playback.sendItem(at: start.timestamp)
        report(.started)
        let source = self.source
        let player = Thread {
            streamer.play(read: { source.read(frames: RAOPStreamer.framesPerPacket) })
            continuation.yield(.ended)
        }
        player.start()
        let control = StreamControl(mode: .realtime(playlist: source is PlaylistSource), volume: volume)
        let played: Played
        do {
            played = try await drive(playback, control: control, events: events, report: report)
        } catch {
            for link in links { await link.tearDown() }
            throw error
        }
        for link in links { await link.tearDown() }
        return summary(seconds: Double(streamer.framesSent) / RAOPStreamer.sampleRate, quit: played.quit)
    }

    /// The figures of a finished stream (with the receivers that joined it on the way).
    /// The timeline of a PTP session whose first frame is heard at `ptp` (and at `ntp` on our
    /// NTP clock, in a mixed group), on `grandmaster`'s clock or the receiver's it follows.
    static func timeline(heardAt ptp: Int64, ntp: UInt64? = nil, on grandmaster: PTPGrandmaster) -> Summary.Timeline {
        let followed = grandmaster.followedClock()
        return Summary.Timeline(ptpNanoseconds: ptp, ntp: ntp, clockIdentity: followed?.timeline ?? grandmaster.identity.clockIdentity,
                                owner: followed == nil ? "sender" : "receiver")
    }

    func summary(seconds: Double, quit: Bool, joined: [ReceiverLink] = []) -> Summary {
        let links = self.links + joined
        let receivers = links.map { link in
            var receiver = Summary.Receiver(name: link.name, codec: link.codec.rawValue, encrypted: link.encryptor != nil || link.airPlay2,
                                            resent: link.resent.withLockedValue { $0 }, bestRoundTrip: link.roundTrips.withLockedValue { $0.min() })
            receiver.airPlay2 = link.airPlay2
            if link.buffered || link.ptpClock != nil { receiver.ptpClock = link.receiverTimeline == nil ? "sender" : "receiver" }
            return receiver
        }
        let known = receivers.compactMap(\.bestRoundTrip)
        return Summary(seconds: seconds, quit: quit, receivers: receivers,
                       skewBound: links.count > 1 && known.count == links.count ? known.sorted().suffix(2).reduce(0, +) / 2 : nil)
    }
}
