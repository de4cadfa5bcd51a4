import AirPlayWire
import FoundationEssentials

/// What MediaRemote now-playing info (feature bit 50) tells the box's surfaces: the same
/// events DMAP text, artwork and progress post, so a session that sends both keeps one truth
/// (the last message wins) and every surface reads one state.
public enum MediaRemoteEvents {
    /// The events that take the surfaces from `before` (nil: nothing said yet) to `after`, the
    /// receiver's wall clock being `now` (nil: the elapsed time is taken as of now).
    ///
    /// - Text as DMAP fields when title, artist, album, genre, composer or duration changed;
    /// - the cover when its bytes changed, or again after new text (a new item drops its
    ///   cover); an empty cover when the info no longer has one;
    /// - the position, carried forward from the sender's timestamp, when elapsed time,
    ///   timestamp, rate or duration changed, then the rate when it changed.
    public static func events(from before: MediaRemoteNowPlayingInfo?, to after: MediaRemoteNowPlayingInfo, now: Date?) -> [NowPlayingEvent] {
        var events: [NowPlayingEvent] = []
        let fields = dmapFields(of: after)
        let textChanged = before.map { dmapFields(of: $0) != fields } ?? !fields.isEmpty
        if textChanged { events.append(.metadata(fields)) }
        if let bytes = after.artworkData {
            if textChanged || bytes != before?.artworkData {
                events.append(.artwork(type: after.artworkMIMEType ?? imageType(of: bytes), bytes: bytes))
            }
        } else if before?.artworkData != nil {
            events.append(.artwork(type: nil, bytes: []))
        }
        let timing = { (info: MediaRemoteNowPlayingInfo?) in
            [info?.elapsedTime, info?.timestamp?.timeIntervalSinceReferenceDate, info?.playbackRate, info?.duration]
        }
        if let elapsed = after.elapsed(at: now), timing(before) != timing(after) {
            events.append(.position(seconds: elapsed, duration: after.isAlwaysLive == true ? nil : after.duration))
        }
        if let rate = after.playbackRate, rate != before?.playbackRate { events.append(.rate(rate)) }
        return events
    }

    /// The DMAP fields the info's text stands for (`minm`, `asar`, `asal`, `asgn`, `ascp`,
    /// `astm` in milliseconds), in that order, those that are set.
    public static func dmapFields(of info: MediaRemoteNowPlayingInfo) -> [DMAPField] {
        var fields: [DMAPField] = []
        for (tag, text) in [("minm", info.title), ("asar", info.artist), ("asal", info.album), ("asgn", info.genre), ("ascp", info.composer)] {
            if let text { fields.append(DMAPField(tag: tag, text: text)) }
        }
        if let duration = info.duration, duration > 0, info.isAlwaysLive != true {
            let milliseconds = UInt32(clamping: Int64(min(duration * 1000, Double(UInt32.max)).rounded()))
            fields.append(DMAPField(tag: "astm", value: withUnsafeBytes(of: milliseconds.bigEndian, Array.init)))
        }
        return fields
    }

    /// A cover's type from its first bytes, when the sender did not say: PNG or JPEG.
    static func imageType(of bytes: [UInt8]) -> String {
        bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? "image/png" : "image/jpeg"
    }
}
