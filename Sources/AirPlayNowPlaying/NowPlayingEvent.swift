import AirPlayWire

/// Who is playing to the box: what a session tells about its sender, as shairport-sync's
/// metadata pipe reports it (`snam`, `snua`, `clip`, `svip`, `daid`, `acre`).
public struct NowPlayingSender: Hashable, Sendable {
    /// What kind of session plays.
    public enum Kind: String, Hashable, Sendable {
        /// RAOP or AirPlay 2 audio.
        case audio
        /// A URL played by the box's video player.
        case video
    }

    /// Audio or video.
    public var kind: Kind
    /// A name to show: the sender's `X-Apple-Client-Name`, or its address.
    public var name: String
    /// The name the sender gave itself (`X-Apple-Client-Name`, AirPlay 2's `name`), if it did.
    public var clientName: String?
    /// The sender's IP address.
    public var address: String?
    /// The box's IP address the sender reached.
    public var serverAddress: String?
    /// The sender's `User-Agent`.
    public var userAgent: String?
    /// The sender's `DACP-ID`: the name of its remote-control service is `iTunes_Ctrl_<DACP-ID>`.
    public var dacpID: String?
    /// The sender's `Active-Remote` token, sent back on every remote-control request.
    public var activeRemote: String?
    /// Whether the session is AirPlay 2's, with an event channel the box sends remote
    /// commands on.
    public var hasEventChannel: Bool

    /// A sender from its parts.
    public init(kind: Kind, name: String, clientName: String? = nil, address: String? = nil, serverAddress: String? = nil, userAgent: String? = nil,
                dacpID: String? = nil, activeRemote: String? = nil, hasEventChannel: Bool = false) {
        self.kind = kind
        self.name = name
        self.clientName = clientName
        self.address = address
        self.serverAddress = serverAddress
        self.userAgent = userAgent
        self.dacpID = dacpID
        self.activeRemote = activeRemote
        self.hasEventChannel = hasEventChannel
    }

    /// Whether the box can ask the sender to pause, skip or change the volume (the AirPlay 2
    /// event channel or DACP for audio, the box's own player for video).
    public var isControllable: Bool { kind == .video || hasEventChannel || (dacpID != nil && activeRemote != nil) }
}

/// One DMAP field as the sender sent it: its four-character tag and its raw value.
public struct DMAPField: Hashable, Sendable {
    /// The tag, e.g. `minm`.
    public var tag: String
    /// The value's bytes.
    public var value: [UInt8]

    /// A field from its parts.
    public init(tag: String, value: [UInt8]) {
        self.tag = tag
        self.value = value
    }

    /// A text field.
    public init(tag: String, text: String) { self.init(tag: tag, value: Array(text.utf8)) }

    /// The fields of a `SET_PARAMETER` DMAP body, in the order sent (the `mlit` container opened).
    public static func fields(of body: [UInt8]) throws(DMAP.Problem) -> [DMAPField] {
        var entries = try DMAP.entries(body[...])
        if entries.count == 1, entries[0].tag == "mlit" { entries = try DMAP.entries(entries[0].value) }
        return entries.map { DMAPField(tag: $0.tag, value: Array($0.value)) }
    }
}

/// Something that happened to the box's now-playing state. Sessions post these; the state
/// applies them, and every surface (metadata pipe, MPRIS, MQTT, the page) hears each one.
public enum NowPlayingEvent: Hashable, Sendable {
    /// A session began (RAOP ANNOUNCE, AirPlay 2 SETUP, a video `/play`); `format` is the PCM
    /// format its audio plays in.
    case began(NowPlayingSender, format: String?)
    /// The session's stream starts (RAOP RECORD).
    case streamStarted
    /// The sender flushed: the audio stops until it resumes.
    case flushed
    /// Audio flows again after a flush.
    case resumed
    /// Playing (1), paused (0) or another rate (video trick play).
    case rate(Double)
    /// `progress:` in RTP frames: start, current and end of the item.
    case progress(start: UInt32, current: UInt32, end: UInt32, sampleRate: Double)
    /// A video position and duration in seconds.
    case position(seconds: Double, duration: Double?)
    /// The sender's volume in AirPlay dB (-30...0, -144 muted).
    case volume(decibels: Double)
    /// The item's metadata as DMAP fields (video sessions post `minm` and the like too), with
    /// the RTP time of the audio it belongs to (`RTP-Info`), when the sender said.
    case metadata([DMAPField], rtpTime: UInt32? = nil)
    /// The cover: image bytes and MIME type, or nil to clear it; the RTP time as for metadata.
    case artwork(type: String?, bytes: [UInt8], rtpTime: UInt32? = nil)
    /// The session ended.
    case ended
    /// A sender asks to pair: the PIN to show, or nil when pairing ended.
    case pairingPIN(String?)
    /// The AirPlay 2 sender said which remote commands it takes now (`updateMRSupportedCommands`),
    /// as MediaRemote numbers: 0 play, 1 pause, 2 play/pause, 3 stop, 4 next, 5 previous.
    case senderCommands(Set<Int>)
    /// A `POST /command` body the sender posted on its session, as sent (a binary plist): the
    /// metadata pipe carries it as shairport-sync 5.3 does (`ssnc`/`copl`), beside what the
    /// session made of it.
    case commandPlist([UInt8])
}
