/// A parsed HLS playlist: a master (multivariant) playlist or a media playlist.
public enum Playlist: Hashable, Sendable {
    /// Variants, renditions and session data (`EXT-X-STREAM-INF`, `EXT-X-MEDIA`, …).
    case master(MasterPlaylist)
    /// Segments (`EXTINF`, …).
    case media(MediaPlaylist)

    /// The text form.
    public var text: String {
        switch self {
        case .master(let master): master.text
        case .media(let media): media.text
        }
    }
}

/// A tag the model has no field for, kept so the playlist prints back with it.
public struct UnknownTag: Hashable, Sendable {
    /// The whole line after `#`, e.g. `EXT-X-CONTENT-STEERING:SERVER-URI="…"`.
    public var line: String

    /// A tag from its line (without `#`).
    public init(line: String) { self.line = line }
}

/// A master playlist.
public struct MasterPlaylist: Hashable, Sendable {
    /// `EXT-X-VERSION`.
    public var version: Int?
    /// `EXT-X-INDEPENDENT-SEGMENTS`.
    public var independentSegments = false
    /// `EXT-X-START` attributes.
    public var start: AttributeList?
    /// `EXT-X-MEDIA`: alternate audio, video, subtitles and closed captions.
    public var renditions: [Rendition] = []
    /// `EXT-X-STREAM-INF` and their URIs, in playlist order.
    public var variants: [Variant] = []
    /// `EXT-X-I-FRAME-STREAM-INF`: I-frame playlists for fast scrubbing.
    public var iFrameVariants: [AttributeList] = []
    /// `EXT-X-SESSION-DATA`.
    public var sessionData: [AttributeList] = []
    /// `EXT-X-SESSION-KEY`: keys announced up front.
    public var sessionKeys: [AttributeList] = []
    /// Tags kept as they were.
    public var unknownTags: [UnknownTag] = []

    /// An empty master playlist.
    public init() {}
}

/// One variant stream of a master playlist.
public struct Variant: Hashable, Sendable {
    /// The `EXT-X-STREAM-INF` attributes.
    public var attributes: AttributeList
    /// The media playlist's URI (relative or absolute, as written).
    public var uri: String

    /// A variant from its parts.
    public init(attributes: AttributeList, uri: String) {
        self.attributes = attributes
        self.uri = uri
    }

    /// `BANDWIDTH`: the peak bit rate.
    public var bandwidth: Int { attributes.integer("BANDWIDTH") ?? 0 }
    /// `AVERAGE-BANDWIDTH`.
    public var averageBandwidth: Int? { attributes.integer("AVERAGE-BANDWIDTH") }
    /// `CODECS`, split.
    public var codecs: [String] {
        (attributes["CODECS"] ?? "").split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
    }
    /// `RESOLUTION` as width and height.
    public var resolution: Resolution? { attributes["RESOLUTION"].flatMap(Resolution.init) }
    /// `FRAME-RATE`.
    public var frameRate: Double? { attributes.decimal("FRAME-RATE") }
    /// `VIDEO-RANGE` (SDR when absent, as RFC 8216bis says).
    public var videoRange: VideoRange { attributes["VIDEO-RANGE"].flatMap(VideoRange.init(rawValue:)) ?? .sdr }
    /// `HDCP-LEVEL`.
    public var hdcpLevel: String? { attributes["HDCP-LEVEL"] }
    /// `AUDIO` group id.
    public var audioGroup: String? { attributes["AUDIO"] }
    /// `VIDEO` group id.
    public var videoGroup: String? { attributes["VIDEO"] }
    /// `SUBTITLES` group id.
    public var subtitlesGroup: String? { attributes["SUBTITLES"] }
    /// `CLOSED-CAPTIONS` group id (or `NONE`).
    public var closedCaptions: String? { attributes["CLOSED-CAPTIONS"] }
}

/// Width × height in pixels.
public struct Resolution: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A resolution from its parts.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `1920x1080`.
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else { return nil }
        self.init(width: width, height: height)
    }

    /// Pixels in all (as a Double: a hostile playlist's sizes cannot overflow it).
    public var pixels: Double { Double(width) * Double(height) }

    /// Ordered by pixel count.
    public static func < (lhs: Resolution, rhs: Resolution) -> Bool { lhs.pixels < rhs.pixels }

    /// `1920x1080`.
    public var description: String { "\(width)x\(height)" }
}

/// `VIDEO-RANGE`.
public enum VideoRange: String, Hashable, Sendable, Comparable {
    /// Standard dynamic range.
    case sdr = "SDR"
    /// Hybrid log-gamma HDR.
    case hlg = "HLG"
    /// Perceptual quantizer HDR (HDR10, Dolby Vision).
    case pq = "PQ"

    /// SDR < HLG < PQ.
    public static func < (lhs: VideoRange, rhs: VideoRange) -> Bool {
        let order: [VideoRange] = [.sdr, .hlg, .pq]
        return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
    }
}

/// An `EXT-X-MEDIA` rendition.
public struct Rendition: Hashable, Sendable {
    /// The attributes as written.
    public var attributes: AttributeList

    /// A rendition from its attributes.
    public init(attributes: AttributeList) { self.attributes = attributes }

    /// `TYPE`: AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS.
    public var type: String { attributes["TYPE"] ?? "" }
    /// `GROUP-ID`.
    public var groupID: String { attributes["GROUP-ID"] ?? "" }
    /// `NAME`.
    public var name: String { attributes["NAME"] ?? "" }
    /// `LANGUAGE`.
    public var language: String? { attributes["LANGUAGE"] }
    /// `DEFAULT=YES`.
    public var isDefault: Bool { attributes.flag("DEFAULT") ?? false }
    /// `AUTOSELECT=YES`.
    public var autoselect: Bool { attributes.flag("AUTOSELECT") ?? false }
    /// `FORCED=YES`.
    public var forced: Bool { attributes.flag("FORCED") ?? false }
    /// `CHANNELS`, e.g. "2", "6", "16/JOC".
    public var channels: String? { attributes["CHANNELS"] }
    /// The channel count (the number before any `/`).
    public var channelCount: Int? { channels.flatMap { Int($0.split(separator: "/").first ?? "") } }
    /// True for Dolby Atmos in E-AC-3 (`CHANNELS="…/JOC"`).
    public var isAtmos: Bool { channels?.uppercased().contains("JOC") ?? false }
    /// `URI` (absent when the rendition is carried in the variant itself).
    public var uri: String? { attributes["URI"] }
}

/// A media playlist.
public struct MediaPlaylist: Hashable, Sendable {
    /// `EXT-X-VERSION`.
    public var version: Int?
    /// `EXT-X-TARGETDURATION`.
    public var targetDuration: Int?
    /// `EXT-X-MEDIA-SEQUENCE`.
    public var mediaSequence = 0
    /// `EXT-X-DISCONTINUITY-SEQUENCE`.
    public var discontinuitySequence = 0
    /// `EXT-X-PLAYLIST-TYPE`: VOD or EVENT.
    public var playlistType: String?
    /// `EXT-X-ENDLIST`.
    public var endList = false
    /// `EXT-X-I-FRAMES-ONLY`.
    public var iFramesOnly = false
    /// `EXT-X-INDEPENDENT-SEGMENTS`.
    public var independentSegments = false
    /// `EXT-X-START` attributes.
    public var start: AttributeList?
    /// The segments in order.
    public var segments: [Segment] = []
    /// Tags before the first segment the model has no field for.
    public var unknownTags: [UnknownTag] = []
    /// Tags after the last segment (before or after `EXT-X-ENDLIST`).
    public var trailingTags: [UnknownTag] = []

    /// An empty media playlist.
    public init() {}

    /// Seconds of media.
    public var duration: Double { segments.reduce(0) { $0 + $1.duration } }
}

/// One media segment with everything in effect for it.
public struct Segment: Hashable, Sendable {
    /// `EXTINF` duration in seconds.
    public var duration: Double
    /// `EXTINF` title (after the comma), when there is one.
    public var title: String?
    /// The segment's URI.
    public var uri: String
    /// `EXT-X-BYTERANGE`.
    public var byteRange: ByteRange?
    /// The `EXT-X-KEY`s in effect (one per KEYFORMAT; empty when clear).
    public var keys: [AttributeList] = []
    /// The `EXT-X-MAP` in effect.
    public var map: AttributeList?
    /// `EXT-X-DISCONTINUITY` before this segment.
    public var discontinuity = false
    /// `EXT-X-PROGRAM-DATE-TIME` of this segment, as written.
    public var programDateTime: String?
    /// Other tags just before this segment, kept as written.
    public var unknownTags: [UnknownTag] = []

    /// A segment from its duration and URI.
    public init(duration: Double, uri: String) {
        self.duration = duration
        self.uri = uri
    }

    /// The AES-128 key in effect, if the segment is encrypted that way.
    public var aes128Key: AttributeList? { keys.first { $0["METHOD"] == "AES-128" } }
}

/// `EXT-X-BYTERANGE` / `BYTERANGE`: length and optional offset.
public struct ByteRange: Hashable, Sendable, CustomStringConvertible {
    /// Bytes.
    public var length: Int
    /// Start; absent means "right after the previous range of the same resource".
    public var offset: Int?

    /// A range from its parts.
    public init(length: Int, offset: Int?) {
        self.length = length
        self.offset = offset
    }

    /// Parses `n[@o]`.
    public init?(_ text: String) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let length = Int(parts[0]), length >= 0 else { return nil }
        if parts.count == 2 {
            guard let offset = Int(parts[1]), offset >= 0 else { return nil }
            self.init(length: length, offset: offset)
        } else {
            self.init(length: length, offset: nil)
        }
    }

    /// `n@o` or `n`.
    public var description: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }

    /// The bytes as a closed range (offset 0 when absent); nil when empty or past `Int.max`.
    public var closedRange: ClosedRange<Int>? {
        let start = offset ?? 0
        let (end, overflow) = start.addingReportingOverflow(length)
        guard length > 0, !overflow else { return nil }
        return start...(end - 1)
    }
}
