import AirPlayPlist
import AirPlayWire
import FoundationEssentials

/// Now playing to a receiver that advertises feature bit 50 (`Protocol/now-playing.md` §7): what
/// an iPhone sends such a receiver instead of DMAP, artwork and progress parameters, on the
/// session's own connection. A receiver that refuses one keeps playing.
extension ReceiverLink {
    /// Whether the receiver reads MediaRemote now-playing: an AirPlay 2 session to a receiver
    /// with bit 50.
    public var readsMediaRemoteNowPlaying: Bool { airPlay2 && features.contains(.nowPlayingInfo) }

    /// The item, its cover and where it stands (`progress` in frames at `sampleRate`).
    func sendMediaRemoteNowPlaying(_ item: DMAP.Item?, artwork: (type: String, bytes: [UInt8])?,
                                   progress: (UInt32, UInt32, UInt32)?, sampleRate: Double, playing: Bool) async {
        let bodies = mediaRemote.withLockedValue {
            $0.item(item, artwork: artwork, progress: progress, sampleRate: sampleRate, playing: playing, now: Date())
        }
        for body in bodies { await postCommand(body) }
    }

    /// `updateMRPlaybackState`: on a pause and a resume, so the receiver stops its progress.
    func sendMediaRemoteState(_ state: MediaRemotePlaybackState) async {
        guard readsMediaRemoteNowPlaying else { return }
        await postCommand(state.plist)
    }

    private func postCommand(_ plist: PropertyList) async {
        _ = try? await client.request("POST", target: MediaRemoteCommand.path, body: plist.encoded(as: .binary),
                                      contentType: PropertyListFormat.binary.contentType)
    }
}

/// What `airplay stream` posts a bit-50 receiver, as request bodies, and what it has told it:
/// the commands it takes once, then for each item (and each resume) a `replace` with the cover's
/// bytes the first time that cover is named, and the playback state.
struct MediaRemoteNowPlayingMessages: Sendable {
    /// The remote commands `airplay stream` carries out (MediaRemote numbers: play, pause,
    /// play/pause, stop, next, previous).
    static let commandsTaken: Set<Int> = [0, 1, 2, 3, 4, 5]

    /// The supported-commands list went.
    private(set) var commandsSent = false
    /// The cover whose bytes went last.
    private(set) var artworkSent: String?

    /// The bodies that tell the receiver about `item` at `now`.
    mutating func item(_ item: DMAP.Item?, artwork: (type: String, bytes: [UInt8])?, progress: (UInt32, UInt32, UInt32)?,
                       sampleRate: Double, playing: Bool, now: Date) -> [PropertyList] {
        var bodies: [PropertyList] = []
        if !commandsSent {
            commandsSent = true
            bodies.append(MediaRemoteSupportedCommands(enabled: Self.commandsTaken).plist)
        }
        var info = MediaRemoteNowPlayingInfo()
        info.title = item?.title
        info.artist = item?.artist
        info.album = item?.album
        info.genre = item?.genre
        info.mediaType = "MRMediaRemoteMediaTypeMusic"
        if let progress, sampleRate > 0 {
            info.elapsedTime = Double(progress.1 &- progress.0) / sampleRate
            info.duration = Double(progress.2 &- progress.0) / sampleRate
        } else if let milliseconds = item?.durationMilliseconds {
            info.duration = Double(milliseconds) / 1000
        }
        info.playbackRate = playing ? 1 : 0
        info.defaultPlaybackRate = 1
        info.timestamp = now
        if let artwork {
            let identifier = Self.artworkIdentifier(artwork.bytes)
            info.artworkIdentifier = identifier
            info.artworkMIMEType = artwork.type
            if artworkSent != identifier { info.artworkData = artwork.bytes }
            artworkSent = identifier
        }
        bodies.append(MediaRemoteNowPlayingUpdate(mergePolicy: .replace, info: info).plist)
        bodies.append((playing ? MediaRemotePlaybackState.playing : .paused).plist)
        return bodies
    }

    /// A cover's name: a hash of its bytes (FNV-1a), so the same cover keeps its name.
    static func artworkIdentifier(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }
}
