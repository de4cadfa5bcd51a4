import FoundationEssentials

extension MasterPlaylist {
    /// The playlist as text: header tags, renditions, variants, I-frame variants, session tags,
    /// then the unknown tags. Parsing it again gives the same playlist.
    public var text: String {
        var lines = ["#EXTM3U"]
        if let version { lines.append("#EXT-X-VERSION:\(version)") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        if let start { lines.append("#EXT-X-START:\(start.text)") }
        lines += unknownTags.map { "#" + $0.line }
        lines += sessionData.map { "#EXT-X-SESSION-DATA:\($0.text)" }
        lines += sessionKeys.map { "#EXT-X-SESSION-KEY:\($0.text)" }
        lines += renditions.map { "#EXT-X-MEDIA:\($0.attributes.text)" }
        for variant in variants {
            lines.append("#EXT-X-STREAM-INF:\(variant.attributes.text)")
            lines.append(variant.uri)
        }
        lines += iFrameVariants.map { "#EXT-X-I-FRAME-STREAM-INF:\($0.text)" }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension MediaPlaylist {
    /// The playlist as text. Keys and maps are written where they change, so parsing it again
    /// gives every segment the same keys and map.
    public var text: String {
        var lines = ["#EXTM3U"]
        if let version { lines.append("#EXT-X-VERSION:\(version)") }
        if let targetDuration { lines.append("#EXT-X-TARGETDURATION:\(targetDuration)") }
        if mediaSequence != 0 { lines.append("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)") }
        if discontinuitySequence != 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType)") }
        if iFramesOnly { lines.append("#EXT-X-I-FRAMES-ONLY") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        if let start { lines.append("#EXT-X-START:\(start.text)") }
        lines += unknownTags.map { "#" + $0.line }
        var keys: [AttributeList] = []
        var map: AttributeList?
        for segment in segments {
            lines += segment.unknownTags.map { "#" + $0.line }
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if segment.keys != keys {
                // NONE clears every key format; then the new set is written whole.
                if !keys.isEmpty { lines.append("#EXT-X-KEY:METHOD=NONE") }
                lines += segment.keys.map { "#EXT-X-KEY:\($0.text)" }
                keys = segment.keys
            }
            if let segmentMap = segment.map, segmentMap != map {
                lines.append("#EXT-X-MAP:\(segmentMap.text)")
                map = segmentMap
            }
            if let programDateTime = segment.programDateTime { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(programDateTime)") }
            if let byteRange = segment.byteRange { lines.append("#EXT-X-BYTERANGE:\(byteRange)") }
            lines.append("#EXTINF:\(Self.seconds(segment.duration)),\(segment.title ?? "")")
            lines.append(segment.uri)
        }
        lines += trailingTags.map { "#" + $0.line }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Durations without needless digits, and exactly as parsed (Double's shortest form).
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }
}
