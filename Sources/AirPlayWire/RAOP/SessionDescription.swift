import FoundationEssentials

/// The audio stream a RAOP sender announces in its SDP (`ANNOUNCE`, `application/sdp`).
public struct RAOPStreamDescription: Hashable, Sendable {
    /// The codecs RAOP senders use.
    public enum Codec: Hashable, Sendable {
        /// `L16/44100/2`: 16-bit big-endian PCM (`cn=0`). Any `fmtp` line is ignored.
        case pcm
        /// `AppleLossless` with its `fmtp` parameters (`cn=1`).
        case alac(fmtp: [Int])
        /// `mpeg4-generic` AAC-LC (`cn=2`).
        case aacLC
        /// AAC-ELD (`cn=3`).
        case aacELD
    }

    /// The codec.
    public var codec: Codec
    /// Samples per second.
    public var sampleRate: Int
    /// Channels.
    public var channels: Int
    /// Frames in one RTP packet (352 for iTunes-style senders).
    public var framesPerPacket: Int
    /// Bits per decoded sample: 16, or 24 for AirPlay 2's hi-res PCM and ALAC (RAOP's L16 and
    /// AAC decode to 16; ALAC says its depth in the fmtp).
    public var bitsPerSample = 16
    /// The RSA-wrapped AES key (`a=rsaaeskey`), when the stream is encrypted.
    public var rsaAESKey: [UInt8]?
    /// The AES IV (`a=aesiv`).
    public var aesIV: [UInt8]?
    /// AAC's AudioSpecificConfig (`config=` in the fmtp of `mpeg4-generic`).
    public var aacConfig: [UInt8]?

    /// Why an SDP body was refused.
    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// A stream described some other way than SDP (AirPlay 2's SETUP plist), in the clear.
    public init(codec: Codec, sampleRate: Int, channels: Int, framesPerPacket: Int, bitsPerSample: Int = 16, aacConfig: [UInt8]? = nil) {
        self.codec = codec
        self.bitsPerSample = bitsPerSample
        self.sampleRate = sampleRate
        self.channels = channels
        self.framesPerPacket = framesPerPacket
        self.aacConfig = aacConfig
    }

    /// Parses an SDP body (`RAOPAnnouncement`) and what its codec lines mean.
    public init(sdp text: String) throws(Problem) {
        let announcement = try RAOPAnnouncement(parsing: text)
        let rtpmap = announcement.rtpmap
        let fmtp = (announcement.fmtp ?? "").split(separator: " ").map(String.init)
        let parts = rtpmap.split(separator: "/")
        let encoding = parts.first.map(String.init) ?? ""
        switch encoding.lowercased() {
        case "l16":
            codec = .pcm
            sampleRate = parts.count > 1 ? Int(parts[1]) ?? 44100 : 44100
            channels = parts.count > 2 ? Int(parts[2]) ?? 2 : 2
            framesPerPacket = 352
        case "applelossless":
            let numbers = fmtp.compactMap { Int($0) }
            guard numbers.count >= 11 else { throw Problem(description: "AppleLossless needs its 11 fmtp parameters") }
            codec = .alac(fmtp: numbers)
            framesPerPacket = numbers[0]
            channels = numbers[6]
            sampleRate = numbers[10]
            bitsPerSample = numbers[2] > 16 ? 24 : 16
        case "mpeg4-generic":
            codec = rtpmap.lowercased().contains("eld") || fmtp.joined().lowercased().contains("mode=aac-eld") ? .aacELD : .aacLC
            sampleRate = parts.count > 1 ? Int(parts[1]) ?? 44100 : 44100
            channels = parts.count > 2 ? Int(parts[2]) ?? 2 : 2
            framesPerPacket = codec == .aacELD ? 480 : 1024
            // `constantDuration` is the frame length: 480 or 512 for ELD, 1024 for LC.
            if let duration = fmtp.joined(separator: " ").split(whereSeparator: { $0 == ";" || $0 == " " })
                .first(where: { $0.lowercased().hasPrefix("constantduration=") }).flatMap({ Int($0.dropFirst(17)) }) {
                framesPerPacket = duration
            }
        default:
            throw Problem(description: "unsupported audio encoding \(encoding)")
        }
        guard (8000...192_000).contains(sampleRate), (1...8).contains(channels), (1...8192).contains(framesPerPacket) else {
            throw Problem(description: "implausible stream parameters")
        }
        rsaAESKey = announcement.rsaAESKey
        aesIV = announcement.aesIV
        aacConfig = fmtp.joined(separator: " ").split(whereSeparator: { $0 == ";" || $0 == " " })
            .first { $0.lowercased().hasPrefix("config=") }
            .flatMap { Self.hex(String($0.dropFirst(7))) }
        if aacConfig == nil, codec == .aacELD {
            // iOS senders announce ELD without `config=`: the stream parameters say it all.
            guard framesPerPacket == 480 || framesPerPacket == 512,
                  let config = Self.eldConfig(sampleRate: sampleRate, channels: channels, frameLength: framesPerPacket) else {
                throw Problem(description: "AAC-ELD needs constantDuration 480 or 512 at a standard sample rate")
            }
            aacConfig = config
        }
    }

    /// The AudioSpecificConfig of plain AAC-ELD (ISO 14496-3 §1.6.2.1 and the ELDSpecificConfig):
    /// object type 39 (escaped: 31, then 39 − 32 in 6 bits), the sampling frequency index, the
    /// channel configuration, frameLengthFlag (1 for 480 frames), three resilience flags, no
    /// low-delay SBR, the end of extensions, and epConfig 0. 44100 Hz stereo 480 is `F8E85000`.
    public static func eldConfig(sampleRate: Int, channels: Int, frameLength: Int) -> [UInt8]? {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard let index = rates.firstIndex(of: sampleRate), (1...7).contains(channels) else { return nil }
        var bits: [(value: Int, width: Int)] = [(31, 5), (39 - 32, 6), (index, 4), (channels, 4),
                                                 (frameLength == 480 ? 1 : 0, 1), (0, 3), (0, 1), (0, 4), (0, 2)]
        var bytes: [UInt8] = [], accumulator = 0, count = 0
        bits.append((0, (8 - bits.map(\.width).reduce(0, +) % 8) % 8))
        for (value, width) in bits {
            accumulator = accumulator << width | value
            count += width
            while count >= 8 {
                count -= 8
                bytes.append(UInt8((accumulator >> count) & 0xFF))
            }
        }
        return bytes
    }

    /// Hex of at most 32 bytes (an AES IV or key), never empty.
    private static func hex(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        return TextFormatting.bytes(hex: text)
    }

    /// The `rtpmap` and `fmtp` values (after the payload type) that announce this stream, as
    /// iTunes writes them: what `init(sdp:)` reads back to this description.
    public var codecLines: (rtpmap: String, fmtp: String?) {
        switch codec {
        case .pcm:
            return ("L16/\(sampleRate)/\(channels)", nil)
        case .alac(let fmtp):
            return ("AppleLossless", fmtp.map(String.init).joined(separator: " "))
        case .aacLC, .aacELD:
            let eld = codec == .aacELD
            var parameters = "mode=\(eld ? "AAC-eld" : "AAC-hbr"); constantDuration=\(framesPerPacket)"
            if let aacConfig { parameters += "; config=\(TextFormatting.hex(aacConfig).uppercased())" }
            return ("mpeg4-generic/\(sampleRate)/\(channels)", parameters)
        }
    }

    /// The announcement of this stream from `origin` (the sender's address) to `connection`
    /// (the receiver's), with the wrapped key and IV when given.
    public func announcement(origin: String, connection: String, rsaAESKey: [UInt8]? = nil, aesIV: [UInt8]? = nil) -> RAOPAnnouncement {
        let lines = codecLines
        return RAOPAnnouncement(origin: origin, connection: connection, rtpmap: lines.rtpmap, fmtp: lines.fmtp, rsaAESKey: rsaAESKey, aesIV: aesIV)
    }

    /// True when the sender encrypts the audio.
    public var isEncrypted: Bool { rsaAESKey != nil }
}

/// An RTSP `Transport` header: `RTP/AVP/UDP;unicast;mode=record;control_port=6001;timing_port=6002`.
public struct RTSPTransport: Hashable, Sendable {
    /// The protocol part (`RTP/AVP/UDP`).
    public var spec: String
    /// Parameters in order; flags have an empty value.
    public var parameters: [(name: String, value: String)]

    /// A header from its parts.
    public init(spec: String, parameters: [(String, String)]) {
        self.spec = spec
        self.parameters = parameters.map { (name: $0.0, value: $0.1) }
    }

    /// What a RAOP sender asks for in `SETUP`, as iTunes does:
    /// `RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=…;timing_port=…`.
    public static func record(controlPort: Int, timingPort: Int) -> RTSPTransport {
        RTSPTransport(spec: "RTP/AVP/UDP", parameters: [("unicast", ""), ("interleaved", "0-1"), ("mode", "record"),
                                                       ("control_port", "\(controlPort)"), ("timing_port", "\(timingPort)")])
    }

    /// Parses a header value.
    public init(parsing text: String) {
        let fields = text.split(separator: ";").map { $0.trimmingWhitespace() }
        spec = fields.first ?? ""
        parameters = fields.dropFirst().map { field in
            guard let equals = field.firstIndex(of: "=") else { return (name: field, value: "") }
            return (name: String(field[..<equals]), value: String(field[field.index(after: equals)...]))
        }
    }

    /// A parameter's value.
    public subscript(name: String) -> String? { parameters.first { $0.name == name }?.value }

    /// A port parameter, when present and valid.
    public func port(_ name: String) -> UInt16? { self[name].flatMap { UInt16($0) }.flatMap { $0 == 0 ? nil : $0 } }

    /// The header value.
    public var headerValue: String {
        ([spec] + parameters.map { $0.value.isEmpty ? $0.name : "\($0.name)=\($0.value)" }).joined(separator: ";")
    }

    /// Compares spec and parameters in order.
    public static func == (lhs: RTSPTransport, rhs: RTSPTransport) -> Bool { lhs.headerValue == rhs.headerValue }
    /// Hashes the header value.
    public func hash(into hasher: inout Hasher) { hasher.combine(headerValue) }
}
