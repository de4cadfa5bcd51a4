import AirPlayHLS

/// Which HLS variants this box can show: within its display (resolution, HDR), its decoders
/// (asked from the GStreamer registry) and its audio output (AC-3/E-AC-3 passthrough or not).
public struct VariantPolicy: Sendable {
    /// The largest video the display shows.
    public var maximumResolution: Resolution
    /// Whether the display shows HDR (PQ, HLG).
    public var hdr: Bool
    /// Whether AC-3/E-AC-3 may pass through undecoded.
    public var passthrough: Bool
    /// Whether a decoder exists for a codec family (avc1, hvc1, mp4a, ac-3, …).
    public var canDecode: @Sendable (String) -> Bool

    /// A policy from its parts.
    public init(maximumResolution: Resolution, hdr: Bool, passthrough: Bool, canDecode: @escaping @Sendable (String) -> Bool) {
        self.maximumResolution = maximumResolution
        self.hdr = hdr
        self.passthrough = passthrough
        self.canDecode = canDecode
    }

    /// GStreamer elements that decode each codec family; any one present will do.
    public static let decoders: [String: [String]] = [
        "avc1": ["avdec_h264", "v4l2h264dec", "vah264dec", "nvh264dec", "openh264dec"],
        "avc3": ["avdec_h264", "v4l2h264dec", "vah264dec", "nvh264dec", "openh264dec"],
        "hvc1": ["avdec_h265", "v4l2h265dec", "vah265dec", "nvh265dec"],
        "hev1": ["avdec_h265", "v4l2h265dec", "vah265dec", "nvh265dec"],
        "av01": ["dav1ddec", "av1dec", "avdec_av1", "vaav1dec"],
        "vp09": ["vp9dec", "avdec_vp9"],
        "mp4a": ["avdec_aac", "faad", "fdkaacdec"],
        "ac-3": ["avdec_ac3", "a52dec"],
        "ec-3": ["avdec_eac3"],
        "alac": ["avdec_alac"],
        "fLaC": ["flacdec"],
        "Opus": ["opusdec"],
        "opus": ["opusdec"],
        // Dolby Vision has no decoder on Linux: dvh1/dvhe/dva1/dvav are never decodable.
    ]

    /// Why a variant does not fit, or nil when it does.
    public func refusal(_ variant: VariantDescription) -> String? {
        if let video = variant.video {
            if video.codec != "unknown", !canDecode(video.codec) { return "no \(video.codec) decoder" }
            if let resolution = video.resolution,
               resolution.width > maximumResolution.width || resolution.height > maximumResolution.height {
                return "\(resolution) is larger than the display's \(maximumResolution)"
            }
            if video.range != .sdr, !hdr { return "\(video.range.rawValue) needs an HDR display" }
        }
        for codec in variant.audio?.codecs ?? [] where !canDecode(codec) {
            if passthrough, codec == "ac-3" || codec == "ec-3" { continue }
            return "no \(codec) decoder\(codec == "ac-3" || codec == "ec-3" ? " and passthrough is off" : "")"
        }
        return nil
    }

    /// The variants to play and why the others were left out. When none fits the display,
    /// the decodable ones are kept (a picture too big beats none); when none is decodable,
    /// nothing is.
    public func choose(_ master: MasterPlaylist) -> (allowed: [Int], refused: [Int: String]) {
        let variants = VariantDescription.all(master)
        var refused: [Int: String] = [:]
        for variant in variants { refused[variant.index] = refusal(variant) }
        let allowed = variants.map(\.index).filter { refused[$0] == nil }
        if allowed.isEmpty {
            let decodable = variants.filter { variant in
                (variant.video.map { $0.codec == "unknown" || canDecode($0.codec) } ?? true)
                    && (variant.audio?.codecs ?? []).allSatisfy { canDecode($0) || (passthrough && ($0 == "ac-3" || $0 == "ec-3")) }
            }.map(\.index)
            return (decodable, refused.filter { !decodable.contains($0.key) })
        }
        return (allowed, refused)
    }
}
