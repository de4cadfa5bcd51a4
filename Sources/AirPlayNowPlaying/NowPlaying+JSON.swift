import AirPlayWire
import FoundationEssentials

extension NowPlayingState {
    /// The state as the JSON document of `GET /now-playing` and the page's live updates, at
    /// monotonic time `now`. `artwork` says how the cover appears: its bytes in base64 (the
    /// loopback document), or only its type, size and number (the page fetches it by URL).
    public func json(now: Double, artworkBytes: Bool = true) -> [String: JSONValue] {
        var object: [String: JSONValue] = ["state": .string(status)]
        object["sender"] = .string(sender?.name)
        object["kind"] = .string(sender?.kind.rawValue)
        let controllable = sender?.isControllable ?? false
        object["controllable"] = .bool(controllable)
        // Next and previous: audio senders only, and only where the sender takes them.
        object["canGoNext"] = .bool(controllable && sender?.kind == .audio && senderTakes(4))
        object["canGoPrevious"] = .bool(controllable && sender?.kind == .audio && senderTakes(5))
        object["format"] = .string(format)
        object["title"] = .string(item.title)
        object["artist"] = .string(item.artist)
        object["album"] = .string(item.album)
        object["genre"] = .string(item.genre)
        object["item"] = .integer(item.number)
        object["duration"] = .number(playback.duration)
        object["position"] = .number(sender == nil ? 0 : playback.position(at: now))
        object["rate"] = .number(playback.rate)
        object["volume"] = .number(volumeDecibels)
        if let artwork = item.artwork {
            var cover: [String: JSONValue] = ["type": .string(artwork.type), "bytes": .integer(artwork.bytes.count),
                                              "number": .integer(artwork.number)]
            if artworkBytes { cover["base64"] = .string(Data(artwork.bytes).base64EncodedString()) }
            object["artwork"] = .object(cover)
        } else {
            object["artwork"] = .null
        }
        return object
    }
}
