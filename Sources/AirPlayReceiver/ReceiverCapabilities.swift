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
    /// Senders' PTP clocks are followed (features 41 and 47): realtime audio may be timed by
    /// PTP. Only with AirPlay 2 and while the PTP follower runs.
    public var ptpTiming = false
    /// Buffered audio on a PTP timeline is offered (feature 40, and `/info`'s `bufferStream`
    /// formats): only with `ptpTiming`, unless the box's owner turned it off (`buffered_audio`).
    public var bufferedAudio = false
    /// Only paired senders may play (status flag bit 9).
    public var pairingRequired = false
    /// `POST /fp-setup` is answered (feature bit 14: the handshake iOS makes before it sends
    /// audio to an AirPlay 2 receiver; `FairPlaySetup`).
    public var fairPlaySetup = false

    /// Capabilities from their parts.
    public init(video: Bool, hls: Bool, audio: Bool, passwordRequired: Bool = false, alac: Bool = false, aac: Bool = false) {
        self.aac = aac
        self.video = video
        self.hls = hls && video
        self.audio = audio
        self.passwordRequired = passwordRequired
        self.alac = alac
    }

    /// Whether the receiver presents itself as AirPlay 2 receivers that iPhones and Macs play to
    /// do (shairport-sync 4.3/5.x; `Protocol/discovery.md`, "The Apple profile"): `airplay2` on
    /// with a pairing identity. Off, it keeps the AirPlay 1 records of an Apple TV 3.
    public var appleProfile: Bool { airPlay2Pairing && pairingID != nil }

    /// `srcvers`, `vs` and `sourceVersion`: 366.0 in the Apple profile (iOS honours bit 40 from
    /// 354.54.6 and bit 41 from 366 on, and sends no `shk` at 350 or below), else 220.68.
    public var sourceVersion: String { appleProfile ? "366.0" : "220.68" }
    /// `protovers` and `protocolVersion`.
    public var protocolVersion: String { appleProfile ? "1.1" : "1.0" }
    /// The `Server` header of every reply.
    public var serverHeader: String { "AirTunes/" + sourceVersion }

    /// The features mask. Each bit of the Apple profile and why: `Protocol/discovery.md`.
    public var features: FeatureSet {
        var features: FeatureSet = []
        if video { features.formUnion([.video, .videoVolumeControl]) }
        if hls { features.insert(.videoHTTPLiveStreams) }
        if appleProfile {
            features.formUnion([.homeKitPairing, .coreUtilsPairing, .unifiedMediaControl, .unifiedAdvertiserInfo])
            if audio {
                features.formUnion([.audio, .audioRedundant, .metadataText, .metadataArtwork, .metadataProgress,
                                    .nowPlayingInfo, .audioFormatPCM, .unencryptedAudio])
                if alac { features.insert(.audioFormatALAC) }
                if aac { features.insert(.audioFormatAAC) }
                if fairPlaySetup { features.insert(.fairPlayAuthentication) }
                if ptpTiming || bufferedAudio { features.formUnion([.ptpClock, .peerManagement]) }
                if bufferedAudio { features.insert(.bufferedAudio) }
            }
        } else if audio {
            features.formUnion([.audio, .metadataText, .metadataArtwork, .metadataProgress, .rsaAuthentication])
        }
        return features
    }

    /// The `audioFormat` bits a SETUP may name, for `/info`'s `supportedFormats`: the played
    /// formats whose decoder is here (AAC-LC only with an AAC decoder installed).
    public var supportedAudioFormats: UInt64 {
        AirPlay2Setup.playedFormats.filter { $0.compression != 4 || aac }.reduce(0) { $0 | UInt64(1) << $1.bit }
    }

    /// The status flags: an output is attached; a password when configured.
    public var statusFlags: StatusFlags {
        var flags: StatusFlags = [.audioCableAttached]
        if passwordRequired { flags.insert(.passwordRequired) }
        if pairingRequired { flags.insert(.pairingRequired) }
        return flags
    }
}

/// Fixed facts about this implementation that senders read from TXT and `/server-info`
/// (the versions depend on the profile: `ReceiverCapabilities.sourceVersion`).
public enum ReceiverIdentity {
    /// `model`/`am`: names this implementation in Apple's `Name<major>,<minor>` shape.
    public static let model = "airplayd1,1"
    /// The volume every audio session starts at, in dB (`initialVolume` in `/info`): unity,
    /// until the sender sets another.
    public static let initialVolume = 0.0
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

    /// The `_airplay._tcp` TXT record. The Apple profile's keys are those shairport-sync 4.3.7
    /// publishes (known to work with iOS 17 and 18), less `rsf` and `fv`, which only inform; 5.x
    /// adds `fex`, `psi`, `vv`, `igl` and `osvers`, which `/info` carries instead. A legacy
    /// unicast answer (pyatv's `--scan-hosts`) holds 512 bytes: a longer record would crowd out
    /// the service's own records for a long name.
    public var airPlayTXT: TXTRecord {
        let features = capabilities.features
        guard capabilities.appleProfile, let pairing = capabilities.pairingIdentity else {
            var txt: TXTRecord = [
                "deviceid": deviceID.colonForm,
                "features": features.txtValue,
                "flags": capabilities.statusFlags.txtValue,
                "model": ReceiverIdentity.model,
                "protovers": capabilities.protocolVersion,
                "srcvers": capabilities.sourceVersion,
                "pw": capabilities.passwordRequired ? "true" : "false",
                "acl": "0",
            ]
            if let pairing = capabilities.pairingIdentity {
                txt["pi"] = pairing.identifier
                txt["pk"] = pairing.publicKey
            }
            return txt
        }
        // `gid` names the group (ungrouped: the box's own identity); `gcgl` says the group
        // holds no group leader.
        return [
            "acl": "0",
            "deviceid": deviceID.colonForm,
            "features": features.txtValue,
            "flags": capabilities.statusFlags.txtValue,
            "gid": pairing.identifier,
            "gcgl": "0",
            "model": ReceiverIdentity.model,
            "protovers": capabilities.protocolVersion,
            "pi": pairing.identifier,
            "pk": pairing.publicKey,
            "srcvers": capabilities.sourceVersion,
        ]
    }

    /// The `_raop._tcp` TXT record (AirPlay 1 audio, and what AirPlay 2 senders read of it).
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
            "vs": capabilities.sourceVersion,
            "am": ReceiverIdentity.model,
            "sf": capabilities.statusFlags.txtValue,
            "ft": capabilities.features.txtValue,
            "da": "true",
        ]
        // Of the pairing keys, only `pk` (as shairport-sync): the record stays small enough
        // for a legacy unicast answer to carry the host's address, which pyatv then uses for
        // both services.
        if let pairing = capabilities.pairingIdentity {
            if !capabilities.appleProfile { txt["pi"] = pairing.identifier }
            txt["pk"] = pairing.publicKey
        }
        return txt
    }
}
