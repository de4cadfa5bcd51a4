import FoundationEssentials

/// What is playing, as MediaRemote describes it: the `kMRMediaRemoteNowPlayingInfo…` keys a
/// sender posts to a receiver that advertises feature bit 50 (`Protocol/metadata.md` §5).
/// Every field is optional: a sender sends what it has, and an `update` carries only what
/// changed. Progress is never streamed: `elapsedTime` holds at `timestamp`, and the receiver
/// carries it forward at `playbackRate`.
public struct MediaRemoteNowPlayingInfo: Hashable, Sendable {
    /// `…Title`.
    public var title: String?
    /// `…Artist`.
    public var artist: String?
    /// `…Album`.
    public var album: String?
    /// `…Genre`.
    public var genre: String?
    /// `…Composer`.
    public var composer: String?
    /// `…Duration`, seconds.
    public var duration: Double?
    /// `…ElapsedTime`, seconds at `timestamp`.
    public var elapsedTime: Double?
    /// `…PlaybackRate`: 1 playing, 0 paused.
    public var playbackRate: Double?
    /// `…DefaultPlaybackRate`.
    public var defaultPlaybackRate: Double?
    /// `…Timestamp`, a plist date: the moment `elapsedTime` held.
    public var timestamp: Date?
    /// `…UniqueIdentifier`: the item's number in the sender's library.
    public var uniqueIdentifier: Int64?
    /// `…TrackNumber`.
    public var trackNumber: Int64?
    /// `…TotalTrackCount`.
    public var totalTrackCount: Int64?
    /// `…QueueIndex`.
    public var queueIndex: Int64?
    /// `…TotalQueueCount`.
    public var totalQueueCount: Int64?
    /// `…ArtworkData`: the cover's bytes, sent once per cover (later messages name it by
    /// `artworkIdentifier` alone).
    public var artworkData: [UInt8]?
    /// `…ArtworkMIMEType`, `image/jpeg` from an iPhone.
    public var artworkMIMEType: String?
    /// `…ArtworkIdentifier`: names the cover, so a message without its bytes can keep it.
    public var artworkIdentifier: String?
    /// `…ContentItemIdentifier`.
    public var contentItemIdentifier: String?
    /// `…MediaType`, e.g. `MRMediaRemoteMediaTypeMusic`.
    public var mediaType: String?
    /// `…IsAlwaysLive`: a radio stream, no duration to show.
    public var isAlwaysLive: Bool?
    /// `…IsInTransition`: the sender is between items.
    public var isInTransition: Bool?

    /// The prefix of every key.
    public static let keyPrefix = "kMRMediaRemoteNowPlayingInfo"
    /// The longest text kept: a longer one is cut (a title is a line, not a document).
    public static let maximumTextBytes = 4096
    /// The largest cover kept (an iPhone's 600 × 600 JPEG is 40–70 KB).
    public static let maximumArtworkBytes = 4 * 1024 * 1024

    /// Nothing known.
    public init() {}

    // Key paths are not Sendable: the tables are built when read.
    private static var texts: [(String, WritableKeyPath<Self, String?>)] {
        [
            ("Title", \.title), ("Artist", \.artist), ("Album", \.album), ("Genre", \.genre), ("Composer", \.composer),
            ("ArtworkMIMEType", \.artworkMIMEType), ("ArtworkIdentifier", \.artworkIdentifier),
            ("ContentItemIdentifier", \.contentItemIdentifier), ("MediaType", \.mediaType),
        ]
    }
    private static var reals: [(String, WritableKeyPath<Self, Double?>)] {
        [
            ("Duration", \.duration), ("ElapsedTime", \.elapsedTime), ("PlaybackRate", \.playbackRate),
            ("DefaultPlaybackRate", \.defaultPlaybackRate),
        ]
    }
    private static var integers: [(String, WritableKeyPath<Self, Int64?>)] {
        [
            ("UniqueIdentifier", \.uniqueIdentifier), ("TrackNumber", \.trackNumber), ("TotalTrackCount", \.totalTrackCount),
            ("QueueIndex", \.queueIndex), ("TotalQueueCount", \.totalQueueCount),
        ]
    }
    private static var flags: [(String, WritableKeyPath<Self, Bool?>)] {
        [
            ("IsAlwaysLive", \.isAlwaysLive), ("IsInTransition", \.isInTransition),
        ]
    }

    /// The fields of a `kMRMediaRemoteNowPlayingInfo…` dictionary; keys of the wrong type, not
    /// finite numbers and unknown keys are skipped (liberal: a sender we have not seen may add
    /// keys), texts are cut at `maximumTextBytes`, a cover over `maximumArtworkBytes` dropped.
    public init(fields plist: PropertyList) {
        self.init()
        guard case .dictionary(let fields) = plist else { return }
        func value(_ name: String) -> PropertyList? { fields[Self.keyPrefix + name] }
        for (name, path) in Self.texts {
            if let text = value(name)?.stringValue { self[keyPath: path] = Self.bounded(text) }
        }
        for (name, path) in Self.reals {
            if let number = value(name)?.doubleValue, number.isFinite { self[keyPath: path] = number }
        }
        for (name, path) in Self.integers {
            if let number = value(name)?.integerValue { self[keyPath: path] = number }
        }
        for (name, path) in Self.flags {
            switch value(name) {
            case .bool(let flag)?: self[keyPath: path] = flag
            case .integer(let number)?: self[keyPath: path] = number != 0
            default: break
            }
        }
        switch value("Timestamp") {
        case .date(let date)?: timestamp = date
        case .real(let seconds)? where seconds.isFinite: timestamp = Date(timeIntervalSinceReferenceDate: seconds)
        default: break
        }
        if case .data(let bytes)? = value("ArtworkData"), !bytes.isEmpty, bytes.count <= Self.maximumArtworkBytes { artworkData = bytes }
    }

    private static func bounded(_ text: String) -> String {
        text.utf8.count <= maximumTextBytes ? text : String(decoding: text.utf8.prefix(maximumTextBytes), as: UTF8.self)
    }

    /// The dictionary of the fields that are set, as a sender writes it.
    public var fields: PropertyList {
        var fields: [String: PropertyList] = [:]
        for (name, path) in Self.texts { if let text = self[keyPath: path] { fields[Self.keyPrefix + name] = .string(text) } }
        for (name, path) in Self.reals { if let number = self[keyPath: path] { fields[Self.keyPrefix + name] = .real(number) } }
        for (name, path) in Self.integers { if let number = self[keyPath: path] { fields[Self.keyPrefix + name] = .integer(number) } }
        for (name, path) in Self.flags { if let flag = self[keyPath: path] { fields[Self.keyPrefix + name] = .bool(flag) } }
        if let timestamp { fields[Self.keyPrefix + "Timestamp"] = .date(timestamp) }
        if let artworkData { fields[Self.keyPrefix + "ArtworkData"] = .data(artworkData) }
        return .dictionary(fields)
    }

    /// Whether nothing is set (the first message of an iPhone's session is such a `replace`).
    public var isEmpty: Bool { self == MediaRemoteNowPlayingInfo() }

    /// This info with `patch`'s set fields written over it (`mergePolicy` `update`).
    public func merging(_ patch: MediaRemoteNowPlayingInfo) -> MediaRemoteNowPlayingInfo {
        var merged = self
        for (_, path) in Self.texts { if let text = patch[keyPath: path] { merged[keyPath: path] = text } }
        for (_, path) in Self.reals { if let number = patch[keyPath: path] { merged[keyPath: path] = number } }
        for (_, path) in Self.integers { if let number = patch[keyPath: path] { merged[keyPath: path] = number } }
        for (_, path) in Self.flags { if let flag = patch[keyPath: path] { merged[keyPath: path] = flag } }
        if let timestamp = patch.timestamp { merged.timestamp = timestamp }
        if let bytes = patch.artworkData { merged.artworkData = bytes }
        return merged
    }

    /// How far ahead of the receiver's clock a timestamp may be and still be trusted: a phone
    /// and a box set by NTP agree within a second.
    public static let trustedClockSkew: Double = 60
    /// How old a timestamp may be and still be trusted (a long podcast, never re-sent): older,
    /// the clocks disagree (a box without a clock at boot is decades off), and the elapsed time
    /// is taken as of the message's arrival.
    public static let trustedAge: Double = 7 * 24 * 3600

    /// The elapsed time at `now` (the receiver's wall clock): `elapsedTime` carried forward from
    /// `timestamp` at `playbackRate`, kept within the item; nil when the sender gave none.
    public func elapsed(at now: Date?) -> Double? {
        guard let elapsedTime else { return nil }
        var elapsed = elapsedTime
        if let now, let timestamp, let rate = playbackRate, rate != 0 {
            let since = now.timeIntervalSince(timestamp)
            if since > -Self.trustedClockSkew, since < Self.trustedAge { elapsed += max(0, since) * rate }
        }
        return max(0, min(elapsed, duration ?? .infinity))
    }
}

/// `POST /command` with `type` `updateMRNowPlayingInfo`, both ways: a `replace` carries the
/// whole info, an `update` a patch (the default when `mergePolicy` is missing, as Apple's
/// receivers read it). `params.type` is `npi-text`; other kinds are not read.
public struct MediaRemoteNowPlayingUpdate: Hashable, Sendable {
    /// How the info meets what the receiver knew.
    public enum MergePolicy: String, Hashable, Sendable {
        /// The info is all there is: what it leaves out is unknown now.
        case replace
        /// The info is a patch: what it leaves out stays.
        case update
    }

    /// The `type` of the plist.
    public static let type = "updateMRNowPlayingInfo"
    /// `params.type` of the text (and artwork) kind.
    public static let textKind = "npi-text"

    /// Replace or patch.
    public var mergePolicy: MergePolicy
    /// The fields sent.
    public var info: MediaRemoteNowPlayingInfo

    /// An update from its parts.
    public init(mergePolicy: MergePolicy, info: MediaRemoteNowPlayingInfo) {
        self.mergePolicy = mergePolicy
        self.info = info
    }

    /// The update a `/command` plist carries; nil for another `type` or kind, or without a
    /// `params.params` dictionary.
    public init?(plist: PropertyList) {
        guard plist["type"]?.stringValue == Self.type, let params = plist["params"],
              params["type"]?.stringValue ?? Self.textKind == Self.textKind,
              case .dictionary? = params["params"] else { return nil }
        mergePolicy = params["mergePolicy"]?.stringValue.flatMap(MergePolicy.init(rawValue:)) ?? .update
        info = MediaRemoteNowPlayingInfo(fields: params["params"]!)
    }

    /// The request's plist.
    public var plist: PropertyList {
        .dictionary(["type": .string(Self.type), "params": .dictionary([
            "type": .string(Self.textKind), "mergePolicy": .string(mergePolicy.rawValue), "params": info.fields,
        ])])
    }

    /// What the receiver knows after this update, given what it knew. A `replace` that names
    /// the cover the receiver holds by its `artworkIdentifier` keeps it: senders send a cover's
    /// bytes once and name it after (Music Assistant's sender does, to spare the connection).
    public func applied(to known: MediaRemoteNowPlayingInfo?) -> MediaRemoteNowPlayingInfo {
        switch mergePolicy {
        case .update:
            return (known ?? MediaRemoteNowPlayingInfo()).merging(info)
        case .replace:
            var next = info
            if next.artworkData == nil, let identifier = next.artworkIdentifier, identifier == known?.artworkIdentifier {
                next.artworkData = known?.artworkData
                next.artworkMIMEType = next.artworkMIMEType ?? known?.artworkMIMEType
            }
            return next
        }
    }
}

/// `POST /command` with `type` `updateMRPlaybackState`, both ways: `params.mrPlaybackState`,
/// MediaRemote's numbering.
public enum MediaRemotePlaybackState: Int64, Hashable, Sendable {
    /// Playing (1).
    case playing = 1
    /// Paused (2).
    case paused = 2
    /// Stopped (3).
    case stopped = 3
    /// Interrupted (4), e.g. by a call.
    case interrupted = 4

    /// The `type` of the plist.
    public static let type = "updateMRPlaybackState"

    /// The state a `/command` plist carries; nil for another `type` or an unknown number.
    public init?(plist: PropertyList) {
        guard plist["type"]?.stringValue == Self.type, let number = plist["params"]?["mrPlaybackState"]?.integerValue else { return nil }
        self.init(rawValue: number)
    }

    /// The request's plist.
    public var plist: PropertyList {
        .dictionary(["type": .string(Self.type), "params": .dictionary(["mrPlaybackState": .integer(rawValue)])])
    }

    /// The rate it stands for: 1 playing, else 0.
    public var rate: Double { self == .playing ? 1 : 0 }
}
