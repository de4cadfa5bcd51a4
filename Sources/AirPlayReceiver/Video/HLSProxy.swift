import AirPlayHLS
import AirPlayWire
import FoundationEssentials
import NIOCore

/// What video sessions need from the HLS gateway that fronts a playlist for the player. The
/// gateway fetches over HTTP, so it lives in its own module (`AirPlayHLSGateway`) and the
/// daemon hands it in; this library only decides when to open, steer and close it.
public protocol HLSProxy: Sendable {
    /// Starts fronting the playlist at `origin`; returns the URL the player should open.
    func open(origin: String, headers: [String: String], sessionID: String) -> String
    /// Stops fronting the playback the player reaches at `url`.
    func close(_ url: String)
    /// What the gateway knows of the playback at `url`.
    func figures(_ url: String) -> HLSFigures?
    /// The alternate renditions of the playback at `url`, the selected ones marked.
    func renditions(_ url: String) -> [HLSRenditionInfo]
    /// Selects a rendition of `type` (AUDIO, SUBTITLES) for the playback at `url`; true when
    /// the player must reload to hear or see it.
    func select(_ url: String, type: String, choice: HLSRenditionChoice) -> Bool
    /// The I-frame playlist the player reads for trick play, when the master playlist has one.
    func trickURL(_ url: String) -> String?
    /// Answers the player's `GET /hls/…` on the control port.
    func respond(to request: AirPlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<AirPlayResponse>
}

/// Which URLs go through the gateway.
public enum PlaylistURL {
    /// True for HLS playlists (`.m3u8`, `.m3u`), the URLs the gateway fronts.
    public static func isPlaylist(_ url: String) -> Bool {
        guard let path = URLComponents(string: url)?.path.lowercased() else { return false }
        return path.hasSuffix(".m3u8") || path.hasSuffix(".m3u")
    }
}

/// Why a playlist handed over by the sender (`mlhls://`, fetched over FCUP) could not be had.
public struct HandedOverPlaylistError: Error, Hashable, Sendable {
    /// The status the gateway answers its player with (502, 503, 504).
    public var status: Int
    /// What went wrong.
    public var reason: String
    /// A failure.
    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }
}

/// Why a key could not be had.
public struct HLSKeyError: Error, Hashable, Sendable {
    /// What went wrong.
    public var message: String
    /// A key error.
    public init(_ message: String) { self.message = message }
}

/// What the gateway knows of a playback, for `/playback-info` and the log.
public struct HLSFigures: Hashable, Sendable {
    /// Variants in the master playlist.
    public var variants: Int
    /// The variants the player may adapt among.
    public var allowed: [Int]
    /// The others, with the reason each was left out.
    public var refused: [Int: String]
    /// The variant whose playlist the player read last: what plays.
    public var current: Int?
    /// Its peak bit rate, resolution and URI.
    public var currentDescription: VariantDescription?
    /// The last failure (a playlist or key that could not be fetched), for the error report.
    public var error: String?
    /// Bits per second the origin delivered the probe segment at, when measured.
    public var measuredBandwidth: Double?

    /// Figures from their parts.
    public init(variants: Int, allowed: [Int], refused: [Int: String], current: Int? = nil,
                currentDescription: VariantDescription? = nil, error: String? = nil, measuredBandwidth: Double? = nil) {
        self.variants = variants
        self.allowed = allowed
        self.refused = refused
        self.current = current
        self.currentDescription = currentDescription
        self.error = error
        self.measuredBandwidth = measuredBandwidth
    }
}

/// An alternate rendition as `/playback-info` lists it.
public struct HLSRenditionInfo: Hashable, Sendable {
    /// AUDIO or SUBTITLES.
    public var type: String
    /// GROUP-ID.
    public var group: String
    /// NAME.
    public var name: String
    /// LANGUAGE.
    public var language: String?
    /// True for the one that plays (or, for subtitles, shows).
    public var selected: Bool

    /// A rendition's listing from its parts.
    public init(type: String, group: String, name: String, language: String?, selected: Bool) {
        self.type = type
        self.group = group
        self.name = name
        self.language = language
        self.selected = selected
    }
}

/// What a sender selected for a rendition type: a language or a name, or nothing (subtitles off).
public struct HLSRenditionChoice: Hashable, Sendable {
    /// LANGUAGE to match (case-insensitive), if any.
    public var language: String?
    /// NAME to match, if any.
    public var name: String?
    /// A choice from its parts; neither means "none" (subtitles off).
    public init(language: String?, name: String?) {
        self.language = language
        self.name = name
    }

    /// Whether `rendition` is the one chosen (never, for "none").
    public func matches(_ rendition: Rendition) -> Bool {
        if let language, rendition.language?.lowercased() != language.lowercased() { return false }
        if let name, rendition.name != name { return false }
        return language != nil || name != nil
    }
}
