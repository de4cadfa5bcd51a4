import AirPlayTesting
import AirPlayPlist
import AirPlayWire
import Foundation
import Testing

/// The control port over real TCP: bad requests get the right 4xx with a reason and the
/// connection keeps serving the well-formed requests that follow.
@Suite(.timeLimit(.minutes(10))) struct ControlPortTests {
    static let host: TestHost? = {
        guard let host = try? TestHost(label: "control") else { return nil }
        // No avahi: the daemon serves regardless.
        guard (try? RunningDaemon.start(in: host, name: "Port Box")) != nil else { return nil }
        return host
    }()

    private func exchange(_ requests: [String]) throws -> String {
        let host = try #require(Self.host, "test host with airplayd")
        return try host.exchange(port: 7000, requests)
    }

    private func statusLines(_ text: String) -> [String] {
        // Text bodies end in "\n" (no CR), and a binary plist body (RTSP /info) in no line end
        // at all: start a new line wherever a status line begins.
        text.replacingOccurrences(of: "\r\n", with: "\n")
            .replacingOccurrences(of: "HTTP/1.1 ", with: "\nHTTP/1.1 ").replacingOccurrences(of: "RTSP/1.0 ", with: "\nRTSP/1.0 ")
            .components(separatedBy: "\n")
            .filter { $0.hasPrefix("HTTP/") || $0.hasPrefix("RTSP/") }
    }

    @Test func serverInfoAnswersWithXML() throws {
        let reply = try exchange(["GET /server-info HTTP/1.1\r\nHost: box\r\n\r\n"])
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(reply.contains("Content-Type: text/x-apple-plist+xml\r\n"))
        #expect(reply.contains("<key>features</key>"))
        #expect(reply.contains("<string>Port Box</string>"))
    }

    @Test func infoAnswersWithBinaryWhenAsked() throws {
        let reply = try exchange(["GET /info HTTP/1.1\r\nAccept: application/x-apple-binary-plist\r\n\r\n"])
        #expect(reply.contains("Content-Type: application/x-apple-binary-plist\r\n"))
        let body = try #require(reply.components(separatedBy: "\r\n\r\n").dropFirst().first)
        let plist = try PropertyList(decoding: Array(body.unicodeScalars.map { UInt8($0.value) }))
        #expect(plist["name"]?.stringValue == "Port Box")
        #expect(plist["srcvers"]?.stringValue == "366.0", "AirPlay 2 on: the Apple profile")
    }

    /// A client that half-closes its side right after its requests (`nc -N`, scripted
    /// clients) still gets every answer, in order, those that take a while (`/play` builds a
    /// player first) too; then the box closes the connection. This daemon has the default
    /// sinks on a box with no display or sound card: before DirectFB's sink was kept out of
    /// `autovideosink`'s choice, that `/play` killed it (SIGSEGV in libfusion).
    @Test func aHalfClosedConnectionGetsEveryAnswer() throws {
        let host = try #require(Self.host, "test host with airplayd")
        let body = "Content-Location: http://127.0.0.1:9/nothing.mp4\r\nStart-Position: 0\r\n"
        let play = "POST /play HTTP/1.1\r\nContent-Type: text/parameters\r\nX-Apple-Session-ID: half\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let reply = try host.exchange(port: 7000, [play + "GET /info HTTP/1.1\r\n\r\nPOST /stop HTTP/1.1\r\nX-Apple-Session-ID: half\r\n\r\n"],
                                      pause: 0)
        #expect(statusLines(reply) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "\(reply.prefix(300))")
        Thread.sleep(forTimeInterval: 1)   // a second for the player `/play` built to crash the daemon, as it once did
        #expect(statusLines(try exchange(["GET /info HTTP/1.1\r\n\r\n"])) == ["HTTP/1.1 200 OK"], "the daemon lives on")
    }

    @Test func unknownPathIs404ThenTheConnectionGoesOn() throws {
        let reply = try exchange(["GET /nowhere HTTP/1.1\r\n\r\n", "GET /info HTTP/1.1\r\n\r\n"])
        #expect(statusLines(reply) == ["HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK"])
        #expect(reply.contains("no resource at /nowhere"))
    }

    @Test func malformedRequestIs400ThenTheConnectionGoesOn() throws {
        let reply = try exchange(["THIS IS NOT HTTP\r\n\r\n", "GET /info HTTP/1.1\r\n\r\n"])
        #expect(statusLines(reply) == ["HTTP/1.1 400 Bad Request", "HTTP/1.1 200 OK"])
    }

    @Test func oversizedBodyIs413ThenTheConnectionGoesOn() throws {
        let body = String(repeating: "x", count: 1_100_000)
        let reply = try exchange(["POST /play HTTP/1.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n", body,
                                  "GET /info HTTP/1.1\r\n\r\n"])
        #expect(statusLines(reply) == ["HTTP/1.1 413 Payload Too Large", "HTTP/1.1 200 OK"])
    }

    @Test func oversizedHeadIs431ThenTheConnectionGoesOn() throws {
        let big = "GET /info HTTP/1.1\r\nX-Filler: " + String(repeating: "y", count: 20_000) + "\r\n\r\n"
        let reply = try exchange([big, "GET /info HTTP/1.1\r\n\r\n"])
        #expect(statusLines(reply) == ["HTTP/1.1 431 Request Header Fields Too Large", "HTTP/1.1 200 OK"])
    }

    /// A version we do not speak gets 505 in one we do.
    @Test func unsupportedVersionIs505InHTTP11() throws {
        let reply = try exchange(["GET /info HTTP/9.9\r\n\r\n", "GET /info HTTP/1.1\r\n\r\n"])
        #expect(statusLines(reply) == ["HTTP/1.1 505 Version Not Supported", "HTTP/1.1 200 OK"])
    }

    @Test func rtspRequestsGetRTSPRepliesWithCSeq() throws {
        let reply = try exchange(["GET /info RTSP/1.0\r\nCSeq: 5\r\n\r\n", "FLY /x RTSP/1.0\r\nCSeq: 6\r\n\r\n"])
        #expect(statusLines(reply) == ["RTSP/1.0 200 OK", "RTSP/1.0 501 Not Implemented"])
        #expect(reply.contains("CSeq: 5\r\n"))
        #expect(reply.contains("CSeq: 6\r\n"))
        #expect(reply.contains("Server: AirTunes/366.0\r\n"))
    }

    @Test func aPeerThatVanishesMidRequestLeavesTheDaemonServing() throws {
        _ = try exchange(["POST /play HTTP/1.1\r\nContent-Length: 500\r\n\r\nonly part of the body"])
        _ = try exchange(["GET /serv"])
        #expect(try exchange(["GET /info HTTP/1.1\r\n\r\n"]).hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test func sessionLinesCarryThePeerAddress() throws {
        _ = try exchange(["GET /info HTTP/1.1\r\n\r\n"])
        let host = try #require(Self.host)
        let logs = try FileManager.default.contentsOfDirectory(atPath: host.directory).filter { $0.hasPrefix("airplayd") && $0.hasSuffix(".err") }
        let text = try logs.map { try String(contentsOfFile: host.directory + "/" + $0, encoding: .utf8) }.joined()
        let sessionLines = text.split(separator: "\n").filter { $0.contains("control connection") || $0.contains("request") }
        #expect(!sessionLines.isEmpty)
        #expect(sessionLines.allSatisfy { $0.contains("peer=") }, "\(sessionLines)")
    }
}
