import AirPlayTesting
import AirPlayWire
import Foundation
import GStreamerMedia
import Testing

/// ALAC as an `AppleLossless` RAOP stream carries it (Protocol/vectors/raop-alac-frames.json, made by
/// tools/lib/make_raop_vectors.py): the iTunes-style `fmtp`, the magic cookie the decoder is built
/// with, and packets of 352 frames that must decode to known PCM, bit for bit.
@Suite struct ALACVectorTests {
    struct File: Decodable {
        struct Packet: Decodable {
            var what: String
            var frames: Int
            var uncompressed: Bool
            var alac: String
            var pcm: String
        }
        var fmtp: String
        var fmtpValues: [Int]
        var magicCookie: String
        var sampleRate: Int
        var channels: Int
        var framesPerPacket: Int
        var packets: [Packet]
    }

    static let file: File? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/raop-alac-frames.json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(File.self, from: data)
    }()

    /// Interleaved S16LE bytes (the vectors' pcm, base64) as samples.
    private static func samples(base64: String) -> [Int32]? {
        Data(base64Encoded: base64).map { ProtocolVectors.samples(littleEndian: Array($0)) }
    }

    /// Hex of bytes, lower case.
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }

    @Test func vectorsArePresent() throws {
        let file = try #require(Self.file)
        #expect(file.packets.count >= 5)
        #expect(file.packets.contains { $0.uncompressed }, "one packet stored verbatim (escape bit)")
        #expect(file.packets.contains { $0.frames < file.framesPerPacket }, "one short final packet")
    }

    /// The `a=fmtp` line of an iTunes ANNOUNCE gives the 11 ALAC parameters, in the order of the
    /// ALACSpecificConfig: 352 frames, version 0, 16 bits, pb 40, mb 10, kb 14, 2 channels, max run
    /// 255, max frame bytes and bit rate 0 (unknown), 44100 Hz.
    @Test func fmtpLineGivesTheDecoderParameters() throws {
        let file = try #require(Self.file)
        let sdp = "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 AppleLossless\r\na=fmtp:\(file.fmtp)\r\n"
        let stream = try RAOPStreamDescription(sdp: sdp)
        guard case .alac(let fmtp) = stream.codec else {
            Issue.record("AppleLossless is ALAC")
            return
        }
        #expect(fmtp == file.fmtpValues)
        #expect(stream.framesPerPacket == file.framesPerPacket)
        #expect(stream.channels == file.channels)
        #expect(stream.sampleRate == file.sampleRate)
    }

    /// The decoder's codec data is an `alac` atom: size 36, `alac`, version 0, then the 24-byte
    /// big-endian ALACSpecificConfig built from the fmtp numbers.
    @Test func magicCookieFromFmtp() throws {
        let file = try #require(Self.file)
        #expect(Self.hex(GStreamerAudioDecoder.magicCookie(file.fmtpValues)) == file.magicCookie)
    }

    /// Every packet, pushed in stream order through one decoder, gives back exactly the PCM that was
    /// encoded: silence, near-silence, a sine, full-scale extremes, an uncompressed (escape) frame and
    /// a short final packet that carries its own frame count.
    @Test(.enabled(if: GStreamerRuntime.hasElement("avdec_alac"), "needs avdec_alac (gstreamer1.0-libav)"))
    func decodesPacketsToKnownPCM() throws {
        let file = try #require(Self.file)
        let decoder = try GStreamerAudioDecoder(alacFmtp: file.fmtpValues)
        for packet in file.packets {
            let alac = try #require(Data(base64Encoded: packet.alac), "\(packet.what)")
            let expected = try #require(Self.samples(base64: packet.pcm), "\(packet.what)")
            #expect(expected.count == packet.frames * file.channels)
            let decoded = decoder.decodeOrEmpty(Array(alac))
            #expect(decoded.count == expected.count, "\(packet.what)")
            #expect(decoded == expected, "\(packet.what)")
        }
    }

    /// ALAC packets do not depend on one another: in reverse order they decode the same, so a lost
    /// packet costs only its own frames.
    @Test(.enabled(if: GStreamerRuntime.hasElement("avdec_alac"), "needs avdec_alac (gstreamer1.0-libav)"))
    func packetsAreIndependent() throws {
        let file = try #require(Self.file)
        let decoder = try GStreamerAudioDecoder(alacFmtp: file.fmtpValues)
        for packet in file.packets.reversed() {
            let alac = try #require(Data(base64Encoded: packet.alac), "\(packet.what)")
            #expect(decoder.decodeOrEmpty(Array(alac)) == Self.samples(base64: packet.pcm), "\(packet.what)")
        }
    }
}
