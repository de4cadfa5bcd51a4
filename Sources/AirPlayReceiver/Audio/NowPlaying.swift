import AirPlayMedia
import AirPlayWire
import FoundationEssentials
import NIOConcurrencyHelpers

/// The box's now-playing state for the current audio session, kept in two parts as the seeds'
/// now-playing model does: item metadata (changes with the track) and playback state (changes
/// with the rate or a jump in position). Readable as JSON at `GET /now-playing`.
public final class NowPlaying: Sendable {
    /// Track metadata.
    public struct Item: Hashable, Sendable {
        /// Title.
        public var title: String?
        /// Artist.
        public var artist: String?
        /// Album.
        public var album: String?
        /// Genre.
        public var genre: String?
        /// Artwork bytes and MIME type.
        public var artwork: (type: String, bytes: [UInt8])?

        /// An empty item.
        public init() {}

        /// Compares every field (artwork by type and bytes).
        public static func == (lhs: Item, rhs: Item) -> Bool {
            lhs.title == rhs.title && lhs.artist == rhs.artist && lhs.album == rhs.album && lhs.genre == rhs.genre
                && lhs.artwork?.type == rhs.artwork?.type && lhs.artwork?.bytes == rhs.artwork?.bytes
        }

        /// Hashes the text fields.
        public func hash(into hasher: inout Hasher) { hasher.combine([title, artist, album, genre]) }
    }

    /// Playback state from `progress:` (RTP times) and the stream's state.
    public struct Playback: Hashable, Sendable {
        /// Seconds.
        public var duration: Double?
        /// Seconds at `updatedAt`.
        public var position: Double = 0
        /// 1 playing, 0 paused or idle.
        public var rate: Double = 0
        /// Monotonic time of the last update.
        public var updatedAt: Double = 0
        /// Volume in dB (-30...0, -144 muted).
        public var volumeDecibels: Double?
    }

    private let state = NIOLockedValueBox<(sender: String?, item: Item, playback: Playback)>((nil, Item(), Playback()))
    /// The current session's PCM format, as `raw:` writes it (`S24LE 48000 Hz 2 ch`).
    private let format = NIOLockedValueBox<String?>(nil)

    /// An empty now-playing state.
    public init() {}

    /// A sender started a session whose audio is in `format`: clear what the previous one left.
    public func begin(sender: String, format: String? = nil) {
        state.withLockedValue { $0 = (sender, Item(), Playback(updatedAt: Self.now())) }
        self.format.withLockedValue { $0 = format }
    }

    /// The session ended: nothing plays.
    public func end() {
        state.withLockedValue { $0 = (nil, Item(), Playback()) }
        format.withLockedValue { $0 = nil }
    }

    /// Replaces the text metadata, keeping artwork only when the item did not change.
    public func setText(title: String?, artist: String?, album: String?, genre: String?) {
        state.withLockedValue { value in
            let same = value.item.title == title && value.item.artist == artist && value.item.album == album
            let artwork = same ? value.item.artwork : nil
            value.item = Item()
            value.item.title = title
            value.item.artist = artist
            value.item.album = album
            value.item.genre = genre
            value.item.artwork = artwork
        }
    }

    /// Sets or clears the artwork.
    public func setArtwork(type: String?, bytes: [UInt8]) {
        state.withLockedValue { $0.item.artwork = type.map { (type: $0, bytes: bytes) } }
    }

    /// `progress: start/current/end` in RTP frames.
    public func setProgress(start: UInt32, current: UInt32, end: UInt32, sampleRate: Double) {
        state.withLockedValue { value in
            value.playback.duration = Double(end &- start) / sampleRate
            value.playback.position = Double(current &- start) / sampleRate
            value.playback.updatedAt = Self.now()
        }
    }

    /// Playing (1) or paused (0): the position advances only while playing.
    public func setRate(_ rate: Double) {
        state.withLockedValue { value in
            value.playback.position = Self.position(value.playback)
            value.playback.rate = rate
            value.playback.updatedAt = Self.now()
        }
    }

    /// The volume in dB.
    public func setVolume(decibels: Double) { state.withLockedValue { $0.playback.volumeDecibels = decibels } }

    /// The current item.
    public var item: Item { state.withLockedValue { $0.item } }

    /// The JSON document of `GET /now-playing`; `stream` adds the playout's figures (for
    /// benchmarks), `extra` other members (the pairing PIN on show).
    public func json(stream: AudioSessions.StreamFigures? = nil, extra: [String: JSONValue] = [:]) -> [UInt8] {
        let (sender, item, playback) = state.withLockedValue { $0 }
        var object: [String: JSONValue] = ["state": .string(sender == nil ? "idle" : (playback.rate > 0 ? "playing" : "paused"))]
        object["sender"] = .string(sender)
        object["format"] = .string(format.withLockedValue { $0 })
        object["title"] = .string(item.title)
        object["artist"] = .string(item.artist)
        object["album"] = .string(item.album)
        object["genre"] = .string(item.genre)
        object["duration"] = .number(playback.duration)
        object["position"] = .number(sender == nil ? 0 : min(Self.position(playback), playback.duration ?? .infinity))
        object["rate"] = .number(playback.rate)
        object["volume"] = .number(playback.volumeDecibels)
        if let artwork = item.artwork {
            let base64 = Data(artwork.bytes).base64EncodedString()
            object["artwork"] = .object(["type": .string(artwork.type), "bytes": .integer(artwork.bytes.count), "base64": .string(base64)])
        } else {
            object["artwork"] = .null
        }
        object["stream"] = stream.map { Self.json($0) } ?? .null
        object.merge(extra) { _, new in new }
        return JSONValue.object(object).bytes
    }

    /// The stream figures: packets, frames, and how close to the sender's timeline they played.
    static func json(_ figures: AudioSessions.StreamFigures) -> JSONValue {
        let playout = figures.playout, sync = playout.syncError
        func ms(_ seconds: Double) -> JSONValue { .number((seconds * 100_000).rounded() / 100) }
        var object: [String: JSONValue] = ["session": .integer(figures.session), "codec": .string(figures.codec), "ended": .bool(figures.ended)]
        let counts: [(String, Int)] = [
            ("received", playout.received), ("dropped", playout.dropped), ("lost", playout.lost), ("skipped", playout.skipped),
            ("framesPlayed", playout.framesPlayed), ("framesInserted", playout.framesInserted), ("framesRemoved", playout.framesRemoved),
            ("reanchors", playout.reanchors), ("requested", figures.requested), ("requestedAgain", figures.requestedAgain),
            ("retransmitted", figures.retransmitted),
        ]
        for (key, count) in counts { object[key] = .integer(count) }
        object["worstLatenessMs"] = ms(playout.worstLatenessMilliseconds / 1000)
        let syncFigures: [String: JSONValue] = [
            "packets": .integer(sync.count), "meanMs": ms(sync.mean), "meanAbsMs": ms(sync.meanMagnitude), "p50Ms": ms(sync.percentile(0.5)),
            "p95Ms": ms(sync.percentile(0.95)), "p99Ms": ms(sync.percentile(0.99)), "maxMs": ms(sync.worst),
        ]
        object["sync"] = .object(syncFigures)
        let clock = figures.clock
        let clockFigures: [String: JSONValue] = [
            "source": .string(clock.senderClock ? "sender" : "arrival"), "exchanges": .integer(clock.exchanges),
            "roundTripMs": .number(clock.roundTripMilliseconds.map { ($0 * 100).rounded() / 100 }),
            "driftPPM": .number((clock.driftPPM * 100).rounded() / 100), "implausibleSyncs": .integer(clock.implausibleSyncs),
        ]
        object["clock"] = .object(clockFigures)
        return .object(object)
    }

    private static func position(_ playback: Playback) -> Double {
        playback.position + (playback.rate > 0 ? (now() - playback.updatedAt) * playback.rate : 0)
    }

    private static func now() -> Double { SystemClock().now() }
}
