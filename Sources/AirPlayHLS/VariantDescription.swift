/// What a variant offers, gathered from its `EXT-X-STREAM-INF` and the renditions of its groups,
/// the way AVFoundation's AVAssetVariant describes it: bit rates, video attributes, audio
/// attributes and subtitle languages.
public struct VariantDescription: Hashable, Sendable {
    /// Video of a variant.
    public struct Video: Hashable, Sendable {
        /// The codec family from CODECS: avc1, hvc1, dvh1, av01, …
        public var codec: String
        /// The full codec string, e.g. `avc1.64001f`.
        public var codecString: String
        /// `RESOLUTION`.
        public var resolution: Resolution?
        /// `FRAME-RATE`.
        public var frameRate: Double?
        /// `VIDEO-RANGE`.
        public var range: VideoRange
        /// True for Dolby Vision (dvh1/dvhe/dva1/dvav).
        public var isDolbyVision: Bool { ["dvh1", "dvhe", "dva1", "dvav"].contains(codec) }
    }

    /// Audio of a variant.
    public struct Audio: Hashable, Sendable {
        /// Codec families from CODECS: mp4a, ac-3, ec-3, alac, fLaC, opus, …
        public var codecs: [String]
        /// Channel counts of the audio renditions (2 when no rendition says).
        public var channels: [Int]
        /// True when a rendition is Dolby Atmos (`CHANNELS="16/JOC"`).
        public var atmos: Bool
        /// Languages of the audio renditions.
        public var languages: [String]
    }

    /// The variant's position in the master playlist.
    public var index: Int
    /// The variant as written.
    public var variant: Variant
    /// `BANDWIDTH`.
    public var peakBitRate: Int
    /// `AVERAGE-BANDWIDTH`.
    public var averageBitRate: Int?
    /// Video, when the variant has any.
    public var video: Video?
    /// Audio, when the variant has any.
    public var audio: Audio?
    /// Languages of the subtitle renditions.
    public var subtitleLanguages: [String]
    /// `HDCP-LEVEL`.
    public var hdcpLevel: String?

    static let videoCodecs: Set<String> = ["avc1", "avc3", "hvc1", "hev1", "dvh1", "dvhe", "dva1", "dvav", "av01", "vp09", "vp08"]

    /// Describes variant `index` of a master playlist.
    public init(_ playlist: MasterPlaylist, index: Int) {
        let variant = playlist.variants[index]
        self.index = index
        self.variant = variant
        peakBitRate = variant.bandwidth
        averageBitRate = variant.averageBandwidth
        hdcpLevel = variant.hdcpLevel
        let codecs = variant.codecs
        let families = codecs.map { String($0.split(separator: ".").first ?? "") }
        if let at = families.firstIndex(where: { Self.videoCodecs.contains($0) }) {
            video = Video(codec: families[at], codecString: codecs[at], resolution: variant.resolution, frameRate: variant.frameRate,
                          range: variant.videoRange)
        } else if variant.resolution != nil {
            video = Video(codec: "unknown", codecString: "", resolution: variant.resolution, frameRate: variant.frameRate,
                          range: variant.videoRange)
        }
        let audioGroup = playlist.renditions.filter { $0.type == "AUDIO" && $0.groupID == variant.audioGroup && variant.audioGroup != nil }
        let audioFamilies = families.filter { !Self.videoCodecs.contains($0) && !$0.isEmpty && !["stpp", "wvtt"].contains($0) }
        if !audioFamilies.isEmpty || !audioGroup.isEmpty || codecs.isEmpty {
            let counts = audioGroup.compactMap(\.channelCount)
            audio = Audio(codecs: audioFamilies, channels: counts.isEmpty ? [2] : Array(Set(counts)).sorted(),
                          atmos: audioGroup.contains(where: \.isAtmos), languages: audioGroup.compactMap(\.language))
        }
        subtitleLanguages = playlist.renditions
            .filter { $0.type == "SUBTITLES" && $0.groupID == variant.subtitlesGroup && variant.subtitlesGroup != nil }
            .compactMap(\.language)
    }

    /// Every variant of a master playlist.
    public static func all(_ playlist: MasterPlaylist) -> [VariantDescription] {
        playlist.variants.indices.map { VariantDescription(playlist, index: $0) }
    }

    /// Badges as the seeds' picker shows them: 4K, HD, HDR, Dolby Vision, Dolby Atmos, 5.1.
    public var badges: [String] {
        var badges: [String] = []
        if let resolution = video?.resolution {
            if resolution.width >= 3840 || resolution.height >= 2160 { badges.append("4K") } else if resolution.height >= 720 { badges.append("HD") }
        }
        if video?.isDolbyVision == true { badges.append("Dolby Vision") } else if let range = video?.range, range != .sdr { badges.append("HDR \(range.rawValue)") }
        if audio?.atmos == true { badges.append("Dolby Atmos") } else if let most = audio?.channels.max(), most >= 6 { badges.append("\(most - 1).1") }
        return badges
    }
}
