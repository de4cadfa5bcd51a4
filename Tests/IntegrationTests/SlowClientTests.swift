import AirPlayTesting
import Foundation
import Testing

/// Clients that hold the control port without using it: a head trickled byte by byte gets 408
/// and is closed, an idle keep-alive connection is closed, and connections past the limit get
/// 503. The box keeps serving everyone else throughout.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SlowClientTests {
    static func daemon() throws -> LocalDaemon {
        let config = Products.scratchDirectory("slow") + "/airplayd.toml"
        try "request_timeout = 2\nidle_timeout = 5\nmax_connections = 3\n".write(toFile: config, atomically: true, encoding: .utf8)
        return try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:/dev/null"])
    }

    @Test func aTrickledHeadGets408AndIsClosed() throws {
        let daemon = try Self.daemon()
        let slow = try RawHTTPConnection(port: daemon.port)
        let started = monotonicSeconds()
        for byte in "GET /info HTTP/1.1\r\nX-Slow: ".utf8 {
            try? slow.send([byte])
            Thread.sleep(forTimeInterval: 0.1)   // a byte every tenth of a second
            if monotonicSeconds() - started > 4 { break }
        }
        let reply = try slow.readMessage(timeout: 5)
        #expect(reply.startLine == "HTTP/1.1 408 Request Timeout")
        #expect(reply.headers["connection"] == "close")
        #expect(slow.waitForClose(timeout: 3))
        let waited = monotonicSeconds() - started
        #expect(waited >= 2 && waited < 4.5, "408 after \(waited) s")
        #expect(try RawHTTPConnection(port: daemon.port).request("GET", "/info").status == 200, "others are served")

        // RTSP senders get their answer in RTSP.
        let rtsp = try RawHTTPConnection(port: daemon.port)
        try rtsp.send("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n")
        #expect(try rtsp.readMessage(timeout: 5).startLine == "RTSP/1.0 408 Request Timeout")
    }

    @Test func anIdleConnectionIsClosed() throws {
        let daemon = try Self.daemon()
        let idle = try RawHTTPConnection(port: daemon.port)
        #expect(try idle.request("GET", "/info").status == 200)
        let started = monotonicSeconds()
        #expect(idle.waitForClose(timeout: 10))
        let waited = monotonicSeconds() - started
        // The idle clock starts as the answer leaves, a moment before it is read here.
        #expect(waited >= 4.9 && waited < 8, "closed after \(waited) s idle")
    }

    @Test func connectionsBeyondTheLimitGet503() throws {
        let daemon = try Self.daemon()
        var held = try (0..<3).map { _ in try RawHTTPConnection(port: daemon.port) }
        for connection in held { #expect(try connection.request("GET", "/info").status == 200) }
        let extra = try RawHTTPConnection(port: daemon.port)
        let refused = try extra.request("OPTIONS", "*", headers: ["CSeq": "7"], protocolName: "RTSP/1.0")
        #expect(refused.startLine == "RTSP/1.0 503 Service Unavailable")
        #expect(refused.headers["cseq"] == "7")
        #expect(refused.text.contains("3 connections at once"))
        #expect(extra.waitForClose(timeout: 3))
        // One leaves: the next sender is served.
        held.removeFirst()
        #expect(poll(timeout: 3) { (try? RawHTTPConnection(port: daemon.port).request("GET", "/info").status) == 200 })
        #expect(held.count == 2)
    }
}
