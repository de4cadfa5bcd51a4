import AirPlayWire
import Testing

/// The ANNOUNCE body both ways: what our sender and conformance runner write is what the
/// receiver reads (`RAOPAnnouncement`, `RAOPStreamDescription.announcement`).
@Suite struct RAOPAnnouncementTests {
    /// An encrypted ALAC stream as iTunes announces it, line for line: CRLF, the `o=` and `c=`
    /// addresses with their family, payload type 96, base64 without padding.
    @Test func anEncryptedALACStreamIsWrittenAsITunesWritesIt() throws {
        let stream = RAOPStreamDescription(codec: .alac(fmtp: [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]),
                                           sampleRate: 44100, channels: 2, framesPerPacket: 352)
        var announcement = stream.announcement(origin: "10.0.0.1", connection: "fd97::2", rsaAESKey: [0xAB, 0xCD], aesIV: Array(0..<16))
        announcement.sessionID = 3_413_821_438
        #expect(announcement.encoded == """
            v=0\r
            o=iTunes 3413821438 0 IN IP4 10.0.0.1\r
            s=iTunes\r
            c=IN IP6 fd97::2\r
            t=0 0\r
            m=audio 0 RTP/AVP 96\r
            a=rtpmap:96 AppleLossless\r
            a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r
            a=rsaaeskey:q80\r
            a=aesiv:AAECAwQFBgcICQoLDA0ODw\r

            """)
        #expect(try RAOPAnnouncement(parsing: announcement.encoded) == announcement)
    }

    /// Every codec a receiver reads, written and read back to the same description.
    @Test(arguments: [
        RAOPStreamDescription(codec: .pcm, sampleRate: 44100, channels: 2, framesPerPacket: 352),
        RAOPStreamDescription(codec: .alac(fmtp: [352, 0, 24, 40, 10, 14, 2, 255, 0, 0, 48000]), sampleRate: 48000, channels: 2,
                              framesPerPacket: 352, bitsPerSample: 24),
        RAOPStreamDescription(codec: .aacLC, sampleRate: 44100, channels: 2, framesPerPacket: 1024, aacConfig: [0x12, 0x10]),
        RAOPStreamDescription(codec: .aacELD, sampleRate: 44100, channels: 2, framesPerPacket: 480, aacConfig: [0xF8, 0xE8, 0x50, 0x00]),
    ])
    func everyCodecRoundTrips(stream: RAOPStreamDescription) throws {
        let text = stream.announcement(origin: "10.0.0.1", connection: "10.0.0.2").encoded
        #expect(try RAOPStreamDescription(sdp: text) == stream, "\(text)")
    }

    /// Senders write SDP loosely: LF line ends, padded base64, no `o=` or `c=` lines. All of it
    /// reads; what is missing is empty.
    @Test func aLooseBodyReads() throws {
        let announcement = try RAOPAnnouncement(parsing: "m=audio 0 RTP/AVP 96\na=rtpmap:96 L16/44100/2\na=aesiv:AAECAwQFBgcICQoLDA0ODw==\n")
        #expect(announcement.rtpmap == "L16/44100/2" && announcement.fmtp == nil && announcement.aesIV == Array(0..<16))
        #expect(announcement.origin.isEmpty && announcement.connection.isEmpty && announcement.sessionID == 0)
    }

    /// Each body of the SDP vectors that a receiver accepts, read and written again, reads the same.
    @Test(arguments: SDPVectorTests.vectors.indices)
    func vectorsRoundTrip(index: Int) throws {
        let vector = SDPVectorTests.vectors[index]
        guard vector.expect != nil else { return }
        let announcement = try RAOPAnnouncement(parsing: vector.sdp)
        #expect(try RAOPAnnouncement(parsing: announcement.encoded) == announcement, "\(vector.what)")
        #expect(try RAOPStreamDescription(sdp: announcement.encoded) == RAOPStreamDescription(sdp: vector.sdp), "\(vector.what)")
    }
}

/// The `Transport` of a RAOP `SETUP`, both ways.
@Suite struct RTSPTransportTests {
    /// What our sender asks for is iTunes' request, and reads back to its ports.
    @Test func aSendersRequestIsITunesAndReadsBack() {
        let transport = RTSPTransport.record(controlPort: 6001, timingPort: 6002)
        #expect(transport.headerValue == "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001;timing_port=6002")
        let read = RTSPTransport(parsing: transport.headerValue)
        #expect(read == transport && read.port("control_port") == 6001 && read.port("timing_port") == 6002 && read["unicast"] == "")
    }
}
