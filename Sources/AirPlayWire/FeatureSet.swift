import FoundationEssentials

/// The AirPlay `features` bit field published in mDNS TXT records and `/server-info`.
///
/// Bit meanings come from public protocol notes; see `Protocol/discovery.md` for the bits
/// this project sets and why. The value is 64 bits wide: the TXT form writes the low and
/// high 32-bit halves as `0xLOW,0xHIGH` (the high half is omitted when it is zero).
public struct FeatureSet: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw 64-bit feature mask.
    public var rawValue: UInt64

    /// Wraps a raw 64-bit feature mask.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Builds a set from bit numbers.
    public init(bits: [Int]) {
        self.rawValue = bits.reduce(0) { $0 | (1 << UInt64($1)) }
    }

    /// Bit 0: plays video URLs (`/play`).
    public static let video = FeatureSet(bits: [0])
    /// Bit 1: shows photos (`/photo`).
    public static let photo = FeatureSet(bits: [1])
    /// Bit 2: FairPlay-protected video.
    public static let videoFairPlay = FeatureSet(bits: [2])
    /// Bit 3: volume control during video playback (`/volume`).
    public static let videoVolumeControl = FeatureSet(bits: [3])
    /// Bit 4: HTTP Live Streaming playback.
    public static let videoHTTPLiveStreams = FeatureSet(bits: [4])
    /// Bit 5: photo slideshows.
    public static let slideshow = FeatureSet(bits: [5])
    /// Bit 7: screen mirroring.
    public static let screenMirroring = FeatureSet(bits: [7])
    /// Bit 8: rotation of mirrored screens.
    public static let screenRotate = FeatureSet(bits: [8])
    /// Bit 9: RAOP audio.
    public static let audio = FeatureSet(bits: [9])
    /// Bit 11: redundant audio packets.
    public static let audioRedundant = FeatureSet(bits: [11])
    /// Bit 14: FairPlay-based authentication (`/fp-setup`).
    public static let fairPlayAuthentication = FeatureSet(bits: [14])
    /// Bit 15: metadata as artwork (`image/jpeg`, `image/png`).
    public static let metadataArtwork = FeatureSet(bits: [15])
    /// Bit 16: metadata as progress (`progress:` parameter).
    public static let metadataProgress = FeatureSet(bits: [16])
    /// Bit 17: metadata as text (DMAP).
    public static let metadataText = FeatureSet(bits: [17])
    /// Bit 18: receives PCM audio (macOS asks for it before pairing).
    public static let audioFormatPCM = FeatureSet(bits: [18])
    /// Bit 19: receives ALAC audio.
    public static let audioFormatALAC = FeatureSet(bits: [19])
    /// Bit 20: receives AAC-LC audio (iOS looks for it).
    public static let audioFormatAAC = FeatureSet(bits: [20])
    /// Bit 22: takes unencrypted audio.
    public static let unencryptedAudio = FeatureSet(bits: [22])
    /// Bit 23: RSA authentication (`Apple-Challenge` / `Apple-Response`).
    public static let rsaAuthentication = FeatureSet(bits: [23])
    /// Bit 26: MFi hardware authentication.
    public static let mfiAuthentication = FeatureSet(bits: [26])
    /// Bit 27: legacy pairing.
    public static let legacyPairing = FeatureSet(bits: [27])
    /// Bit 30: the `_airplay._tcp` record carries the RAOP information too.
    public static let unifiedAdvertiserInfo = FeatureSet(bits: [30])
    /// Bit 38: unified media control (CoreUtils pairing path).
    public static let unifiedMediaControl = FeatureSet(bits: [38])
    /// Bit 40: buffered audio (AirPlay 2).
    public static let bufferedAudio = FeatureSet(bits: [40])
    /// Bit 41: PTP clock (AirPlay 2).
    public static let ptpClock = FeatureSet(bits: [41])
    /// Bit 43: system pairing.
    public static let systemPairing = FeatureSet(bits: [43])
    /// Bit 46: HomeKit pairing and access control.
    public static let homeKitPairing = FeatureSet(bits: [46])
    /// Bit 47: peer management, the SETPEERS a PTP group's sender keeps the receivers in step with.
    public static let peerManagement = FeatureSet(bits: [47])
    /// Bit 48: CoreUtils pairing and encryption (transient pairing).
    public static let coreUtilsPairing = FeatureSet(bits: [48])
    /// Bit 49: AirPlay video v2 (the AirPlay 2 video protocol).
    public static let airPlayVideoV2 = FeatureSet(bits: [49])
    /// Bit 50: now-playing as MediaRemote plists (`POST /command` `updateMRNowPlayingInfo`)
    /// instead of DMAP, artwork and progress parameters.
    public static let nowPlayingInfo = FeatureSet(bits: [50])
    /// Bit 51: unified pair-setup and MFi.
    public static let unifiedPairSetupAndMFi = FeatureSet(bits: [51])

    /// Bits that make senders insist on a pairing handshake before anything else.
    public static let pairingBits: FeatureSet = [
        .unifiedMediaControl, .systemPairing, .homeKitPairing, .coreUtilsPairing,
        .legacyPairing, .unifiedPairSetupAndMFi,
    ]

    /// Human-readable names of known bits, for `airplay list --json` and logs.
    public static let bitNames: [Int: String] = [
        0: "Video", 1: "Photo", 2: "VideoFairPlay", 3: "VideoVolumeControl",
        4: "VideoHTTPLiveStreams", 5: "Slideshow", 7: "ScreenMirroring", 8: "ScreenRotate",
        9: "Audio", 11: "AudioRedundant", 12: "FPSAPv2pt5_AES_GCM", 13: "PhotoCaching",
        14: "FairPlayAuthentication", 15: "MetadataArtwork", 16: "MetadataProgress",
        17: "MetadataText", 18: "AudioFormatPCM", 19: "AudioFormatALAC", 20: "AudioFormatAAC",
        21: "AudioFormat4", 22: "UnencryptedAudio", 23: "RSAAuthentication", 26: "MFiAuthentication",
        27: "LegacyPairing", 30: "UnifiedAdvertiserInfo", 32: "IsCarPlay",
        33: "VideoPlayQueue", 34: "AirPlayFromCloud", 35: "TLS_PSK", 38: "UnifiedMediaControl",
        40: "BufferedAudio", 41: "PTP", 42: "ScreenMultiCodec", 43: "SystemPairing",
        44: "ValeriaScreenSender", 46: "HomeKitPairing", 47: "PeerManagement", 48: "CoreUtilsPairing",
        49: "AirPlayVideoV2", 50: "NowPlayingInfo", 51: "UnifiedPairSetupAndMFi",
        52: "SetPeersExtendedMessage", 54: "APSync", 55: "WakeOnLAN", 56: "WakeOnLAN2",
        58: "HangdogRemoteControl", 59: "AudioStreamConnectionSetup",
        60: "AudioMediaDataControl", 61: "RFC2198Redundancy",
    ]

    /// The numbers of the bits that are set, ascending.
    public var bitNumbers: [Int] { (0..<64).filter { rawValue & (1 << UInt64($0)) != 0 } }

    /// The names of the bits that are set (`Bit<N>` for bits without a known name).
    public var names: [String] { bitNumbers.map { Self.bitNames[$0] ?? "Bit\($0)" } }

    /// The TXT record form: `0xLOW` or `0xLOW,0xHIGH`, upper-case hex as Apple devices write it.
    /// With a high word the low one has all 8 digits: pyatv 0.18 joins the two words as text
    /// (`HIGH` + `LOW`), so `0x838219,0x14840` would read as bits that were never set.
    public var txtValue: String {
        let low = UInt32(truncatingIfNeeded: rawValue)
        let high = UInt32(truncatingIfNeeded: rawValue >> 32)
        let lowDigits = String(low, radix: 16, uppercase: true)
        guard high != 0 else { return "0x" + lowDigits }
        return "0x" + String(repeating: "0", count: 8 - lowDigits.count) + lowDigits + ",0x" + String(high, radix: 16, uppercase: true)
    }

    /// The `fex` TXT form (`featuresEx` in `/info`): the mask's bytes, least significant first,
    /// in base64 without its `=` padding, as AirPlay 2 receivers publish it beside `features`.
    public var featuresExValue: String {
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) }
        return String(Data(bytes).base64EncodedString().filter { $0 != "=" })
    }

    /// Parses the TXT form (`0x5A7FFFF7,0x1E`, `0x77`, or a plain decimal); nil when malformed.
    public init?(txtValue: String) {
        let halves = txtValue.split(separator: ",", omittingEmptySubsequences: false)
        guard (1...2).contains(halves.count) else { return nil }
        func parse(_ text: Substring) -> UInt32? {
            let trimmed = text.trimmingWhitespace()
            if trimmed.lowercased().hasPrefix("0x") { return UInt32(trimmed.dropFirst(2), radix: 16) }
            return UInt32(trimmed)
        }
        guard let low = parse(halves[0]) else { return nil }
        var value = UInt64(low)
        if halves.count == 2 {
            guard let high = parse(halves[1]) else { return nil }
            value |= UInt64(high) << 32
        }
        self.rawValue = value
    }

    /// The TXT form, for logs.
    public var description: String { txtValue }
}
