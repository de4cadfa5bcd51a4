import FoundationEssentials

/// A playlist's URIs against the URL the playlist came from.
public enum PlaylistURI {
    /// `uri` resolved against `base` (absolute URIs stay as they are; text that is not a URL too).
    public static func resolve(_ uri: String, against base: String) -> String {
        guard let baseURL = URL(string: base) else { return uri }
        return URL(string: uri, relativeTo: baseURL)?.absoluteString ?? uri
    }
}

extension MasterPlaylist {
    /// The URIs made absolute against `base`, so the playlist can be served from elsewhere.
    public func absolutized(against base: URL) -> MasterPlaylist {
        var copy = self
        func absolute(_ uri: String) -> String { PlaylistURI.resolve(uri, against: base.absoluteString) }
        copy.variants = variants.map { Variant(attributes: $0.attributes, uri: absolute($0.uri)) }
        copy.renditions = renditions.map { rendition in
            var attributes = rendition.attributes
            if let uri = attributes["URI"] { attributes["URI"] = absolute(uri) }
            return Rendition(attributes: attributes)
        }
        copy.iFrameVariants = iFrameVariants.map { list in
            var list = list
            if let uri = list["URI"] { list["URI"] = absolute(uri) }
            return list
        }
        copy.sessionKeys = sessionKeys.map { list in
            var list = list
            if let uri = list["URI"], !uri.contains(":") || uri.hasPrefix("http") { list["URI"] = absolute(uri) }
            return list
        }
        return copy
    }

    /// Only the given variants, with the renditions their groups use and the I-frame variants
    /// of the same video codecs: what a player may then adapt among.
    public func keeping(variants kept: [Int]) -> MasterPlaylist {
        var copy = self
        copy.variants = kept.sorted().map { variants[$0] }
        let groups = Set(copy.variants.flatMap { [$0.audioGroup, $0.videoGroup, $0.subtitlesGroup, $0.closedCaptions].compactMap { $0 } })
        copy.renditions = renditions.filter { groups.contains($0.groupID) }
        let videoCodecs = Set(copy.variants.flatMap(\.codecs).map { String($0.split(separator: ".").first ?? "") })
        copy.iFrameVariants = iFrameVariants.filter { list in
            let codecs = (list["CODECS"] ?? "").split(separator: ",").map { String($0.split(separator: ".").first ?? "") }
            return codecs.isEmpty || codecs.contains { videoCodecs.contains($0) }
        }
        return copy
    }
}
