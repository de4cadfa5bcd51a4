/// A track's tags as the sender shows and forwards them.
public struct TrackTags: Hashable, Sendable {
    /// Title.
    public var title: String?
    /// Artist.
    public var artist: String?
    /// Album.
    public var album: String?
    /// Genre.
    public var genre: String?
    /// Embedded cover art and its MIME type (`image/jpeg`, `image/png`).
    public var artwork: [UInt8]?
    /// The artwork's MIME type.
    public var artworkType: String?
    /// Seconds, when known.
    public var duration: Double?

    /// No tags.
    public init() {}
}

/// Where a stream's audio comes from: interleaved stereo PCM in `format` (CD audio, what RAOP
/// receivers take, unless the source says otherwise: a 24-bit or 48 kHz FLAC file for AirPlay 2's
/// buffered mode), pulled as fast as it is read. `airplay stream` wires a decoded file or
/// standard input; tests may wire generated audio.
public protocol PCMSource: AnyObject, Sendable {
    /// The track's tags and duration.
    var tags: TrackTags { get }
    /// The samples' format (always stereo).
    var format: PCMFormat { get }
    /// Up to `frames` frames (fewer only at the end; empty once the audio has ended).
    func read(frames: Int) -> [Int32]
}

extension PCMSource {
    /// CD audio unless a source says otherwise.
    public var format: PCMFormat { .cd }
}
