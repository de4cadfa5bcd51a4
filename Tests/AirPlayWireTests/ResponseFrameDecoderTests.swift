import AirPlayWire
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

/// Replies as a sender reads them on its control connection, and as the receiver reads its
/// sender's replies on an event channel: one `AirPlayResponseDecoder` behind NIO's framing.
@Suite struct ResponseFrameDecoderTests {
    /// NIO's verifier feeds the bytes in every split (one at a time, all at once, and between)
    /// and checks the same responses come out: an RTSP reply with a plist body, a 101 with no
    /// body, and an HTTP reply whose reason is not the standard phrase.
    @Test func responsesAreTheSameHoweverTheBytesArrive() throws {
        let input = "RTSP/1.0 200 OK\r\nCSeq: 3\r\nContent-Length: 5\r\n\r\nbplisHTTP/1.1 101 Switching Protocols\r\nUpgrade: PTTH/1.0\r\n\r\n"
            + "HTTP/1.1 470 Connection Authorization Required\r\nContent-Length: 0\r\n\r\n"
        let expected = [
            AirPlayResponse(version: .rtsp10, status: 200, headers: ["CSeq": "3", "Content-Length": "5"], body: ByteBuffer(string: "bplis")),
            AirPlayResponse(version: .http11, status: 101, headers: ["Upgrade": "PTTH/1.0"]),
            AirPlayResponse(version: .http11, status: 470, reason: "Connection Authorization Required", headers: ["Content-Length": "0"]),
        ]
        try ByteToMessageDecoderVerifier.verifyDecoder(stringInputOutputPairs: [(input, expected)],
                                                       decoderFactory: { AirPlayResponseFrameDecoder() })
    }

    /// An iPhone answers the event channel's requests (`POST /event`, an FCUP playlist request)
    /// with `EVENT/1.0 200 OK` as well as `HTTP/1.1 200 OK`: both are replies.
    @Test func anIPhonesEventReplyIsAReply() throws {
        let input = "EVENT/1.0 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
        let expected = [
            AirPlayResponse(version: .event10, status: 200, headers: ["Content-Length": "0"]),
            AirPlayResponse(version: .http11, status: 200),
        ]
        try ByteToMessageDecoderVerifier.verifyDecoder(stringInputOutputPairs: [(input, expected)],
                                                       decoderFactory: { AirPlayResponseFrameDecoder() })
    }

    /// What waits of a response not yet whole is counted, so a sender can tell that nothing
    /// came in clear when it turns encryption on after pair-verify.
    @Test func bytesOfAPartialResponseAreCounted() throws {
        let held = HeldResponseBytes()
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(AirPlayResponseFrameDecoder(held: held)))
        try channel.writeInbound(ByteBuffer(string: "RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\nRTSP/1.0 2"))
        #expect(try channel.readInbound(as: AirPlayResponse.self)?.status == 200)
        #expect(held.count == 10)
        try channel.writeInbound(ByteBuffer(string: "00 OK\r\nCSeq: 2\r\n\r\n"))
        #expect(try channel.readInbound(as: AirPlayResponse.self)?.headers["CSeq"] == "2")
        #expect(held.count == 0)
        _ = try channel.finish()
    }

    /// A reply whose head never ends is an error once it passes the head limit, not a buffer
    /// that grows with whatever the peer sends.
    @Test func aHeadThatNeverEndsIsAnError() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(AirPlayResponseFrameDecoder()))
        #expect(throws: AirPlayResponseDecoder.Failure.self) {
            try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 20_000)))
        }
        _ = try? channel.finish()
    }
}
