import AirPlayWire
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

/// The control port frames HTTP/1.1 and RTSP/1.0 requests on one TCP stream, and answers
/// every bad request with a status instead of dropping the connection.
@Suite struct RequestDecoderTests {
    private func decodeAll(_ text: String, limits: RequestLimits = .default) -> [InboundRequest] {
        var decoder = AirPlayRequestDecoder(limits: limits)
        var buffer = ByteBuffer(string: text)
        var messages: [InboundRequest] = []
        while let message = decoder.next(from: &buffer) { messages.append(message) }
        return messages
    }

    private func request(_ message: InboundRequest?) -> AirPlayRequest? {
        if case .request(let request) = message { return request }
        return nil
    }

    private func rejection(_ message: InboundRequest?) -> RequestRejection? {
        if case .rejected(let rejection) = message { return rejection }
        return nil
    }

    @Test func httpGetWithHeaders() throws {
        let messages = decodeAll("GET /server-info HTTP/1.1\r\nUser-Agent: AirPlay/320.20\r\nX-Apple-Session-ID: abc\r\n\r\n")
        let get = try #require(request(messages.first))
        #expect(get.method == "GET")
        #expect(get.path == "/server-info")
        #expect(get.version == .http11)
        #expect(get.headers["x-apple-session-id"] == "abc")
        #expect(get.body.readableBytes == 0)
    }

    @Test func rtspRequestWithBodyAndCSeq() throws {
        let sdp = "v=0\r\no=iTunes 1 0 IN IP4 127.0.0.1\r\n"
        let text = "ANNOUNCE rtsp://127.0.0.1/3413821438 RTSP/1.0\r\nCSeq: 3\r\nContent-Type: application/sdp\r\n"
            + "Content-Length: \(sdp.utf8.count)\r\n\r\n" + sdp
        let announce = try #require(request(decodeAll(text).first))
        #expect(announce.method == "ANNOUNCE")
        #expect(announce.version == .rtsp10)
        #expect(announce.cseq == "3")
        #expect(announce.path == "/3413821438")
        #expect(String(buffer: announce.body) == sdp)
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let messages = decodeAll("GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /c HTTP/1.1\r\n\r\n")
        #expect(messages.compactMap { request($0)?.path } == ["/a", "/b", "/c"])
    }

    @Test func queryItemsAreSplit() throws {
        let scrub = try #require(request(decodeAll("POST /scrub?position=12.5&x HTTP/1.1\r\n\r\n").first))
        #expect(scrub.queryItems.map(\.name) == ["position", "x"])
        #expect(scrub.queryItems.first?.value == "12.5")
    }

    @Test func partialInputWaitsForMoreBytes() {
        var decoder = AirPlayRequestDecoder()
        var buffer = ByteBuffer(string: "POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
        #expect(decoder.next(from: &buffer) == nil)
        buffer.writeString("cd")
        #expect(request(decoder.next(from: &buffer)).map { String(buffer: $0.body) } == "abcd")
    }

    @Test func leadingEmptyLinesAndBareLineFeedsAreTolerated() throws {
        let get = try #require(request(decodeAll("\r\n\r\nGET /info HTTP/1.1\nAccept: */*\r\n\r\n").first))
        #expect(get.path == "/info")
        #expect(get.headers["Accept"] == "*/*")
    }

    @Test func malformedRequestLineIs400AndTheNextRequestIsServed() {
        let messages = decodeAll("GARBAGE\r\nCSeq: 7\r\n\r\nGET /info HTTP/1.1\r\n\r\n")
        #expect(rejection(messages.first)?.status == 400)
        #expect(rejection(messages.first)?.cseq == "7")
        #expect(request(messages.last)?.path == "/info")
    }

    @Test func badHeaderLineIs400() {
        let messages = decodeAll("GET / HTTP/1.1\r\nno colon here\r\n\r\n")
        #expect(rejection(messages.first)?.status == 400)
    }

    @Test func unsupportedVersionIs505() {
        #expect(rejection(decodeAll("GET / HTTP/2.0\r\n\r\n").first)?.status == 505)
        // EVENT/1.0 is how an iPhone replies on the event channel, never a request's protocol.
        #expect(rejection(decodeAll("POST /event EVENT/1.0\r\n\r\n").first)?.status == 505)
        #expect(rejection(decodeAll("GET / SIP/2.0\r\n\r\n").first)?.status == 400)
    }

    @Test func rtspRejectionAnswersInRTSP() {
        let refused = rejection(decodeAll("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n bad fold\r\n\r\n").first)
        #expect(refused?.status == 400)
        #expect(refused?.version == .rtsp10)
        #expect(refused?.cseq == "1")
    }

    @Test func oversizedBodyIs413AndIsSkippedWithoutBuffering() {
        let limits = RequestLimits(maxHeadBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 10)
        var decoder = AirPlayRequestDecoder(limits: limits)
        var buffer = ByteBuffer(string: "POST /play HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")
        #expect(rejection(decoder.next(from: &buffer))?.status == 413)
        // The body arrives in pieces and is thrown away as it comes.
        for _ in 0..<5 {
            buffer.writeString(String(repeating: "x", count: 1000))
            #expect(decoder.next(from: &buffer) == nil)
            #expect(buffer.readableBytes == 0)
        }
        buffer.writeString("GET /info HTTP/1.1\r\n\r\n")
        #expect(request(decoder.next(from: &buffer))?.path == "/info")
    }

    /// A phone's `POST /action` carries a whole playlist (FCUP): the default limits take 8 MiB
    /// there and 1 MiB anywhere else.
    @Test func anActionMayCarryAPlaylist() {
        var decoder = AirPlayRequestDecoder()
        var buffer = ByteBuffer(string: "POST /action HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n" + String(repeating: "x", count: 2_000_000))
        #expect(request(decoder.next(from: &buffer))?.body.readableBytes == 2_000_000)
        buffer = ByteBuffer(string: "POST /play HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n")
        #expect(rejection(decoder.next(from: &buffer))?.status == 413)
        #expect(RequestLimits.default.maxBodyBytes(method: "POST", target: "/action?x=1") == 8 << 20)
        #expect(RequestLimits.default.maxBodyBytes(method: "GET", target: "/action") == 1 << 20)
        #expect(RequestLimits(maxBodyBytes: 0).maxBodyBytes(method: "POST", target: "/action") == 0)
    }

    @Test func oversizedHeadIs431AndTheConnectionResynchronises() {
        let limits = RequestLimits(maxHeadBytes: 256, maxHeaderCount: 16, maxBodyBytes: 10)
        let huge = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 2000) + "\r\n\r\n"
        let messages = decodeAll(huge + "GET /info HTTP/1.1\r\n\r\n", limits: limits)
        #expect(rejection(messages.first)?.status == 431)
        #expect(request(messages.last)?.path == "/info")
    }

    @Test func tooManyHeaderFieldsIs431() {
        let limits = RequestLimits(maxHeadBytes: 4096, maxHeaderCount: 4, maxBodyBytes: 10)
        let fields = (0..<5).map { "X-\($0): y\r\n" }.joined()
        #expect(rejection(decodeAll("GET / HTTP/1.1\r\n\(fields)\r\n", limits: limits).first)?.status == 431)
    }

    @Test func chunkedBodiesAreRefusedAndCloseTheConnection() {
        let messages = decodeAll("POST /play HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        #expect(rejection(messages.first)?.status == 411)
        #expect(rejection(messages.first)?.closesConnection == true)
        #expect(messages.count == 1)
    }

    @Test func conflictingContentLengthsAre400AndClose() {
        let refused = rejection(decodeAll("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab").first)
        #expect(refused?.status == 400)
        #expect(refused?.closesConnection == true)
    }

    @Test func negativeOrNonNumericContentLengthIs400() {
        #expect(rejection(decodeAll("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").first)?.status == 400)
        #expect(rejection(decodeAll("POST / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n").first)?.status == 400)
    }

    /// NIO's verifier feeds the input in every split and checks the decoder gives the same result.
    @Test func decoderIsIndependentOfHowBytesArrive() throws {
        let body = "{\"a\":1}"
        let input = "POST /play HTTP/1.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)GET /x HTTP/1.1\r\n\r\n"
        var expectedBody = ByteBuffer(string: body)
        expectedBody = expectedBody.slice()
        let expected: [InboundRequest] = [
            .request(AirPlayRequest(method: "POST", target: "/play", version: .http11,
                                    headers: ["Content-Length": "\(body.utf8.count)"], body: expectedBody)),
            .request(AirPlayRequest(method: "GET", target: "/x", version: .http11)),
        ]
        try ByteToMessageDecoderVerifier.verifyDecoder(
            stringInputOutputPairs: [(input, expected)],
            decoderFactory: { AirPlayRequestDecoder() })
    }

    @Test func responsesAreWrittenWithLengthAndEchoedProtocol() {
        var out = ByteBuffer()
        AirPlayResponseEncoder.write(AirPlayResponse(version: .rtsp10, status: 200, headers: ["CSeq": "4"],
                                                     body: ByteBuffer(string: "ok")), into: &out)
        #expect(String(buffer: out) == "RTSP/1.0 200 OK\r\nCSeq: 4\r\nContent-Length: 2\r\n\r\nok")
        var upgrade = ByteBuffer()
        AirPlayResponseEncoder.write(AirPlayResponse(status: 101, headers: ["Upgrade": "PTTH/1.0"]), into: &upgrade)
        #expect(String(buffer: upgrade) == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: PTTH/1.0\r\n\r\n")
    }

    /// The path of every target form senders use: origin-form with a query, RTSP's absolute
    /// URIs (with or without a path), `*`, and a URL inside a query, which is no scheme.
    @Test func thePathOfEveryTargetForm() {
        let cases: [(String, String)] = [
            ("/playback-info", "/playback-info"), ("/scrub?position=5.0", "/scrub"), ("rtsp://10.0.0.1/3413821438", "/3413821438"),
            ("rtsp://[fe80::1]:7000/1?x", "/1"), ("rtsp://10.0.0.1", "/"), ("*", "*"), ("/play?u=http://x/y", "/play"), ("", ""),
        ]
        for (target, path) in cases {
            #expect(AirPlayRequest(method: "GET", target: target, version: .http11).path == path, "\(target)")
        }
    }

    /// Field names match without regard to ASCII case, and only so (`-` is not `_`).
    @Test func fieldNamesMatchWithoutCase() {
        var headers: MessageHeaders = ["CSeq": "3", "content-length": "0", "X-Apple-Session-ID": "a"]
        #expect(headers["cseq"] == "3" && headers["CONTENT-LENGTH"] == "0" && headers["x-apple-session-id"] == "a")
        #expect(headers["X_Apple-Session-ID"] == nil && headers["CSeq2"] == nil && headers["CSe"] == nil)
        headers.remove(name: "Content-Length")
        #expect(headers.values(of: "content-length").isEmpty && headers.fields.count == 2)
    }
}

