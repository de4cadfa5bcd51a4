import AirPlayWire

/// The box's now-playing state, kept in two parts as the seeds' now-playing model does: the item
/// (changes with the track) and the playback (changes with the rate or a jump in position).
/// A value: `applying(_:now:)` is pure, so every surface sees the same state for an event.
public struct NowPlayingState: Hashable, Sendable {
    /// Track metadata.
    public struct Item: Hashable, Sendable {
        /// Title (`minm`).
        public var title: String?
        /// Artist (`asar`).
        public var artist: String?
        /// Album (`asal`).
        public var album: String?
        /// Genre (`asgn`).
        public var genre: String?
        /// Artwork MIME type and bytes.
        public var artwork: Artwork?
        /// Counts the items of the box's life: MPRIS `mpris:trackid` and the page follow it.
        public var number = 0

        /// An empty item.
        public init() {}
    }

    /// A cover image.
    public struct Artwork: Hashable, Sendable {
        /// `image/jpeg` or `image/png`.
        public var type: String
        /// The image.
        public var bytes: [UInt8]
        /// Counts the covers of the box's life, so a file name or URL changes with the image.
        public var number: Int

        /// The file extension for `type`.
        public var fileExtension: String { type == "image/png" ? "png" : "jpg" }
    }

    /// Where playback stands.
    public struct Playback: Hashable, Sendable {
        /// Seconds, when known.
        public var duration: Double?
        /// Seconds at `updatedAt`.
        public var position: Double = 0
        /// 1 playing, 0 paused or idle, other values for video trick play.
        public var rate: Double = 0
        /// Monotonic time of the last position update.
        public var updatedAt: Double = 0

        /// The position at `now`: it advances only while playing, and never past the end.
        public func position(at now: Double) -> Double {
            let moved = position + (rate != 0 ? (now - updatedAt) * rate : 0)
            return max(0, min(moved, duration ?? .infinity))
        }
    }

    /// The session's sender; nil when nothing plays.
    public var sender: NowPlayingSender?
    /// The current item.
    public var item = Item()
    /// Where playback stands.
    public var playback = Playback()
    /// The sender's volume in AirPlay dB (-30...0, -144 muted).
    public var volumeDecibels: Double?
    /// The PCM format the audio plays in (`S16LE 44100 Hz 2 ch`).
    public var format: String?
    /// The pairing PIN on show.
    public var pairingPIN: String?
    /// The remote commands the sender said it takes (MediaRemote numbers), if it said.
    public var senderCommands: Set<Int>?
    private var itemsSeen = 0
    private var artworksSeen = 0

    /// Nothing plays.
    public init() {}

    /// Whether the sender takes this MediaRemote command from the box: yes unless it listed
    /// what it takes and this is not among them (play/pause, 2, counts for play, 0, and pause, 1).
    public func senderTakes(_ number: Int) -> Bool {
        guard let listed = senderCommands else { return true }
        return listed.contains(number) || (number <= 1 && listed.contains(2))
    }

    /// `playing`, `paused` or `idle`.
    public var status: String { sender == nil ? "idle" : (playback.rate != 0 ? "playing" : "paused") }

    /// The state after `event` at monotonic time `now`.
    public func applying(_ event: NowPlayingEvent, now: Double) -> NowPlayingState {
        var next = self
        next.apply(event, now: now)
        return next
    }

    private mutating func apply(_ event: NowPlayingEvent, now: Double) {
        switch event {
        case .began(let sender, let format):
            self.sender = sender
            self.format = format
            newItem(Item())
            playback = Playback(updatedAt: now)
            volumeDecibels = nil
            senderCommands = nil  // the session's own list, if it sent one, follows its `began`
        case .streamStarted, .resumed:
            setRate(1, now: now)
        case .flushed:
            setRate(0, now: now)
        case .rate(let rate):
            setRate(rate, now: now)
        case .progress(let start, let current, let end, let sampleRate):
            guard sampleRate > 0 else { return }
            playback.duration = Double(end &- start) / sampleRate
            playback.position = Double(current &- start) / sampleRate
            playback.updatedAt = now
        case .position(let seconds, let duration):
            playback.position = seconds
            playback.duration = duration
            playback.updatedAt = now
        case .volume(let decibels):
            volumeDecibels = decibels
        case .metadata(let fields, _):
            applyMetadata(fields)
        case .artwork(let type, let bytes, _):
            if let type, !bytes.isEmpty {
                artworksSeen += 1
                item.artwork = Artwork(type: type, bytes: bytes, number: artworksSeen)
            } else {
                item.artwork = nil
            }
        case .ended:
            sender = nil
            format = nil
            newItem(Item())
            playback = Playback()
            volumeDecibels = nil
            senderCommands = nil
        case .pairingPIN(let pin):
            pairingPIN = pin
        case .senderCommands(let commands):
            senderCommands = commands
        case .commandPlist:
            break
        }
    }

    private mutating func setRate(_ rate: Double, now: Double) {
        playback.position = playback.position(at: now)
        playback.rate = rate
        playback.updatedAt = now
    }

    /// Text fields replace the item's; a different title, artist or album is a new item (new
    /// track id, the old cover dropped), the same one keeps its cover (senders send the text
    /// again with each progress update).
    private mutating func applyMetadata(_ fields: [DMAPField]) {
        let parsed = DMAP.item(fields: fields.map { (tag: $0.tag, value: $0.value[...]) })
        var next = Item()
        next.title = parsed.title
        next.artist = parsed.artist
        next.album = parsed.album
        next.genre = parsed.genre
        if let milliseconds = parsed.durationMilliseconds { playback.duration = Double(milliseconds) / 1000 }
        if next.title == item.title && next.artist == item.artist && next.album == item.album {
            next.artwork = item.artwork
            next.number = item.number
            item = next
        } else {
            // A cover sent before the first text of the session belongs to that text.
            if item.title == nil && item.artist == nil && item.album == nil { next.artwork = item.artwork }
            newItem(next)
        }
    }

    private mutating func newItem(_ next: Item) {
        itemsSeen += 1
        item = next
        item.number = itemsSeen
    }
}
