/// Why a playlist does not parse, with the line (1-based) where it went wrong.
public struct PlaylistError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The line number.
    public var line: Int
    /// What is wrong.
    public var message: String

    /// "line N: message".
    public var description: String { "line \(line): \(message)" }
}

/// Reads HLS playlists (RFC 8216 and the extensions real servers use). It does no I/O: give it
/// the text. Tolerated, as players tolerate them: a byte-order mark, CRLF, indented lines, an
/// attribute list broken over lines after a comma, unknown tags (kept) and comments (dropped).
public enum PlaylistParser {
    /// The most lines a playlist may have (a 10,000-segment live playlist has about 20,000).
    public static let maximumLines = 1_000_000

    /// Parses a playlist of either kind.
    public static func parse(_ text: String) throws(PlaylistError) -> Playlist {
        let lines = try logicalLines(text)
        guard let first = lines.first, first.text == "#EXTM3U" else {
            throw PlaylistError(line: lines.first?.number ?? 1, message: "a playlist starts with #EXTM3U")
        }
        let isMaster = lines.contains { line in
            ["#EXT-X-STREAM-INF", "#EXT-X-MEDIA:", "#EXT-X-I-FRAME-STREAM-INF", "#EXT-X-SESSION-"].contains { line.text.hasPrefix($0) }
        }
        let isMedia = lines.contains { $0.text.hasPrefix("#EXTINF") || $0.text.hasPrefix("#EXT-X-TARGETDURATION") }
        if isMaster && isMedia {
            let offending = lines.first { $0.text.hasPrefix("#EXTINF") || $0.text.hasPrefix("#EXT-X-TARGETDURATION") }!
            throw PlaylistError(line: offending.number, message: "a master playlist cannot have media segment tags")
        }
        return isMaster ? .master(try master(lines.dropFirst())) : .media(try media(lines.dropFirst()))
    }

    /// Parses a master playlist (errors when it is a media playlist).
    public static func parseMaster(_ text: String) throws(PlaylistError) -> MasterPlaylist {
        guard case .master(let master) = try parse(text) else { throw PlaylistError(line: 1, message: "not a master playlist") }
        return master
    }

    /// Parses a media playlist (errors when it is a master playlist).
    public static func parseMedia(_ text: String) throws(PlaylistError) -> MediaPlaylist {
        guard case .media(let media) = try parse(text) else { throw PlaylistError(line: 1, message: "not a media playlist") }
        return media
    }

    struct Line {
        var number: Int
        var text: String
    }

    /// Lines trimmed, empty ones and comments dropped, continued attribute lists joined.
    static func logicalLines(_ text: String) throws(PlaylistError) -> [Line] {
        var result: [Line] = []
        var number = 0
        var pending: Line?
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            guard number <= maximumLines else { throw PlaylistError(line: number, message: "more than \(maximumLines) lines") }
            var line = String(raw).trimmingSpaces
            if number == 1, line.hasPrefix("\u{FEFF}") { line.removeFirst() }
            if var open = pending {
                if line.isEmpty { continue }
                pending = nil
                if Self.startsLikeAnAttribute(line) {
                    // An attribute list that ended with a comma goes on here.
                    open.text += line
                    if line.hasSuffix(",") { pending = open } else { result.append(open) }
                    continue
                }
                result.append(open)
            }
            if line.isEmpty || (line.hasPrefix("#") && !line.hasPrefix("#EXT")) { continue }
            let item = Line(number: number, text: line)
            if line.hasPrefix("#EXT-X-"), line.hasSuffix(","), line.contains(":") {
                pending = item
            } else {
                result.append(item)
            }
        }
        if let pending { result.append(pending) }
        return result
    }

    /// `NAME=` with an upper-case attribute name: the rest of a broken attribute list, not a URI.
    static func startsLikeAnAttribute(_ line: String) -> Bool {
        guard let equals = line.firstIndex(of: "="), let first = line.first, first.isUppercase else { return false }
        return line[..<equals].allSatisfy { ($0.isUppercase && $0.isASCII) || $0.isNumber || $0 == "-" }
    }

    static func split(_ line: String) -> (name: String, value: Substring?) {
        guard let colon = line.firstIndex(of: ":") else { return (String(line.dropFirst()), nil) }
        return (String(line[line.index(after: line.startIndex)..<colon]), line[line.index(after: colon)...])
    }

    static func attributes(_ value: Substring?, _ line: Line) throws(PlaylistError) -> AttributeList {
        guard let value else { throw PlaylistError(line: line.number, message: "\(split(line.text).name) needs attributes") }
        do {
            return try AttributeList(parsing: value)
        } catch {
            throw PlaylistError(line: line.number, message: "\(error.message) at column \(error.column) of the attribute list")
        }
    }

    static func integer(_ value: Substring?, _ line: Line) throws(PlaylistError) -> Int {
        guard let value, let number = Int(value.trimmingCharacters(in: " ")), number >= 0 else {
            throw PlaylistError(line: line.number, message: "\(split(line.text).name) needs a whole number")
        }
        return number
    }

    static func master(_ lines: ArraySlice<Line>) throws(PlaylistError) -> MasterPlaylist {
        var playlist = MasterPlaylist()
        var pendingVariant: (AttributeList, Line)?
        for line in lines {
            if !line.text.hasPrefix("#") {
                guard let (attributes, _) = pendingVariant else {
                    throw PlaylistError(line: line.number, message: "a URI in a master playlist must follow #EXT-X-STREAM-INF")
                }
                playlist.variants.append(Variant(attributes: attributes, uri: line.text))
                pendingVariant = nil
                continue
            }
            if let (_, open) = pendingVariant {
                throw PlaylistError(line: open.number, message: "#EXT-X-STREAM-INF is not followed by its URI")
            }
            let (name, value) = split(line.text)
            switch name {
            case "EXTM3U":
                throw PlaylistError(line: line.number, message: "#EXTM3U appears twice")
            case "EXT-X-VERSION": playlist.version = try integer(value, line)
            case "EXT-X-INDEPENDENT-SEGMENTS": playlist.independentSegments = true
            case "EXT-X-START": playlist.start = try attributes(value, line)
            case "EXT-X-MEDIA":
                let list = try attributes(value, line)
                guard list["TYPE"] != nil, list["GROUP-ID"] != nil, list["NAME"] != nil else {
                    throw PlaylistError(line: line.number, message: "#EXT-X-MEDIA needs TYPE, GROUP-ID and NAME")
                }
                playlist.renditions.append(Rendition(attributes: list))
            case "EXT-X-STREAM-INF":
                let list = try attributes(value, line)
                guard list.integer("BANDWIDTH") != nil else {
                    throw PlaylistError(line: line.number, message: "#EXT-X-STREAM-INF needs BANDWIDTH")
                }
                pendingVariant = (list, line)
            case "EXT-X-I-FRAME-STREAM-INF":
                let list = try attributes(value, line)
                guard list["URI"] != nil, list.integer("BANDWIDTH") != nil else {
                    throw PlaylistError(line: line.number, message: "#EXT-X-I-FRAME-STREAM-INF needs BANDWIDTH and URI")
                }
                playlist.iFrameVariants.append(list)
            case "EXT-X-SESSION-DATA": playlist.sessionData.append(try attributes(value, line))
            case "EXT-X-SESSION-KEY": playlist.sessionKeys.append(try attributes(value, line))
            default: playlist.unknownTags.append(UnknownTag(line: String(line.text.dropFirst())))
            }
        }
        if let (_, open) = pendingVariant {
            throw PlaylistError(line: open.number, message: "#EXT-X-STREAM-INF is not followed by its URI")
        }
        return playlist
    }

    static func media(_ lines: ArraySlice<Line>) throws(PlaylistError) -> MediaPlaylist {
        var playlist = MediaPlaylist()
        var keys: [AttributeList] = []
        var map: AttributeList?
        var next: (duration: Double, title: String?)?
        var byteRange: ByteRange?
        var discontinuity = false
        var programDateTime: String?
        var segmentTags: [UnknownTag] = []
        for line in lines {
            if !line.text.hasPrefix("#") {
                guard let info = next else {
                    throw PlaylistError(line: line.number, message: "a segment URI must follow #EXTINF")
                }
                var segment = Segment(duration: info.duration, uri: line.text)
                segment.title = info.title
                segment.byteRange = byteRange
                segment.keys = keys
                segment.map = map
                segment.discontinuity = discontinuity
                segment.programDateTime = programDateTime
                segment.unknownTags = segmentTags
                playlist.segments.append(segment)
                (next, byteRange, discontinuity, programDateTime, segmentTags) = (nil, nil, false, nil, [])
                continue
            }
            let (name, value) = split(line.text)
            switch name {
            case "EXTM3U": throw PlaylistError(line: line.number, message: "#EXTM3U appears twice")
            case "EXT-X-VERSION": playlist.version = try integer(value, line)
            case "EXT-X-TARGETDURATION": playlist.targetDuration = try integer(value, line)
            case "EXT-X-MEDIA-SEQUENCE": playlist.mediaSequence = try integer(value, line)
            case "EXT-X-DISCONTINUITY-SEQUENCE": playlist.discontinuitySequence = try integer(value, line)
            case "EXT-X-PLAYLIST-TYPE":
                guard let type = value.map(String.init), ["VOD", "EVENT"].contains(type) else {
                    throw PlaylistError(line: line.number, message: "#EXT-X-PLAYLIST-TYPE is VOD or EVENT")
                }
                playlist.playlistType = type
            case "EXT-X-ENDLIST": playlist.endList = true
            case "EXT-X-I-FRAMES-ONLY": playlist.iFramesOnly = true
            case "EXT-X-INDEPENDENT-SEGMENTS": playlist.independentSegments = true
            case "EXT-X-START": playlist.start = try attributes(value, line)
            case "EXTINF":
                guard let value else { throw PlaylistError(line: line.number, message: "#EXTINF needs a duration") }
                let parts = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
                guard let duration = Double(parts[0].trimmingCharacters(in: " ")), duration >= 0, duration.isFinite else {
                    throw PlaylistError(line: line.number, message: "#EXTINF duration \(parts[0]) is not a number of seconds")
                }
                let title = parts.count > 1 ? String(parts[1]) : nil
                next = (duration, title?.isEmpty == true ? nil : title)
            case "EXT-X-BYTERANGE":
                guard let range = value.flatMap({ ByteRange(String($0)) }) else {
                    throw PlaylistError(line: line.number, message: "#EXT-X-BYTERANGE is length[@offset]")
                }
                byteRange = range
            case "EXT-X-KEY":
                let key = try attributes(value, line)
                guard let method = key["METHOD"] else { throw PlaylistError(line: line.number, message: "#EXT-X-KEY needs METHOD") }
                if method == "NONE" {
                    keys = []
                } else {
                    guard key["URI"] != nil else { throw PlaylistError(line: line.number, message: "#EXT-X-KEY METHOD=\(method) needs URI") }
                    // A key replaces the one of the same KEYFORMAT (identity when absent).
                    keys.removeAll { ($0["KEYFORMAT"] ?? "identity") == (key["KEYFORMAT"] ?? "identity") }
                    keys.append(key)
                }
            case "EXT-X-MAP":
                let list = try attributes(value, line)
                guard list["URI"] != nil else { throw PlaylistError(line: line.number, message: "#EXT-X-MAP needs URI") }
                map = list
            case "EXT-X-DISCONTINUITY": discontinuity = true
            case "EXT-X-PROGRAM-DATE-TIME": programDateTime = value.map(String.init)
            default:
                let tag = UnknownTag(line: String(line.text.dropFirst()))
                if playlist.segments.isEmpty && next == nil && segmentTags.isEmpty && !name.hasPrefix("EXT-X-CUE")
                    && !name.hasPrefix("EXT-X-DATERANGE") {
                    playlist.unknownTags.append(tag)
                } else {
                    segmentTags.append(tag)
                }
            }
        }
        if next != nil {
            throw PlaylistError(line: lines.last?.number ?? 1, message: "the last #EXTINF has no segment URI")
        }
        playlist.trailingTags = segmentTags
        return playlist
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var text = self
        while text.first == set { text = text.dropFirst() }
        while text.last == set { text = text.dropLast() }
        return text
    }
}
