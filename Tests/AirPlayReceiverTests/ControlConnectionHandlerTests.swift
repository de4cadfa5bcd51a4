@testable import AirPlayReceiver
import AirPlayPlist
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// One control connection's pipeline (response writer, request decoder, handler) on an
/// `EmbeddedChannel`: bytes in, bytes out, no socket. Responses leave in request order even
/// when an earlier answer takes I/O; `POST /reverse` turns the connection into an event channel.
@Suite struct ControlConnectionHandlerTests {
    /// Answers `/slow` later (through a promise the test completes), everything else at once.
    final class Responder: ControlResponding, @unchecked Sendable {
        let slow = NIOLockedValueBox<EventLoopPromise<AirPlayResponse>?>(nil)

        func reply(to request: AirPlayRequest, connection: ConnectionContext?) -> ControlReply {
            if request.path == "/slow" {
                return ControlReply(response: AirPlayResponse(status: 500), upgradeToEventChannel: nil) { eventLoop in
                    let promise = eventLoop.makePromise(of: AirPlayResponse.self)
                    self.slow.withLockedValue { $0 = promise }
                    return promise.futureResult
                }
            }
            if request.path == "/reverse" {
                return ControlReply(response: AirPlayResponse(status: 101, headers: ["Upgrade": "PTTH/1.0", "Connection": "Upgrade"]),
                                    upgradeToEventChannel: "session-1")
            }
            return ControlReply(response: finish(.text(status: 200, "fast \(request.path)"), version: request.version, cseq: request.cseq),
                                upgradeToEventChannel: nil)
        }

        func respond(to rejection: RequestRejection) -> AirPlayResponse { .text(status: rejection.status, rejection.reason) }

        func finish(_ response: AirPlayResponse, version: ProtocolVersion, cseq: String?) -> AirPlayResponse {
            var response = response
            response.version = version
            if let cseq { response.headers.add(name: "CSeq", value: cseq) }
            return response
        }
    }

    static func channel(_ responder: Responder, events: EventChannels? = nil, refuse: String? = nil) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let logger = Logger(label: "test")
        let timeoutState = ConnectionTimeoutState(limits: .default)
        try channel.pipeline.syncOperations.addHandler(ResponseWriter(), name: ControlConnectionHandler.encoderName)
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayRequestDecoder(limits: .default)),
                                                       name: ControlConnectionHandler.decoderName)
        try channel.pipeline.syncOperations.addHandler(
            ControlConnectionHandler(router: responder, events: events, timeoutState: timeoutState, refuse: refuse, logger: logger),
            name: ControlConnectionHandler.handlerName)
        return channel
    }

    /// Everything the channel wrote, as text.
    static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }

    static func statusLines(_ text: String) -> [String] {
        // Text bodies end in "\n": split on any line end.
        text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n").filter { $0.hasPrefix("HTTP/") || $0.hasPrefix("RTSP/") }
    }

    /// A pipelined client: `/slow`, `/fast` and a malformed request. Nothing may overtake the
    /// slow answer; once it comes, all three leave in order.
    @Test func responsesKeepRequestOrderBehindADeferredAnswer() throws {
        let responder = Responder()
        let channel = try Self.channel(responder)
        try channel.writeInbound(ByteBuffer(string: "GET /slow HTTP/1.1\r\n\r\nGET /fast HTTP/1.1\r\n\r\nNOT HTTP AT ALL\r\n\r\n"))
        #expect(try Self.written(channel).isEmpty, "the fast answer waits for the slow one")
        let promise = try #require(responder.slow.withLockedValue { $0 })
        promise.succeed(.text(status: 200, "slow"))
        channel.embeddedEventLoop.run()
        let text = try Self.written(channel)
        #expect(Self.statusLines(text) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"])
        #expect(text.range(of: "slow")!.lowerBound < text.range(of: "fast /fast")!.lowerBound)
        _ = try? channel.finish()
    }

    /// Without anything pending, answers go out at once, RTSP ones with their CSeq.
    @Test func immediateAnswersLeaveAtOnce() throws {
        let channel = try Self.channel(Responder())
        try channel.writeInbound(ByteBuffer(string: "OPTIONS * RTSP/1.0\r\nCSeq: 3\r\n\r\n"))
        let text = try Self.written(channel)
        #expect(text.hasPrefix("RTSP/1.0 200 OK\r\n"))
        #expect(text.contains("CSeq: 3\r\n"))
        _ = try? channel.finish()
    }

    /// `POST /reverse` with `Upgrade: PTTH/1.0`: 101, then the HTTP codecs leave the pipeline and
    /// the connection carries the session's events; what the sender writes back is read as
    /// replies, not requests.
    @Test func reverseTurnsTheConnectionIntoAnEventChannel() throws {
        let events = EventChannels(logger: Logger(label: "test"))
        let channel = try Self.channel(Responder(), events: events)
        try channel.writeInbound(ByteBuffer(string: "POST /reverse HTTP/1.1\r\nUpgrade: PTTH/1.0\r\nX-Apple-Session-ID: session-1\r\n\r\n"))
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(events.has(sessionID: "session-1"))
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ResponseWriter.self) }
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ControlConnectionHandler.self) }
        // An event goes out as an HTTP request on the same connection; the sender's 200 is a reply.
        events.send(sessionID: "session-1", event: .dictionary(["state": .string("playing")]))
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).hasPrefix("POST /event HTTP/1.1\r\n"))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect(try channel.readInbound(as: InboundRequest.self) == nil)
        // An iPhone answers `EVENT/1.0 200 OK`: a reply too, and the channel stays open for the next.
        events.send(sessionID: "session-1", event: .dictionary(["state": .string("paused")]))
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).hasPrefix("POST /event HTTP/1.1\r\n"))
        try channel.writeInbound(ByteBuffer(string: "EVENT/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"))
        channel.embeddedEventLoop.run()
        #expect(events.has(sessionID: "session-1"))
        _ = try? channel.finish()
    }

    /// One connection too many: its first request gets 503 in its own protocol and it closes.
    @Test func aConnectionOverTheLimitGets503AndCloses() throws {
        let channel = try Self.channel(Responder(), refuse: "this receiver serves 2 connections at once")
        try channel.writeInbound(ByteBuffer(string: "OPTIONS * RTSP/1.0\r\nCSeq: 9\r\n\r\n"))
        channel.embeddedEventLoop.run()
        let text = try Self.written(channel)
        #expect(text.hasPrefix("RTSP/1.0 503 Service Unavailable\r\n"))
        #expect(text.contains("CSeq: 9\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(!channel.isActive)
    }
}
