import AirPlayDiscovery
import AirPlayWire

/// What this receiver can do, decided once from configuration and the media stack.
///
/// It is the single source of every capability statement the receiver makes: the TXT records
/// of both services and `/server-info` are derived from it, so they cannot disagree.
/// Bits for things not implemented (pairing, mirroring, FairPlay, photos) are never set.
public struct ReceiverCapabilities: Hashable, Sendable {
    /// Video URLs can be played.
    public var video: Bool
    /// HLS can be played (needs video and an HLS demuxer).
    public var hls: Bool
    /// RAOP audio is offered.
    public var audio: Bool
    /// A password protects the receiver.
    public var passwordRequired: Bool
    /// ALAC can be decoded (airplayd always can: it has its own decoder).
    public var alac: Bool
    /// AAC-LC can be decoded (an AAC decoder is installed).
    public var aac: Bool
    /// The pairing identity (`pi`) and its Ed25519 public key in hex (`pk`), when pairing is served.
    public var pairingIdentity: (identifier: String, publicKey: String)? {
        get { pairingID.map { ($0, pairingPublicKey ?? "") } }
        set {
            pairingID = newValue?.identifier
            pairingPublicKey = newValue?.publicKey
        }
    }
    private var pairingID: String?
    private var pairingPublicKey: String?
    /// AirPlay 2 is served: HAP and transient pairing (features 43, 46, 48) and sessions set up
    /// with plists, realtime audio on NTP (38, "unified media control").
    public var airPlay2Pairing = false
    /// Buffered audio on a PTP timeline is served (features 40, 41 and 47, and `/info`'s
    /// `supportedFormats`): only with AirPlay 2 and while the PTP follower runs.
    public var bufferedAudio = false
    /// Only paired senders may play (status flag bit 9).
    public var pairingRequired = false

    /// Capabilities from their parts.
    public init(video: Bool, hls: Bool, audio: Bool, passwordRequired: Bool = false, alac: Bool = false, aac: Bool = false) {
        self.aac = aac
        self.video = video
        self.hls = hls && video
        self.audio = audio
        self.passwordRequired = passwordRequired
        self.alac = alac
    }

    /// The features mask.
    public var features: FeatureSet {
        var features: FeatureSet = []
        if video { features.formUnion([.video, .videoVolumeControl]) }
        if hls { features.insert(.videoHTTPLiveStreams) }
        if audio {
            features.formUnion([.audio, .metadataText, .metadataArtwork, .metadataProgress, .rsaAuthentication])
        }
        if airPlay2Pairing, pairingID != nil {
            features.formUnion([.systemPairing, .homeKitPairing, .coreUtilsPairing, .unifiedMediaControl])
            if audio, bufferedAudio { features.formUnion([.bufferedAudio, .ptpClock, .peerManagement]) }
        }
        return features
    }

    /// The status flags: an output is attached; a password when configured.
    public var statusFlags: StatusFlags {
        var flags: StatusFlags = [.audioCableAttached]
        if passwordRequired { flags.insert(.passwordRequired) }
        if pairingRequired { flags.insert(.pairingRequired) }
        return flags
    }
}

/// Fixed facts about this implementation that senders read from TXT and `/server-info`.
public enum ReceiverIdentity {
    /// `model`/`am`: names this implementation in Apple's `Name<major>,<minor>` shape.
    public static let model = "airplayd1,1"
    /// `srcvers`/`vs`: the AirTunes version whose AirPlay 1 protocol we speak (Apple TV 3 era).
    public static let sourceVersion = "220.68"
    /// `protovers`: the AirPlay protocol version.
    public static let protocolVersion = "1.0"
    /// The volume every audio session starts at, in dB (`initialVolume` in `/info`): unity,
    /// until the sender sets another.
    public static let initialVolume = 0.0
    /// `Server` header on every reply.
    public static let serverHeader = "AirTunes/220.68"
}

/// The two DNS-SD services of the receiver, built from its capabilities.
public struct ReceiverAdvertisement: DeviceAdvertisement, Hashable {
    /// The stable device id.
    public var deviceID: DeviceID
    /// The control port both services point at.
    public var port: UInt16
    /// What the receiver can do.
    public var capabilities: ReceiverCapabilities

    /// An advertisement from its parts.
    public init(deviceID: DeviceID, port: UInt16, capabilities: ReceiverCapabilities) {
        self.deviceID = deviceID
        self.port = port
        self.capabilities = capabilities
    }

    /// `_airplay._tcp` always (it also answers `/server-info`), `_raop._tcp` only when audio is on.
    public func services(deviceName: String) -> [ServiceRegistration] {
        var services = [ServiceRegistration(type: "_airplay._tcp", name: deviceName, port: port, txt: airPlayTXT)]
        if capabilities.audio {
            services.append(ServiceRegistration(type: "_raop._tcp", name: deviceID.raopInstanceName(deviceName: deviceName),
                                                port: port, txt: raopTXT))
        }
        return services
    }

    /// The `_airplay._tcp` TXT record.
    public var airPlayTXT: TXTRecord {
        var txt: TXTRecord = [
            "deviceid": deviceID.colonForm,
            "features": capabilities.features.txtValue,
            "flags": capabilities.statusFlags.txtValue,
            "model": ReceiverIdentity.model,
            "protovers": ReceiverIdentity.protocolVersion,
            "srcvers": ReceiverIdentity.sourceVersion,
            "pw": capabilities.passwordRequired ? "true" : "false",
            "acl": "0",
        ]
        addPairing(to: &txt)
        return txt
    }

    /// `pi` and `pk` when pairing is served; with AirPlay 2 also `psi` (the identity senders
    /// name this output by) and `gid` (the group: ungrouped, the box's own identity).
    private func addPairing(to txt: inout TXTRecord) {
        guard let pairing = capabilities.pairingIdentity else { return }
        txt["pi"] = pairing.identifier
        txt["pk"] = pairing.publicKey
        if capabilities.airPlay2Pairing {
            txt["psi"] = pairing.identifier
            txt["gid"] = pairing.identifier
        }
    }

    /// The `_raop._tcp` TXT record (AirPlay 1 audio).
    public var raopTXT: TXTRecord {
        var txt: TXTRecord = [
            "txtvers": "1",
            "ch": "2",
            // What the receiver decodes: L16 PCM, and ALAC, AAC-LC and AAC-ELD when their
            // decoders are installed (FFmpeg's AAC decoder, avdec_aac, does both AAC kinds).
            "cn": (["0"] + (capabilities.alac ? ["1"] : []) + (capabilities.aac ? ["2", "3"] : [])).joined(separator: ","),
            "et": "0,1",
            "md": "0,1,2",
            "pw": capabilities.passwordRequired ? "true" : "false",
            "sr": "44100",
            "ss": "16",
            "tp": "UDP",
            "vn": "65537",
            "vs": ReceiverIdentity.sourceVersion,
            "am": ReceiverIdentity.model,
            "sf": capabilities.statusFlags.txtValue,
            "ft": capabilities.features.txtValue,
            "da": "true",
        ]
        addPairing(to: &txt)
        return txt
    }
}
