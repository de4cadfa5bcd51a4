
/// What an AirPlay 2 `SETUP` asks for, read from its binary plist. AirPlay 2 sets a session up
/// in two requests on the (encrypted) control connection: phase 1 names the timing protocol and
/// gets the event port back; phase 2 lists the audio streams and gets their ports.
public enum AirPlay2Setup: Equatable, Sendable {
    /// Phase 1: timing and the event channel.
    case session(Session)
    /// Phase 2: the streams to open.
    case streams([Stream])
    /// A remote-control-only session (`timingProtocol: None`, `isRemoteControlOnly: true`): an
    /// event channel and nothing else; whatever plays goes on.
    case remoteControl(Session)
    /// A data stream (type 130): MediaRemote messages on a TCP port of its own.
    case dataStream(DataStreamSetup)

    /// Phase 1's request.
    public struct Session: Equatable, Sendable {
        /// `NTP`, or `PTP` (served when the PTP follower runs); `None` for remote control only.
        public var timingProtocol: String
        /// The sender's NTP timing port, when it gives one.
        public var timingPort: Int?
        /// The sender's session id.
        public var sessionUUID: String?
        /// The sender's device id, name and model, for the log and now-playing.
        public var deviceID: String?
        /// The sender's name.
        public var name: String?
        /// The sender's model (`iPhone14,3`).
        public var model: String?
        /// PTP: the addresses of the timing peers (`timingPeerInfo`, `timingPeerList`).
        public var timingPeers: [String] = []
        /// The sender's MAC address as it gives it (Apple's senders repeat the device id).
        public var macAddress: String?
        /// The sender's AirPlay version (`sourceVersion`, e.g. `220.68`).
        public var sourceVersion: String?
        /// The group the sender plays to (`groupUUID`).
        public var groupUUID: String?
        /// The sender's system as an iPhone gives it: `osName`, `osVersion`, `osBuildVersion`.
        public var osName: String?
        /// `osVersion`, e.g. `18.1`.
        public var osVersion: String?
        /// `osBuildVersion`, e.g. `22B83`.
        public var osBuildVersion: String?
        /// The sender's yes/no traits, by key: `isMultiSelectAirPlay`, `groupContainsGroupLeader`,
        /// `senderSupportsRelay`, `statsCollectionEnabled`.
        public var traits: [String: Bool] = [:]

        /// The keys of `traits` this codec reads and writes.
        public static let traitKeys = ["isMultiSelectAirPlay", "groupContainsGroupLeader", "senderSupportsRelay", "statsCollectionEnabled"]

        /// A phase 1 request from its parts.
        public init(timingProtocol: String, timingPort: Int? = nil, sessionUUID: String? = nil, deviceID: String? = nil,
                    name: String? = nil, model: String? = nil, timingPeers: [String] = [], macAddress: String? = nil,
                    sourceVersion: String? = nil, groupUUID: String? = nil, osName: String? = nil, osVersion: String? = nil,
                    osBuildVersion: String? = nil, traits: [String: Bool] = [:]) {
            self.timingProtocol = timingProtocol
            self.timingPort = timingPort
            self.sessionUUID = sessionUUID
            self.deviceID = deviceID
            self.name = name
            self.model = model
            self.timingPeers = timingPeers
            self.macAddress = macAddress
            self.sourceVersion = sourceVersion
            self.groupUUID = groupUUID
            self.osName = osName
            self.osVersion = osVersion
            self.osBuildVersion = osBuildVersion
            self.traits = traits
        }

        /// Reads the sender's description (the keys every phase 1 form shares).
        init(timingProtocol: String, reading plist: PropertyList) {
            self.init(timingProtocol: timingProtocol, sessionUUID: plist["sessionUUID"]?.stringValue,
                      deviceID: plist["deviceID"]?.stringValue, name: plist["name"]?.stringValue, model: plist["model"]?.stringValue,
                      macAddress: plist["macAddress"]?.stringValue, sourceVersion: plist["sourceVersion"]?.stringValue,
                      groupUUID: plist["groupUUID"]?.stringValue, osName: plist["osName"]?.stringValue,
                      osVersion: plist["osVersion"]?.stringValue, osBuildVersion: plist["osBuildVersion"]?.stringValue)
            for key in Self.traitKeys { traits[key] = plist[key]?.boolValue }
        }

        /// The request's entries.
        var entries: [String: PropertyList] {
            var entries: [String: PropertyList] = ["timingProtocol": .string(timingProtocol)]
            let strings = ["sessionUUID": sessionUUID, "deviceID": deviceID, "name": name, "model": model,
                           "macAddress": macAddress, "sourceVersion": sourceVersion, "groupUUID": groupUUID, "osName": osName,
                           "osVersion": osVersion, "osBuildVersion": osBuildVersion]
            for (key, value) in strings { if let value { entries[key] = .string(value) } }
            for (key, value) in traits { entries[key] = .bool(value) }
            if let timingPort { entries["timingPort"] = .integer(Int64(timingPort)) }
            if let first = timingPeers.first {
                // Our own entry, as Apple's senders write it: every address, the first as its ID.
                let peer = PropertyList.dictionary(["Addresses": .array(timingPeers.map { .string($0) }), "ID": .string(first),
                                                    "DeviceType": .integer(0)])
                entries["timingPeerInfo"] = peer
                entries["timingPeerList"] = .array([peer])
            }
            return entries
        }
    }

    /// One stream of phase 2.
    public struct Stream: Equatable, Sendable {
        /// 96: realtime audio; 103: buffered audio (served on a PTP session).
        public var type: Int
        /// The compression: 1 PCM, 2 ALAC, 4 AAC-LC, 8 AAC-ELD, 64 Opus.
        public var compression: Int
        /// The `audioFormat` bit mask (for example 0x800: PCM, 44.1 kHz, 16-bit, stereo).
        public var audioFormat: UInt64
        /// Samples per frame (`spf`): 352 for realtime PCM and ALAC.
        public var samplesPerFrame: Int
        /// Sample rate (`sr`).
        public var sampleRate: Int
        /// Bits per sample (`ss`, 16 when absent): used only when `audioFormat` is not given.
        public var bitsPerSample = 16
        /// The 32-byte ChaCha20-Poly1305 key of the stream's audio packets (`shk`).
        public var streamKey: [UInt8]
        /// The sender's control port (sync and resend traffic).
        public var controlPort: Int?
        /// The latency bounds the sender asks for, in frames.
        public var latencyMin: Int?
        /// The latency bounds the sender asks for, in frames.
        public var latencyMax: Int?
        /// What else Apple's senders say of a stream, written as given: `isMedia`,
        /// `audioMode` (`default`), `streamConnectionID` (the stream's RTP SSRC),
        /// `supportsDynamicStreamID`, `clientID`.
        public var isMedia: Bool?
        /// `audioMode`, e.g. `default`.
        public var audioMode: String?
        /// `streamConnectionID`: the RTP SSRC the stream's packets carry.
        public var streamConnectionID: Int64?
        /// `supportsDynamicStreamID`.
        public var supportsDynamicStreamID: Bool?
        /// `clientID`: the sender's name for itself.
        public var clientID: String?

        /// A stream from its parts.
        public init(type: Int, compression: Int, audioFormat: UInt64, samplesPerFrame: Int, sampleRate: Int, bitsPerSample: Int = 16,
                    streamKey: [UInt8], controlPort: Int? = nil, latencyMin: Int? = nil, latencyMax: Int? = nil,
                    isMedia: Bool? = nil, audioMode: String? = nil, streamConnectionID: Int64? = nil,
                    supportsDynamicStreamID: Bool? = nil, clientID: String? = nil) {
            self.type = type
            self.compression = compression
            self.audioFormat = audioFormat
            self.samplesPerFrame = samplesPerFrame
            self.sampleRate = sampleRate
            self.bitsPerSample = bitsPerSample
            self.streamKey = streamKey
            self.controlPort = controlPort
            self.latencyMin = latencyMin
            self.latencyMax = latencyMax
            self.isMedia = isMedia
            self.audioMode = audioMode
            self.streamConnectionID = streamConnectionID
            self.supportsDynamicStreamID = supportsDynamicStreamID
            self.clientID = clientID
        }

        /// The stream's entries in a phase 2 request.
        var plist: PropertyList {
            var entries: [String: PropertyList] = [
                "type": .integer(Int64(type)), "ct": .integer(Int64(compression)), "spf": .integer(Int64(samplesPerFrame)),
                "sr": .integer(Int64(sampleRate)), "ss": .integer(Int64(bitsPerSample)), "shk": .data(streamKey),
            ]
            if audioFormat != 0 { entries["audioFormat"] = .integer(Int64(bitPattern: audioFormat)) }
            let integers = ["controlPort": controlPort.map(Int64.init), "latencyMin": latencyMin.map(Int64.init),
                            "latencyMax": latencyMax.map(Int64.init), "streamConnectionID": streamConnectionID]
            for (key, value) in integers { if let value { entries[key] = .integer(value) } }
            if let isMedia { entries["isMedia"] = .bool(isMedia) }
            if let supportsDynamicStreamID { entries["supportsDynamicStreamID"] = .bool(supportsDynamicStreamID) }
            if let audioMode { entries["audioMode"] = .string(audioMode) }
            if let clientID { entries["clientID"] = .string(clientID) }
            return .dictionary(entries)
        }
    }

    /// Why a SETUP body is refused: the 4xx to answer with and its reason.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// 400 for a malformed body, 451 for a parameter we do not speak, 461 for an unsupported stream.
        public var status: Int
        /// What is wrong, named.
        public var description: String
        /// A refusal with its status and reason.
        public init(status: Int, description: String) {
            self.status = status
            self.description = description
        }
    }

    /// Stream types.
    public static let realtime = 96
    /// Buffered audio: TCP, anchored on the PTP clock.
    public static let buffered = 103
    /// The buffer a buffered stream may fill, in bytes, as `audioBufferSize` (what Apple's own
    /// receivers and shairport-sync report); TCP back-pressure keeps the sender within it.
    public static let audioBufferSize = 8 << 20

    /// Reads a SETUP body (a binary plist). PTP sessions and buffered streams are accepted only
    /// when `ptp` (the box follows PTP clocks).
    public init(plist: PropertyList, ptp: Bool = false) throws(Refusal) {
        guard case .dictionary = plist else { throw Refusal(status: 400, description: "SETUP body is not a dictionary") }
        if let streams = plist["streams"] {
            guard case .array(let items) = streams, !items.isEmpty, items.count <= 4 else {
                throw Refusal(status: 400, description: "streams must be an array of 1 to 4 dictionaries")
            }
            // A data stream comes alone in its SETUP (iOS and pyatv send it so).
            if items.count == 1, let dataStream = DataStreamSetup(plist: items[0]) {
                self = .dataStream(dataStream)
                return
            }
            self = .streams(try items.map { item throws(Refusal) in try Self.stream(item, ptp: ptp) })
            return
        }
        guard let timing = plist["timingProtocol"]?.stringValue else {
            throw Refusal(status: 400, description: "SETUP has neither timingProtocol nor streams")
        }
        if timing == "None", plist["isRemoteControlOnly"]?.boolValue == true {
            self = .remoteControl(Session(timingProtocol: timing, reading: plist))
            return
        }
        guard timing == "NTP" || (timing == "PTP" && ptp) else {
            throw Refusal(status: 451, description: "timingProtocol \(timing.prefix(20)) is not supported here (\(ptp ? "NTP and PTP are" : "NTP is"))")
        }
        let port = plist["timingPort"]?.integerValue.map(Int.init)
        if let port, !(1...65535).contains(port) { throw Refusal(status: 400, description: "timingPort \(port) is not a port") }
        var peers = [plist["timingPeerInfo"], plist["timingPeerList"]].compactMap { $0 }.flatMap(TimingPeers.addresses)
        peers = peers.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        var session = Session(timingProtocol: timing, reading: plist)
        session.timingPort = port
        session.timingPeers = Array(peers.prefix(16))
        self = .session(session)
    }

    /// The request's body, as a sender writes it (and as `init(plist:ptp:)` reads it back).
    public var plist: PropertyList {
        switch self {
        case .session(let session):
            return .dictionary(session.entries)
        case .remoteControl(let session):
            var entries = session.entries
            entries["timingProtocol"] = .string("None")
            entries["isRemoteControlOnly"] = .bool(true)
            return .dictionary(entries)
        case .streams(let streams):
            return .dictionary(["streams": .array(streams.map(\.plist))])
        case .dataStream(let dataStream):
            return .dictionary(["streams": .array([dataStream.plist])])
        }
    }

    private static func stream(_ item: PropertyList, ptp: Bool) throws(Refusal) -> Stream {
        guard case .dictionary = item, let type = item["type"]?.integerValue.map(Int.init) else {
            throw Refusal(status: 400, description: "a stream has no type")
        }
        guard type == realtime || (type == buffered && ptp) else {
            throw Refusal(status: 461, description: type == buffered ? "buffered audio (type 103) needs the PTP follower, which is not running; realtime (96) is served"
                                                                      : "stream type \(type) is not served")
        }
        guard let compression = item["ct"]?.integerValue.map(Int.init), [1, 2, 4].contains(compression) else {
            throw Refusal(status: 461, description: "compression ct=\(item["ct"]?.integerValue.map(String.init) ?? "none") is not served (1 PCM, 2 ALAC, 4 AAC-LC)")
        }
        guard case .data(let key)? = item["shk"], key.count == 32 else {
            throw Refusal(status: 400, description: "shk must be 32 bytes of data")
        }
        // Buffered streams may leave out sr and spf: AAC-LC packs 1024 frames, ALAC and PCM 352.
        let rate = Int(item["sr"]?.integerValue ?? 44100), frames = Int(item["spf"]?.integerValue ?? (compression == 4 ? 1024 : 352))
        guard [44100, 48000].contains(rate), (1...4096).contains(frames) else {
            throw Refusal(status: 461, description: "sr \(rate) or spf \(frames) is not served (44100 or 48000 Hz, 1 to 4096 frames)")
        }
        let control = item["controlPort"]?.integerValue.map(Int.init)
        if let control, !(1...65535).contains(control) { throw Refusal(status: 400, description: "controlPort \(control) is not a port") }
        return Stream(type: type, compression: compression, audioFormat: UInt64(bitPattern: item["audioFormat"]?.integerValue ?? 0),
                      samplesPerFrame: frames, sampleRate: rate, bitsPerSample: Int(item["ss"]?.integerValue ?? 16),
                      streamKey: key, controlPort: control,
                      latencyMin: item["latencyMin"]?.integerValue.map(Int.init), latencyMax: item["latencyMax"]?.integerValue.map(Int.init),
                      isMedia: item["isMedia"]?.boolValue, audioMode: item["audioMode"]?.stringValue,
                      streamConnectionID: item["streamConnectionID"]?.integerValue,
                      supportsDynamicStreamID: item["supportsDynamicStreamID"]?.boolValue, clientID: item["clientID"]?.stringValue)
    }

    /// A stereo format of the `audioFormat` bit table played here.
    package struct PlayedFormat: Sendable {
        /// The bit of `audioFormat` (and of `/info`'s `supportedFormats`).
        package var bit: Int
        /// The `ct` it goes with: 1 PCM, 2 ALAC, 4 AAC-LC.
        package var compression: Int
        var sampleRate: Int
        /// 16 or 24 (AAC decodes to 16).
        var bitsPerSample: Int
        var name: String { "\(["PCM", "ALAC", "", "AAC-LC"][compression - 1]) \(sampleRate)/\(bitsPerSample)" }
    }

    /// Every stereo PCM, ALAC and AAC-LC format at 44.1 and 48 kHz: bits 11, 13, 15, 17 (PCM
    /// 44.1/16, 44.1/24, 48/16, 48/24), 18 to 21 (ALAC, the same four), 22 and 23 (AAC-LC).
    package static let playedFormats: [PlayedFormat] = [
        .init(bit: 11, compression: 1, sampleRate: 44100, bitsPerSample: 16), .init(bit: 13, compression: 1, sampleRate: 44100, bitsPerSample: 24),
        .init(bit: 15, compression: 1, sampleRate: 48000, bitsPerSample: 16), .init(bit: 17, compression: 1, sampleRate: 48000, bitsPerSample: 24),
        .init(bit: 18, compression: 2, sampleRate: 44100, bitsPerSample: 16), .init(bit: 19, compression: 2, sampleRate: 44100, bitsPerSample: 24),
        .init(bit: 20, compression: 2, sampleRate: 48000, bitsPerSample: 16), .init(bit: 21, compression: 2, sampleRate: 48000, bitsPerSample: 24),
        .init(bit: 22, compression: 4, sampleRate: 44100, bitsPerSample: 16), .init(bit: 23, compression: 4, sampleRate: 48000, bitsPerSample: 16),
    ]

    /// The `audioFormat` mask of every played format (for `/info`'s `supportedFormats`).
    public static var playedFormatMask: UInt64 { playedFormats.reduce(0) { $0 | UInt64(1) << $1.bit } }
}

extension AirPlay2Setup.Stream {
    /// The stream as the playout and decoders know streams: the format named by `audioFormat`
    /// (unambiguous), or by `ct` when no format bit is given (senders disagree on what `ct`
    /// values above 2 mean, so it is only the fallback). PCM is big-endian, as in RAOP.
    public func description() throws(AirPlay2Setup.Refusal) -> RAOPStreamDescription {
        let played = AirPlay2Setup.playedFormats
        let format: AirPlay2Setup.PlayedFormat?
        if audioFormat != 0 {
            format = played.first { audioFormat == UInt64(1) << $0.bit }
            guard format != nil else {
                throw AirPlay2Setup.Refusal(status: 461, description: "audioFormat 0x\(String(audioFormat, radix: 16)) is not played here "
                    + "(stereo PCM, ALAC and AAC-LC at 44100 or 48000 Hz: mask 0x\(String(AirPlay2Setup.playedFormatMask, radix: 16)))")
            }
        } else {
            format = played.first { $0.compression == compression && $0.sampleRate == sampleRate && $0.bitsPerSample == bitsPerSample }
        }
        guard let format else {
            throw AirPlay2Setup.Refusal(status: 461, description: "ct \(compression) at \(sampleRate) Hz, \(bitsPerSample) bits is not played here")
        }
        let rate = format.sampleRate, depth = format.bitsPerSample
        switch format.compression {
        case 1:
            return RAOPStreamDescription(codec: .pcm, sampleRate: rate, channels: 2, framesPerPacket: samplesPerFrame, bitsPerSample: depth)
        case 2:
            // The ALAC "magic cookie" values RAOP gives in its fmtp: frame length, version,
            // depth, pb 40, mb 10, kb 14, channels, max run, max frame bytes, bit rate, rate.
            let cookie = [samplesPerFrame, 0, depth, 40, 10, 14, 2, 255, 0, 0, rate]
            return RAOPStreamDescription(codec: .alac(fmtp: cookie), sampleRate: rate, channels: 2, framesPerPacket: samplesPerFrame,
                                         bitsPerSample: depth)
        default:
            // AudioSpecificConfig: AAC-LC (object type 2), the rate's index (4: 44100, 3:
            // 48000), 2 channels.
            return RAOPStreamDescription(codec: .aacLC, sampleRate: rate, channels: 2, framesPerPacket: 1024,
                                         aacConfig: rate == 48000 ? [0x11, 0x90] : [0x12, 0x10])
        }
    }
}
