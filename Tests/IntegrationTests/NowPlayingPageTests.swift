import AirPlayTesting
import Foundation
import Testing

/// What the page showed, line by line, as `peers/cdp_page.py` read it from Chromium.
struct PageView {
    let lines: [[String: Any]]

    init(_ browser: ManagedProcess) {
        lines = browser.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The first view whose title is `title`.
    func first(title: String) -> [String: Any]? { lines.first { $0["title"] as? String == title } }
    /// The latest view.
    var last: [String: Any]? { lines.last { $0["title"] != nil } }
}

/// The now-playing page in Chromium (Debian, headless), all inside a namespace of the test's
/// own (the browser reaches nothing but loopback).
@Suite(.serialized, .timeLimit(.minutes(10))) struct NowPlayingPageInteropTests {
    @Test func thePageFollowsAStreamAndItsButtonsControlAVideo() throws {
        try TestHost.require(["chromium", "ffmpeg"])
        let host = try TestHost(label: "page")
        defer { host.close() }
        let directory = host.directory
        let media = try TestMedia(seconds: 30)
        // The media, served inside the namespace.
        let server = try host.spawn(try #require(TestHost.which("python3")), ["-m", "http.server", "8091", "--bind", "127.0.0.1",
                                                                               "--directory", media.directory], label: "media-server")
        defer { server.stop() }
        try "web_listen = \"127.0.0.1:8090\"\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: host, port: 7040, extra: [
            "--config", directory + "/airplayd.toml", "--audio-output", "fakesink sync=true", "--video-sink", "fakesink sync=true",
            "--airplay2", "off",
        ])
        let control = directory + "/page-control"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        let browser = try host.spawn(try #require(TestHost.which("python3")), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/cdp_page.py", "http://127.0.0.1:8090/", control, "120",
        ], label: "chromium")
        defer { browser.stop() }
        #expect(browser.waitForOutput("\"ready\": true", timeout: 40, inStdout: true), "\(browser.stderr.suffix(800))")
        #expect(poll(timeout: 10) { PageView(browser).last?["title"] as? String == "Nothing playing" }, "\(browser.stdout.suffix(400))")
        // What is not the page gets a clear answer.
        for (request, status) in [("GET /etc/passwd", "404"), ("POST /", "405"), ("POST /remote?command=format", "400"),
                                  ("GET /cover/999", "404"), ("POST /remote?command=pause", "409")] {
            let reply = try host.exchange(port: 8090, ["\(request) HTTP/1.1\r\nHost: x\r\nX-AirPlayd-Remote: 1\r\nContent-Length: 0\r\n\r\n"])
            #expect(reply.hasPrefix("HTTP/1.1 \(status)"), "\(request): \(reply.prefix(200))")
        }
        // Another site's page cannot press the buttons: without the page's header, 403.
        for request in ["POST /remote?command=pause"] {
            let reply = try host.exchange(port: 8090, ["\(request) HTTP/1.1\r\nHost: x\r\nOrigin: http://elsewhere\r\nContent-Length: 0\r\n\r\n"])
            let status = "403"
            #expect(reply.hasPrefix("HTTP/1.1 \(status)"), "\(request): \(reply.prefix(200))")
        }

        // pyatv streams with text and a cover: the page shows the title within a second of the DMAP update.
        let sweep = try #require(RAOPInteropTests.sweep)
        let cover = directory + "/cover.jpg"
        #expect(try runCommand(try #require(TestHost.which("ffmpeg")), ["-loglevel", "error", "-y", "-f", "lavfi", "-i",
                                                                          "testsrc=size=480x480", "-frames:v", "1", cover], timeout: 30).status == 0)
        let pyatv = try host.spawn(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_stream_metadata.py", "127.0.0.1", "7040",
            "AABBCCDDEEFF", "cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68", sweep.directory + "/sweep.flac", cover,
        ], label: "pyatv")
        defer { pyatv.stop() }
        #expect(poll(timeout: 15) { PageView(browser).first(title: "Sweep Song") != nil }, "\(browser.stdout.suffix(600))")
        let shown = try #require(PageView(browser).first(title: "Sweep Song"))
        let changedAt = Double(shown["changedAt"] as? String ?? "") ?? 0
        let metadataLine = try #require(daemon.process.stderr.split(separator: "\n").first { $0.contains("audio metadata") && $0.contains("Sweep Song") })
        let updatedAt = try #require(Self.epochMilliseconds(String(metadataLine.prefix(24))), "\(metadataLine)")
        let latency = changedAt - updatedAt
        print("measure: page title \(Int(latency)) ms after the DMAP update")
        #expect(latency >= -5 && latency < 1000, "the title came \(latency) ms after the DMAP update")

        // A screenshot of the page while it plays with its cover, kept with the build's artefacts.
        Thread.sleep(forTimeInterval: 1)   // the cover loads and paints (the page reports no such state)
        let artefacts = Products.repositoryRoot + "/.build/test-artifacts"
        try FileManager.default.createDirectory(atPath: artefacts, withIntermediateDirectories: true)
        let screenshot = artefacts + "/now-playing-page.png"
        try? FileManager.default.removeItem(atPath: screenshot)
        try screenshot.write(toFile: control + "/screenshot", atomically: true, encoding: .utf8)
        #expect(poll(timeout: 10) { ((try? FileManager.default.attributesOfItem(atPath: screenshot)[.size] as? Int) ?? 0) > 20_000 },
                "a PNG of the playing page at \(screenshot)")
        print("measure: screenshot \(screenshot)")
        // And as a phone shows it (390 x 844 points, stacked).
        let phone = artefacts + "/now-playing-page-phone.png"
        try? FileManager.default.removeItem(atPath: phone)
        try "\(phone) 390x844".write(toFile: control + "/screenshot", atomically: true, encoding: .utf8)
        #expect(poll(timeout: 10) { ((try? FileManager.default.attributesOfItem(atPath: phone)[.size] as? Int) ?? 0) > 20_000 })
        #expect(pyatv.waitForExit(timeout: 30) != nil)

        // A video: its pause button pauses the player.
        let body = "Content-Location: http://127.0.0.1:8091/clip.mp4\r\nStart-Position: 0\r\n"
        let play = try host.exchange(port: 7040, ["POST /play HTTP/1.1\r\nHost: x\r\nX-Apple-Session-ID: page\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body])
        #expect(play.hasPrefix("HTTP/1.1 200"), "\(play)")
        #expect(poll(timeout: 15) { (PageView(browser).last?["title"] as? String) == "clip" && PageView(browser).last?["state"] as? String == "playing" },
                "\(browser.stdout.suffix(400))")
        try "playpause".write(toFile: control + "/click", atomically: true, encoding: .utf8)
        #expect(poll(timeout: 5) { PageView(browser).last?["state"] as? String == "paused" }, "\(browser.stdout.suffix(400))")
        let info = try host.exchange(port: 7040, ["GET /playback-info HTTP/1.1\r\nHost: x\r\nX-Apple-Session-ID: page\r\n\r\n"])
        #expect(info.contains("<key>rate</key>\n\t<real>0") || info.contains("<real>0.0</real>"), "the player paused: \(info.suffix(700))")
        try "playpause".write(toFile: control + "/click", atomically: true, encoding: .utf8)
        #expect(poll(timeout: 5) { PageView(browser).last?["state"] as? String == "playing" })

        // A sender asks to pair: the page shows the PIN the journal shows.
        let start = try host.exchange(port: 7040, ["POST /pair-pin-start HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"])
        #expect(start.hasPrefix("HTTP/1.1 200"), "\(start)")
        let journalPIN = daemon.process.stderr.split(separator: "\n").last { $0.contains("pairing PIN for a sender") }
            .flatMap { $0.split(separator: "pairing.pin=").last.map { String($0.prefix(4)) } }
        #expect(journalPIN != nil)
        #expect(poll(timeout: 5) { (PageView(browser).last?["pin"] as? String) == journalPIN }, "\(browser.stdout.suffix(300))")
    }

    /// `2026-11-24T23:28:53.467Z` as milliseconds since 1970.
    static func epochMilliseconds(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { $0.timeIntervalSince1970 * 1000 }
    }
}
