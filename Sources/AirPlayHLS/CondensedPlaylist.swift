/// YouTube's condensed media playlists: a header tag
/// `#YT-EXT-CONDENSED-URL:BASE-URI="…",PARAMS="govp,gosq",PREFIX="s/"` lets each segment line be
/// written short: `s/slices%3D0-219,97414-1049792/1` stands for
/// `BASE-URI/govp/slices%3D0-219,97414-1049792/gosq/1`, the i-th `/`-separated piece after the
/// prefix going with the i-th parameter name. A player knows nothing of the tag, so the receiver
/// expands every segment (and `EXT-X-MAP`) URI before serving the playlist, and drops the tag.
///
/// YouTube writes the tag on the line after `#EXTM3U` (UxPlay expands it only there); it is taken
/// anywhere before the first segment. A segment whose pieces do not match the parameters is a
/// refusal naming the segment, never a guessed URL.
public enum CondensedPlaylist {
    /// The header tag's name.
    public static let tagName = "YT-EXT-CONDENSED-URL"

    /// The tag's three values.
    public struct Form: Hashable, Sendable {
        /// `BASE-URI`: what every expanded URI starts with.
        public var baseURI: String
        /// `PARAMS`: the names the pieces go with, in order.
        public var parameters: [String]
        /// `PREFIX`: what a condensed segment line starts with.
        public var prefix: String

        /// A form from its values.
        public init(baseURI: String, parameters: [String], prefix: String) {
            self.baseURI = baseURI
            self.parameters = parameters
            self.prefix = prefix
        }

        /// The full URI a condensed one stands for, or nil when `uri` is not condensed (it does
        /// not start with the prefix); throws when its pieces and the parameters differ in count.
        public func expand(_ uri: String) throws(PlaylistError) -> String? {
            guard !prefix.isEmpty, uri.hasPrefix(prefix) else { return nil }
            let rest = uri.dropFirst(prefix.count)
            let pieces = rest.isEmpty ? [] : rest.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count == parameters.count else {
                throw PlaylistError(line: 0, message: "condensed segment \(uri.prefix(80)) has \(pieces.count) pieces for \(parameters.count) PARAMS")
            }
            var expanded = baseURI.hasSuffix("/") ? String(baseURI.dropLast()) : baseURI
            for (name, piece) in zip(parameters, pieces) { expanded += "/" + name + "/" + piece }
            return expanded
        }
    }

    /// The condensed form a playlist's header declares, or nil; throws when the tag lacks
    /// BASE-URI or PREFIX. (To HLS the tag is a comment, so it is read from the text: the
    /// header's lines, up to the first segment.)
    public static func form(in text: String) throws(PlaylistError) -> Form? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if line.hasPrefix("#" + tagName + ":") { return try form(of: line.dropFirst(tagName.count + 2)) }
            if line.hasPrefix("#EXTINF") || !line.hasPrefix("#") && !line.allSatisfy(\.isWhitespace) { return nil }
        }
        return nil
    }

    /// The form from the tag's attribute list.
    static func form(of attributeText: Substring) throws(PlaylistError) -> Form {
        let attributes: AttributeList
        do {
            attributes = try AttributeList(parsing: attributeText)
        } catch {
            throw PlaylistError(line: 0, message: "#\(tagName): \(error.message)")
        }
        guard let base = attributes["BASE-URI"], !base.isEmpty, let prefix = attributes["PREFIX"], !prefix.isEmpty else {
            throw PlaylistError(line: 0, message: "#\(tagName) needs BASE-URI and PREFIX")
        }
        let parameters = (attributes["PARAMS"] ?? "").split(separator: ",").map { String($0).trimmingSpaces }
        return Form(baseURI: base, parameters: parameters, prefix: prefix)
    }

    /// A media playlist's text parsed, its condensed URIs (if it declares the form) expanded.
    public static func parseMedia(_ text: String) throws(PlaylistError) -> MediaPlaylist {
        let playlist = try PlaylistParser.parseMedia(text)
        guard let form = try form(in: text) else { return playlist }
        return try expand(playlist, with: form)
    }

    /// The playlist with every condensed URI (segments and `EXT-X-MAP`) expanded.
    public static func expand(_ playlist: MediaPlaylist, with form: Form) throws(PlaylistError) -> MediaPlaylist {
        var expanded = playlist
        for index in expanded.segments.indices {
            let segment = expanded.segments[index]
            do {
                if let uri = try form.expand(segment.uri) { expanded.segments[index].uri = uri }
                if let uri = segment.map?["URI"], let full = try form.expand(uri) { expanded.segments[index].map?["URI"] = full }
            } catch {
                throw PlaylistError(line: 0, message: "segment \(index + 1): \(error.message)")
            }
        }
        return expanded
    }
}
