import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

// RAOP wire formats checked against the vectors in Protocol/vectors/ (made by
// tools/lib/make_raop_vectors.py): DMAP metadata, ANNOUNCE SDP bodies, and the UDP datagrams.

/// A vector file from Protocol/vectors/ through the one shared loader, or nil when it is missing.
private func loadRAOPVectors<T: Decodable>(_ name: String, as type: T.Type) -> T? {
    try? ProtocolVectors.load(T.self, from: name)
}

/// Bytes from hex text (the vectors' form).
private func wireBytes(hex: String) -> [UInt8]? { VectorDocument.bytes(hex: hex) }

/// Lower-case hex of bytes.
private func wireHex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }.joined()
}

/// DMAP bodies of `SET_PARAMETER` (Protocol/vectors/raop-dmap.json): tag, big-endian length in bytes, value;
/// `mlit` wraps the fields of one item.
@Suite struct DMAPVectorTests {
    struct File: Decodable {
        struct Expectation: Decodable {
            var title: String?
            var artist: String?
            var album: String?
            var genre: String?
            var durationMilliseconds: Int?
        }
        struct Vector: Decodable {
            var what: String
            var bytes: String
            var topLevelTags: [String]?
            var expect: Expectation?
            var error: String?
        }
        var vectors: [Vector]
    }

    static let vectors: [File.Vector] = loadRAOPVectors("raop-dmap.json", as: File.self)?.vectors ?? []

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 10)
    }

    /// Each body decodes to the text a now-playing display shows (UTF-8, lengths counted in bytes,
    /// unknown tags skipped, a missing field is nil), or, when a length runs past the end, is refused
    /// as a whole rather than half-read.
    @Test(arguments: vectors.indices)
    func parsesItem(index: Int) throws {
        let vector = Self.vectors[index]
        let bytes = try #require(wireBytes(hex: vector.bytes), "\(vector.what)")
        if let expected = vector.expect {
            let item = try DMAP.parseItem(bytes)
            #expect(item.title == expected.title, "\(vector.what)")
            #expect(item.artist == expected.artist, "\(vector.what)")
            #expect(item.album == expected.album, "\(vector.what)")
            #expect(item.genre == expected.genre, "\(vector.what)")
            #expect(item.durationMilliseconds == expected.durationMilliseconds, "\(vector.what)")
            let tags = try DMAP.entries(bytes[...]).map { $0.tag }
            #expect(tags == (vector.topLevelTags ?? []), "\(vector.what)")
        } else {
            let reason = try #require(vector.error, "a refused vector names its error: \(vector.what)")
            do {
                let item = try DMAP.parseItem(bytes)
                Issue.record("\(vector.what): read as \(item), but must be refused (\(reason))")
            } catch {
                #expect("\(error)".contains(reason), "\(vector.what): \(error)")
            }
        }
    }

    /// The encoder writes the same layout the parser reads: the pyatv body of raop.md, field by field.
    @Test func fieldEncoderMatchesThePyatvBody() throws {
        let pyatv = try #require(Self.vectors.first, "the first vector is pyatv's body")
        let fields = DMAP.field("minm", Array("Sweep Song".utf8)) + DMAP.field("asal", Array("Test Album".utf8))
            + DMAP.field("asar", Array("Test Artist".utf8))
        #expect(wireHex(DMAP.field("mlit", fields)) == pyatv.bytes)
    }
}

/// `ANNOUNCE` bodies (Protocol/vectors/raop-sdp.json) as iTunes, pyatv and AAC senders write them, and
/// the stream each one describes.
@Suite struct SDPVectorTests {
    struct File: Decodable {
        struct Expectation: Decodable {
            var codec: String
            var sampleRate: Int
            var channels: Int
            var framesPerPacket: Int
            var encrypted: Bool
            var rsaAESKey: String?
            var aesIV: String?
            var aacConfig: String?
            var fmtp: [Int]?
        }
        struct Vector: Decodable {
            var what: String
            var sdp: String
            var expect: Expectation?
            var error: String?
        }
        var vectors: [Vector]
    }

    static let vectors: [File.Vector] = loadRAOPVectors("raop-sdp.json", as: File.self)?.vectors ?? []

    private static func name(_ codec: RAOPStreamDescription.Codec) -> String {
        switch codec {
        case .pcm: "pcm"
        case .alac: "alac"
        case .aacLC: "aacLC"
        case .aacELD: "aacELD"
        }
    }

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 15)
    }

    /// The codec (rtpmap encoding, and for AAC the fmtp's `mode`), rate, channels and packet size a
    /// receiver must set up; `a=rsaaeskey`/`a=aesiv` mark an encrypted stream. Bodies without an audio
    /// stream, with an unknown encoding, short ALAC parameters, implausible numbers or bad base64 are
    /// refused.
    @Test(arguments: vectors.indices)
    func describesStream(index: Int) throws {
        let vector = Self.vectors[index]
        if let expected = vector.expect {
            let stream = try RAOPStreamDescription(sdp: vector.sdp)
            #expect(Self.name(stream.codec) == expected.codec, "\(vector.what)")
            #expect(stream.sampleRate == expected.sampleRate, "\(vector.what)")
            #expect(stream.channels == expected.channels, "\(vector.what)")
            #expect(stream.framesPerPacket == expected.framesPerPacket, "\(vector.what)")
            #expect(stream.isEncrypted == expected.encrypted, "\(vector.what)")
            #expect(stream.rsaAESKey.map(wireHex) == expected.rsaAESKey, "\(vector.what)")
            #expect(stream.aesIV.map(wireHex) == expected.aesIV, "\(vector.what)")
            #expect(stream.aacConfig.map(wireHex) == expected.aacConfig, "\(vector.what)")
            if case .alac(let fmtp) = stream.codec {
                #expect(fmtp == expected.fmtp, "\(vector.what)")
            }
        } else {
            let reason = try #require(vector.error, "a refused vector names its error: \(vector.what)")
            do {
                let stream = try RAOPStreamDescription(sdp: vector.sdp)
                Issue.record("\(vector.what): read as \(stream), but must be refused (\(reason))")
            } catch {
                #expect("\(error)".contains(reason), "\(vector.what): \(error)")
            }
        }
    }
}

/// RAOP's UDP datagrams (Protocol/vectors/raop-packets.json): audio, sync, timing, retransmissions and
/// resend requests, byte for byte, and the short or foreign ones a receiver must ignore.
@Suite struct RAOPPacketVectorTests {
    struct File: Decodable {
        struct Expectation: Decodable {
            var kind: String
            var sequence: UInt16?
            var timestamp: UInt32?
            var marker: Bool?
            var payload: String?
            var isFirst: Bool?
            var rtpTimeNowMinusLatency: UInt32?
            var ntpTime: String?
            var rtpTimeNext: UInt32?
            var flags: UInt16?
            var networkTime: String?
            var clockIdentity: String?
            var heardRTPTime: UInt32?
            var origin: String?
            var receive: String?
            var transmit: String?
        }
        struct Resend: Decodable {
            var firstSequence: UInt16
            var count: UInt16
        }
        struct Vector: Decodable {
            var what: String
            var port: String
            var bytes: String
            var expect: Expectation?
            var encoderWritesTheseBytes: Bool?
            var resendRequest: Resend?
        }
        var vectors: [Vector]
    }

    static let vectors: [File.Vector] = loadRAOPVectors("raop-packets.json", as: File.self)?.vectors ?? []

    private static func kind(_ packet: RAOPPacket) -> String {
        switch packet {
        case .audio: "audio"
        case .sync: "sync"
        case .timingRequest: "timingRequest"
        case .timingReply: "timingReply"
        case .retransmitted: "retransmitted"
        case .resendRequest: "resendRequest"
        case .ptpAnchor: "ptpAnchor"
        }
    }

    /// An NTP 32.32 time from the vectors' 16 hex digits.
    private static func ntp(_ hex: String?) -> UInt64? { hex.flatMap { UInt64($0, radix: 16) } }

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 15)
    }

    /// Version bits `10`, type in the low 7 bits of byte 1, marker in its top bit; then the fields of
    /// each type at fixed big-endian offsets. Anything short, of another version or of an unknown
    /// type parses to nil. A resend request parses as one (only senders act on it).
    @Test(arguments: vectors.indices)
    func parsesDatagram(index: Int) throws {
        let vector = Self.vectors[index]
        let bytes = try #require(wireBytes(hex: vector.bytes), "\(vector.what)")
        let parsed = RAOPPacket.parse(bytes)
        guard let expected = vector.expect else {
            if let resend = vector.resendRequest {
                #expect(parsed == .resendRequest(RAOPResendRequest(first: resend.firstSequence, count: resend.count)), "\(vector.what)")
            } else {
                #expect(parsed == nil, "\(vector.what)")
            }
            return
        }
        let packet = try #require(parsed, "\(vector.what)")
        #expect(Self.kind(packet) == expected.kind, "\(vector.what)")
        switch packet {
        case .audio(let audio), .retransmitted(let audio):
            #expect(audio.sequence == expected.sequence, "\(vector.what)")
            #expect(audio.timestamp == expected.timestamp, "\(vector.what)")
            #expect(audio.marker == expected.marker, "\(vector.what)")
            #expect(wireHex(audio.payload) == expected.payload, "\(vector.what)")
            if vector.encoderWritesTheseBytes == true, case .audio = packet {
                let rebuilt = RAOPAudioPacket(sequence: audio.sequence, timestamp: audio.timestamp, marker: audio.marker,
                                              payload: audio.payload)
                #expect(rebuilt.bytes == bytes, "\(vector.what)")
            }
        case .sync(let sync):
            #expect(sync.isFirst == expected.isFirst, "\(vector.what)")
            #expect(sync.rtpTimeNowMinusLatency == expected.rtpTimeNowMinusLatency, "\(vector.what)")
            #expect(sync.ntpTime == Self.ntp(expected.ntpTime), "\(vector.what)")
            #expect(sync.rtpTimeNext == expected.rtpTimeNext, "\(vector.what)")
            #expect(sync.flags == (expected.flags ?? RAOPSync.appleFlags), "\(vector.what)")
            if vector.encoderWritesTheseBytes == true { #expect(sync.bytes == bytes, "\(vector.what)") }
        case .ptpAnchor(let anchor):
            #expect(anchor.rtpTime == expected.rtpTimeNowMinusLatency, "\(vector.what)")
            #expect(anchor.networkTime == Self.ntp(expected.networkTime), "\(vector.what)")
            #expect(anchor.nextRTPTime == expected.rtpTimeNext, "\(vector.what)")
            #expect(anchor.clockIdentity == Self.ntp(expected.clockIdentity), "\(vector.what)")
            #expect(anchor.heardRTPTime == expected.heardRTPTime, "\(vector.what)")
            if vector.encoderWritesTheseBytes == true { #expect(anchor.bytes == bytes, "\(vector.what)") }
        case .timingRequest(let timing), .timingReply(let timing):
            #expect(timing.origin == Self.ntp(expected.origin), "\(vector.what)")
            #expect(timing.receive == Self.ntp(expected.receive), "\(vector.what)")
            #expect(timing.transmit == Self.ntp(expected.transmit), "\(vector.what)")
            if vector.encoderWritesTheseBytes == true {
                let isReply: Bool
                if case .timingReply = packet { isReply = true } else { isReply = false }
                #expect(timing.bytes(reply: isReply) == bytes, "\(vector.what)")
            }
        case .resendRequest:
            Issue.record("resend requests have no `expect` in the vectors")
        }
    }

    /// A resend request (0x55, marker set) is 8 bytes: `80 D5 00 01`, the first missing sequence number,
    /// then how many packets are missing, all big-endian.
    @Test func resendRequestLayout() throws {
        let vector = try #require(Self.vectors.first { $0.resendRequest != nil })
        let resend = try #require(vector.resendRequest)
        let bytes = try #require(wireBytes(hex: vector.bytes))
        let layout: [UInt8] = [0x80, 0xD5, 0x00, 0x01, UInt8(resend.firstSequence >> 8), UInt8(resend.firstSequence & 0xFF),
                               UInt8(resend.count >> 8), UInt8(resend.count & 0xFF)]
        #expect(bytes == layout)
        #expect(bytes[1] & 0x7F == 0x55)
        let request = RAOPResendRequest(first: resend.firstSequence, count: resend.count)
        #expect(request.bytes == bytes, "one encoder for receiver and tests")
        #expect(RAOPPacket.parse(bytes) == .resendRequest(request))
    }

    /// A retransmission (0x56) carries the original audio packet after a 4-byte header, unchanged.
    @Test func retransmissionWrapsTheOriginalPacket() throws {
        let vector = try #require(Self.vectors.first { $0.expect?.kind == "retransmitted" })
        let bytes = try #require(wireBytes(hex: vector.bytes))
        let innerPacket = try #require(RAOPPacket.parse(Array(bytes[4...])))
        let wholePacket = try #require(RAOPPacket.parse(bytes))
        guard case .audio(let inner) = innerPacket, case .retransmitted(let outer) = wholePacket else {
            Issue.record("the inner packet is audio, the whole a retransmission")
            return
        }
        #expect(inner == outer)
        #expect(UInt16(bytes[2]) << 8 | UInt16(bytes[3]) == inner.sequence, "the header repeats the sequence number")
        // As the sender writes one: the same bytes.
        #expect(RAOPPacket.retransmission(of: Array(bytes[4...]), sequence: inner.sequence) == bytes)
    }
}
