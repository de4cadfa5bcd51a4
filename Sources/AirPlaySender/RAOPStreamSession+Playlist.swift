import AirPlayMedia
import AirPlayWire
import Foundation

/// What the receivers are told about the item that plays, when a playlist moves on.
extension RAOPStreamSession {
    /// The cover of a track, with its type.
    static func artwork(_ tags: TrackTags) -> (type: String, bytes: [UInt8])? {
        tags.artwork.flatMap { bytes in tags.artworkType.map { (type: $0, bytes: bytes) } }
    }

    /// The DMAP item of what plays now: the first file's as the command made it, each later
    /// file's from its tags (its file name when it has no title).
    func currentItem() -> DMAP.Item {
        guard let playlist = source as? PlaylistSource, playlist.position.index > 0 else { return item }
        let tags = playlist.tags
        var next = DMAP.Item()
        next.title = tags.title ?? (playlist.currentPath as NSString).lastPathComponent
        next.artist = tags.artist
        next.album = tags.album
        next.genre = tags.genre
        next.durationMilliseconds = tags.duration.map { Int($0 * 1000) }
        return next
    }
}
