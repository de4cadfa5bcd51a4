import FoundationEssentials

/// An `ANNOUNCE` body (SDP) as iTunes-style senders write it, line for line, both ways: one
/// audio stream on payload type 96, its `rtpmap` and `fmtp`, and the RSA-wrapped AES key and IV
/// of an encrypted stream. `encoded` writes what `init(parsing:)` reads;
/// `RAOPStreamDescription` says what the codec lines mean.
///
/// ```
/// v=0
/// o=iTunes 3413821438 0 IN IP4 10.0.0.1
/// s=iTunes
/// c=IN IP4 10.0.0.2
/// t=0 0
/// m=audio 0 RTP/AVP 96
/// a=rtpmap:96 AppleLossless
/// a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100
/// a=rsaaeskey:<base64, no padding>
/// a=aesiv:<base64, no padding>
/// ```
public struct RAOPAnnouncement: Hashable, Sendable {
    /// The session id of the `o=` line.
    public var sessionID: UInt32
    /// The sender's address (`o=`); IPv6 is written `IP6`.
    public var origin: String
    /// The receiver's address (`c=`).
    public var connection: String
    /// The `a=rtpmap` value after the payload type (`L16/44100/2`, `AppleLossless`).
    public var rtpmap: String
    /// The `a=fmtp` value after the payload type, when there is one.
    public var fmtp: String?
    /// The RSA-wrapped AES key (`a=rsaaeskey`), when the stream is encrypted.
    public var rsaAESKey: [UInt8]?
    /// The AES IV (`a=aesiv`).
    public var aesIV: [UInt8]?

    /// Why an SDP body was refused.
    public typealias Problem = RAOPStreamDescription.Problem

    /// An announcement from its parts.
    public init(sessionID: UInt32 = .random(in: 1...UInt32.max), origin: String, connection: String, rtpmap: String, fmtp: String? = nil,
                rsaAESKey: [UInt8]? = nil, aesIV: [UInt8]? = nil) {
        self.sessionID = sessionID
        self.origin = origin
        self.connection = connection
        self.rtpmap = rtpmap
        self.fmtp = fmtp
        self.rsaAESKey = rsaAESKey
        self.aesIV = aesIV
    }

    /// The body, CRLF line ends; base64 without padding, as iTunes writes it.
    public var encoded: String {
        func family(_ address: String) -> String { address.contains(":") ? "IP6" : "IP4" }
        var text = "v=0\r\no=iTunes \(sessionID) 0 IN \(family(origin)) \(origin)\r\ns=iTunes\r\n"
            + "c=IN \(family(connection)) \(connection)\r\nt=0 0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 \(rtpmap)\r\n"
        if let fmtp { text += "a=fmtp:96 \(fmtp)\r\n" }
        if let rsaAESKey { text += "a=rsaaeskey:\(Data(rsaAESKey).base64EncodedString().filter { $0 != "=" })\r\n" }
        if let aesIV { text += "a=aesiv:\(Data(aesIV).base64EncodedString().filter { $0 != "=" })\r\n" }
        return text
    }

    /// Reads a body, liberally: any line ends, lines in any order, missing `o=`, `s=`, `c=` and
    /// `t=` lines, padded or unpadded base64. An audio stream (`m=audio` and `a=rtpmap`) is
    /// required; a key that is not base64 and an IV that is not 16 bytes are refused.
    public init(parsing text: String) throws(Problem) {
        var rtpmap: String?
        var sawAudio = false
        sessionID = 0
        origin = ""
        connection = ""
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = rawLine.trimmingWhitespace()
            if line.hasPrefix("m=audio") { sawAudio = true }
            // Fields split at any white space a line's ends would lose, so each reads back whole.
            let fields = line.dropFirst(2).split { $0 == " " || $0 == "\t" || $0.isNewline }
            if line.hasPrefix("o=") {
                sessionID = fields.count > 1 ? UInt32(fields[1]) ?? 0 : 0
                origin = fields.count > 5 ? String(fields[5]) : ""
            }
            if line.hasPrefix("c=") {
                connection = fields.count > 2 ? String(fields[2]) : ""
            }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let name = attribute.prefix { $0 != ":" }
            let value = attribute.dropFirst(name.count + 1)
            switch name {
            case "rtpmap":
                // "96 L16/44100/2": drop the payload type.
                rtpmap = value.split(separator: " ", maxSplits: 1).last.map(String.init)
            case "fmtp":
                fmtp = value.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            case "rsaaeskey":
                rsaAESKey = Self.base64(String(value))
                guard rsaAESKey != nil else { throw Problem(description: "rsaaeskey is not base64") }
            case "aesiv":
                aesIV = Self.base64(String(value))
                guard aesIV?.count == 16 else { throw Problem(description: "aesiv must be 16 bytes of base64") }
            default:
                continue
            }
        }
        guard sawAudio, let rtpmap else { throw Problem(description: "the SDP has no audio stream (m=audio and a=rtpmap)") }
        self.rtpmap = rtpmap
    }

    private static func base64(_ text: String) -> [UInt8]? {
        var padded = text.trimmingWhitespace()
        while padded.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map { Array($0) }
    }
}
