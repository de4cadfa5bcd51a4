import AirPlayPlist
import AirPlayWire
import AirPlayTesting
import Foundation
import Testing

/// Video end to end: airplayd plays HLS and MP4 made by ffmpeg, served over loopback, through
/// real GStreamer with headless sinks, while a sender drives it over HTTP and listens on /reverse.
@Suite(.serialized, .timeLimit(.minutes(10))) struct VideoPlaybackTests {
    static let media: TestMedia? = try? TestMedia(seconds: 8)

    private func media() throws -> TestMedia { try #require(Self.media, "ffmpeg-made media served over loopback") }

    /// A sender: one control connection and one reverse event channel for a session.
    final class Sender {
        let control: RawHTTPConnection
        let events: RawHTTPConnection
        let session: String

        init(port: Int, session: String = UUID().uuidString) throws {
            self.session = session
            control = try RawHTTPConnection(port: port)
            events = try RawHTTPConnection(port: port)
            let upgrade = try events.request("POST", "/reverse", headers: [
                "Upgrade": "PTTH/1.0", "Connection": "Upgrade", "X-Apple-Purpose": "event", "X-Apple-Session-ID": session,
            ])
            #expect(upgrade.status == 101)
            #expect(upgrade.headers["upgrade"] == "PTTH/1.0")
        }

        func send(_ method: String, _ target: String, body: [UInt8] = [], headers: [String: String] = [:]) throws -> RawHTTPConnection.Message {
            var all = headers
            all["X-Apple-Session-ID"] = session
            return try control.request(method, target, headers: all, body: body)
        }

        func play(_ url: String, extra: String = "") throws -> RawHTTPConnection.Message {
            try send("POST", "/play", body: Array("Content-Location: \(url)\r\nStart-Position: 0\r\n\(extra)".utf8))
        }

        /// The next event's state, answering it as a sender would.
        func nextState(timeout: Double = 15) throws -> String? {
            let event = try events.readMessage(timeout: timeout)
            #expect(event.startLine == "POST /event HTTP/1.1")
            try events.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            let plist = try PropertyList(decoding: event.body)
            #expect(plist["category"]?.stringValue == "video")
            return plist["state"]?.stringValue
        }

        /// Waits for a given state, returning the states seen on the way.
        func waitFor(_ state: String, timeout: Double = 20) throws -> [String] {
            var seen: [String] = []
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                guard let next = try nextState(timeout: deadline.timeIntervalSinceNow) else { continue }
                seen.append(next)
                if next == state { return seen }
            }
            return seen
        }

        func scrub() throws -> (duration: Double, position: Double) {
            let reply = try send("GET", "/scrub")
            var values: [String: Double] = [:]
            for line in reply.text.components(separatedBy: "\r\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2 { values[String(parts[0])] = Double(parts[1].trimmingCharacters(in: .whitespaces)) }
            }
            return (values["duration"] ?? -1, values["position"] ?? -1)
        }

        func playbackInfo() throws -> PropertyList {
            try PropertyList(decoding: try send("GET", "/playback-info").body)
        }
    }

    @Test func hlsPlaysInRealTimeToTheEndWithEventsInOrder() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        #expect(try sender.play(media.url("hls/index.m3u8")).status == 200)
        let started = try sender.waitFor("playing")
        #expect(started == ["loading", "playing"])
        let first = try sender.scrub()
        let t0 = monotonicSeconds()
        Thread.sleep(forTimeInterval: 2)   // the window in which the position must advance in real time
        let second = try sender.scrub()
        let elapsed = monotonicSeconds() - t0
        #expect(abs(first.duration - 8) < 0.2)
        #expect(abs((second.position - first.position) - elapsed) < 0.3, "position advanced \(second.position - first.position) s in \(elapsed) s")
        let info = try sender.playbackInfo()
        #expect(info["readyToPlay"]?.boolValue == true)
        #expect(info["rate"]?.doubleValue == 1)
        #expect(info["seekableTimeRanges"] != nil)
        #expect(try sender.waitFor("stopped", timeout: 15).last == "stopped", "the end of the media is reported")
        #expect(try sender.playbackInfo()["duration"] == nil, "after the end nothing plays")
    }

    /// Video plays in a process of its own (`airplayd --video-player`). Killed mid-play with
    /// SIGABRT, as Debian 12's GStreamer aborts in hlsdemux2 on some HLS, the video plays on in
    /// a new player process from where it was (the sender sees a rebuffer, never `stopped`);
    /// killed a second time, the video ends with `stopped` and the reason in `/playback-info`.
    /// The daemon, an audio stream playing meanwhile, and the next video go on.
    @Test func aCrashedVideoPlayerCostsARebufferOnceThenEndsTheVideo() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let directory = Products.scratchDirectory("player-crash")
        let tone = directory + "/tone.wav"
        let made = try runCommand(try #require(TestHost.which("ffmpeg")), ["-loglevel", "error", "-y", "-f", "lavfi", "-i",
                                                                            "sine=frequency=440:sample_rate=44100:duration=10", "-ac", "2", tone], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let audio = try ManagedProcess(try Products.executable("airplay"), ["stream", tone, "--to", "127.0.0.1:\(daemon.port)"],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: directory,
                                       label: "airplay-stream")
        let sender = try Sender(port: daemon.port)
        #expect(try sender.play(media.url("hls/index.m3u8")).status == 200)
        #expect(try sender.waitFor("playing").last == "playing")
        func playerPIDs() -> [Int32] {
            daemon.process.lines(containing: "video player process started").compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
            }
        }
        // Far enough in that "from where it was" and "from the start" differ.
        #expect(poll(timeout: 10, interval: 0.2) { (try? sender.scrub().position) ?? 0 > 2 })
        let before = try sender.scrub().position
        let first = try #require(playerPIDs().last, "\(daemon.process.stderr.suffix(2000))")
        #expect(kill(first, SIGABRT) == 0)
        let rebuffer = try sender.waitFor("playing", timeout: 15)
        #expect(rebuffer.last == "playing" && !rebuffer.contains("stopped"), "\(rebuffer); \(daemon.process.stderr.suffix(2000))")
        #expect(daemon.process.stderr.contains("video restarted in a new player process"))
        let after = try sender.scrub().position
        #expect(after >= before - 1, "played on from \(before) s, not from the start: \(after) s")
        let second = try #require(playerPIDs().last)
        #expect(second != first, "\(playerPIDs())")
        #expect(kill(second, SIGABRT) == 0)
        #expect(try sender.waitFor("stopped", timeout: 10).last == "stopped")
        let error = try sender.playbackInfo()["error"]
        #expect(error?["description"]?.stringValue?.contains("video player process ended (killed by signal 6)") == true, "\(String(describing: error))")
        #expect(daemon.process.isRunning && daemon.process.stderr.contains("video player process ended"))
        // The next video plays, in a new player process.
        #expect(try sender.play(media.url("clip.mp4")).status == 200)
        #expect(try sender.waitFor("playing").last == "playing")
        #expect(playerPIDs().count == 3 && !([first, second].contains(playerPIDs().last ?? first)), "\(playerPIDs())")
        #expect(audio.waitForExit(timeout: 30) == 0, "the audio stream played on: \(audio.stderr.suffix(1000))")
        #expect(!daemon.process.stderr.contains("audio session ended") || daemon.process.stderr.contains("reason=TEARDOWN"),
                "\(daemon.process.stderr.suffix(2000))")
    }

    @Test func seekLandsNearTheTargetAndRateZeroHolds() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        #expect(try sender.play(media.url("clip.mp4")).status == 200)
        _ = try sender.waitFor("playing")
        #expect(try sender.send("POST", "/scrub?position=5.0").status == 200)
        Thread.sleep(forTimeInterval: 0.2)   // 0.2 s of play after the seek: hence 5.2 below
        let landed = try sender.scrub().position
        #expect(abs(landed - 5.2) < 0.5, "seek landed at \(landed)")

        #expect(try sender.send("POST", "/rate?value=0.000000").status == 200)
        #expect(try sender.waitFor("paused").last == "paused")
        let held = try sender.scrub().position
        Thread.sleep(forTimeInterval: 2)   // two seconds in which a running player would move on
        #expect(abs(try sender.scrub().position - held) < 0.05, "rate 0 holds the position")
        #expect(try sender.playbackInfo()["rate"]?.doubleValue == 0)
        #expect(try sender.send("POST", "/rate?value=1.000000").status == 200)
        #expect(try sender.waitFor("playing").last == "playing")
        #expect(try sender.send("POST", "/rate?value=abc").status == 400)
        #expect(try sender.send("POST", "/rate?value=1e300").status == 422, "a rate beyond any trick play")

        #expect(try sender.send("POST", "/stop").status == 200)
        #expect(try sender.waitFor("stopped").last == "stopped")
        #expect(try sender.playbackInfo()["duration"] == nil)
    }

    /// A live stream has no duration to bound a seek, and a sender may name any position:
    /// one beyond any media (1e12 s; the end of what a Double holds) is clamped, so the seek
    /// fails or lands at the live edge, and the box plays on and answers. Its nanoseconds used
    /// to overflow GStreamer's gint64 and trap the daemon.
    @Test func aScrubBeyondAnyMediaOnALiveStreamLeavesTheBoxAnswering() throws {
        let media = try media()
        let vod = try String(contentsOfFile: media.directory + "/hls/index.m3u8", encoding: .utf8)
        let live = vod.components(separatedBy: "\n").filter { !$0.hasPrefix("#EXT-X-ENDLIST") && !$0.hasPrefix("#EXT-X-PLAYLIST-TYPE") }
        try live.joined(separator: "\n").write(toFile: media.directory + "/hls/live.m3u8", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        #expect(try sender.play(media.url("hls/live.m3u8")).status == 200)
        _ = try sender.waitFor("playing")
        for position in ["1e12", "1.7976931348623157e308"] {
            let answer = try sender.send("POST", "/scrub?position=\(position)")
            print("measure: /scrub?position=\(position) on a live stream: \(answer.status.map(String.init) ?? "no status") \(answer.text.prefix(120))")
            #expect(daemon.process.isRunning, "after /scrub?position=\(position): \(daemon.process.stderr.suffix(2000))")
            #expect(try sender.send("GET", "/playback-info").status == 200)
        }
        #expect(try sender.send("POST", "/stop").status == 200)
        #expect(daemon.process.isRunning)
    }

    @Test func binaryPlistPlayStartsPausedAtAnAbsolutePosition() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        let body = PropertyList.dictionary([
            "Content-Location": .string(media.url("hls/index.m3u8")), "Start-Position-Seconds": .real(4), "rate": .real(0),
        ]).encoded(as: .binary)
        let reply = try sender.send("POST", "/play", body: body, headers: ["Content-Type": "application/x-apple-binary-plist"])
        #expect(reply.status == 200)
        #expect(try sender.waitFor("paused") == ["loading", "paused"])
        let position = try sender.scrub().position
        #expect(abs(position - 4) < 0.5, "started paused at \(position)")
        Thread.sleep(forTimeInterval: 1)   // a second in which a running player would move on
        #expect(abs(try sender.scrub().position - position) < 0.05)
    }

    @Test func classicFractionStartPosition() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        let body = "Content-Location: \(media.url("clip.mp4"))\nStart-Position: 0.5\n"
        #expect(try sender.send("POST", "/play", body: Array(body.utf8)).status == 200)
        _ = try sender.waitFor("playing")
        let position = try sender.scrub().position
        #expect(position >= 3.8 && position < 5, "half of 8 s, got \(position)")
        _ = try sender.send("POST", "/stop")
    }

    @Test func badURLsAreRefusedAndBrokenMediaEndsStoppedWithAnError() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        for url in ["file:///etc/passwd", "data:video/mp4;base64,AAAA", "rtsp://127.0.0.1/x", "not a url"] {
            let reply = try sender.play(url)
            #expect(reply.status == 400, "\(url)")
            #expect(!reply.text.isEmpty)
        }
        #expect(try sender.send("POST", "/play", body: Array("Start-Position: 0\n".utf8)).status == 400)

        #expect(try sender.play(media.url("missing.m3u8")).status == 200)
        #expect(try sender.waitFor("stopped").last == "stopped")
        let info = try sender.playbackInfo()
        #expect(info["duration"] == nil)
        #expect(info["error"]?["domain"] != nil, "error dict with code and domain")
        #expect(info["error"]?["code"]?.integerValue != nil)

        #expect(try sender.play(media.url("notmedia.txt")).status == 200)
        #expect(try sender.waitFor("stopped").last == "stopped")
        #expect(try sender.playbackInfo()["error"] != nil)

        // The box needs no restart: good media plays right after.
        #expect(try sender.play(media.url("clip.mp4")).status == 200)
        #expect(try sender.waitFor("playing").last == "playing")
        _ = try sender.send("POST", "/stop")
    }

    @Test func aSecondSenderTakesOverAndTheFirstHearsStopped() throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let first = try Sender(port: daemon.port)
        #expect(try first.play(media.url("clip.mp4")).status == 200)
        _ = try first.waitFor("playing")
        let second = try Sender(port: daemon.port)
        #expect(try second.play(media.url("hls/index.m3u8")).status == 200)
        #expect(try first.waitFor("stopped").last == "stopped")
        _ = try second.waitFor("playing")
        #expect(try first.send("POST", "/rate?value=0").status == 409, "the replaced session is refused")
        #expect(try second.send("POST", "/stop").status == 200)
    }

    @Test(arguments: ["tone.m4a", "hls/live.m3u8"])
    func audioFilesAndLiveStreamsPlay(path: String) throws {
        let media = try media()
        let daemon = try LocalDaemon()
        let sender = try Sender(port: daemon.port)
        #expect(try sender.play(media.url(path)).status == 200)
        #expect(try sender.waitFor("playing").last == "playing")
        var info = try sender.playbackInfo()
        #expect(poll(timeout: 5, interval: 0.1) {
            info = (try? sender.playbackInfo()) ?? info
            return info["readyToPlay"]?.boolValue == true && (info["position"]?.doubleValue ?? 0) > 0.5
        }, "half a second played")
        #expect(info["readyToPlay"]?.boolValue == true)
        #expect((info["position"]?.doubleValue ?? 0) > 0.5)
        #expect(try sender.send("POST", "/stop").status == 200)
        #expect(try sender.waitFor("stopped").last == "stopped")
    }

    @Test func takeoverCanBeRefusedByConfiguration() throws {
        let media = try media()
        let config = Products.scratchDirectory("refuse") + "/airplayd.toml"
        try "video_takeover = \"refuse\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", config])
        let first = try Sender(port: daemon.port)
        #expect(try first.play(media.url("clip.mp4")).status == 200)
        _ = try first.waitFor("playing")
        let second = try Sender(port: daemon.port)
        let refused = try second.play(media.url("clip.mp4"))
        #expect(refused.status == 409)
        #expect(refused.text.contains("refuses"))
        _ = try first.send("POST", "/stop")
    }

    @Test func propertiesVolumeAndLocalURLPolicy() throws {
        let media = try media()
        let config = Products.scratchDirectory("local") + "/airplayd.toml"
        try "video_refuse_local_urls = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", config])
        let sender = try Sender(port: daemon.port)
        let refused = try sender.play(media.url("clip.mp4"))
        #expect(refused.status == 400)
        #expect(refused.text.contains("loopback"))
        #expect(try sender.send("POST", "/volume?volume=0.5").status == 200)
        #expect(try sender.send("POST", "/volume?volume=7").status == 400)
        let set = try sender.send("PUT", "/setProperty?forwardEndTime",
                                  body: PropertyList.dictionary(["value": .dictionary(["epoch": .integer(0)])]).encoded(as: .binary),
                                  headers: ["Content-Type": "application/x-apple-binary-plist"])
        #expect(set.status == 200)
        #expect(try PropertyList(decoding: set.body)["errorCode"]?.integerValue == 0)
        #expect(try sender.send("GET", "/getProperty?playbackAccessLog").status == 200)
        #expect(try sender.send("GET", "/getProperty?noSuchKey").status == 404)
        #expect(try sender.send("PUT", "/setProperty?noSuchKey").status == 404)
    }
}

/// pyatv's `play_url` (POST /play with a binary plist, then /playback-info each second until
/// `duration` disappears) plays our media to the end. Without credentials that is AirPlay 1:
/// a receiver that advertises AirPlay 2 (our default) makes pyatv ask for credentials first,
/// as an Apple TV does (below).
@Suite(.serialized, .timeLimit(.minutes(10))) struct PyatvVideoInteropTests {
    @Test(arguments: ["hls/index.m3u8", "clip.mp4"])
    func pyatvPlaysToTheEnd(path: String) throws {
        try playToTheEnd(path, daemon: try LocalDaemon(extra: ["--airplay2", "off"]))
    }

    /// With credentials pyatv plays over AirPlay 2: pair-verify (stored HAP credentials from
    /// `atvremote pair`) or a transient pair-setup, the connection encrypted, SETUP phase 1,
    /// RECORD, `/play` with a binary plist, `PUT /setProperty` and `POST /rate` as RTSP, then
    /// `/playback-info` polling, all on the one encrypted connection.
    @Test(arguments: ["hls/index.m3u8", "clip.mp4"])
    func pyatvPlaysToTheEndOverAirPlay2(path: String) throws {
        let box = try PairingInteropTests.PairingBox(access: "anyone")
        try playToTheEnd(path, daemon: box.daemon, credentials: "7472616e7369656e74:::")
        #expect(box.daemon.process.stderr.contains("transient pairing: the connection is encrypted"))
        #expect(box.daemon.process.stderr.contains("AirPlay 2 session setup"))
        if path == "clip.mp4" {
            // And with the credentials of a real pairing (pair-verify instead of transient).
            let credentials = try #require(try box.pair(typing: "2468").credentials)
            try playToTheEnd(path, daemon: box.daemon, credentials: credentials)
            #expect(box.daemon.process.stderr.contains("pair-verify"))
        }
    }

    private func playToTheEnd(_ path: String, daemon: LocalDaemon, credentials: String? = nil) throws {
        let atvremote = try Products.peerTool("atvremote")
        let media = try #require(VideoPlaybackTests.media)
        let ends = daemon.process.stderr.components(separatedBy: "video reached its end").count
        let deviceID = try #require(daemon.process.stderr.split(separator: "\n")
            .first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first)
        let features = try #require(daemon.process.stderr.split(separator: "\n")
            .first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first)
        let started = monotonicSeconds()
        let result = try runCommand(atvremote, [
            "--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(daemon.port), "--protocol", "airplay",
            "--id", String(deviceID),
            // What our _airplay._tcp TXT record says; --manual skips discovery.
            "--service-properties", "|deviceid=\(deviceID)|features=\(features)|flags=0x4|model=airplayd1,1|srcvers=220.68|protovers=1.0",
        ] + (credentials.map { ["--airplay-credentials", $0] } ?? []) + ["play_url=\(media.url(path))"], timeout: 60)
        let took = monotonicSeconds() - started
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(daemon.process.stderr.components(separatedBy: "video reached its end").count == ends + 1)
        #expect(took > 7, "played in real time (\(took) s for 8 s of media)")
    }
}
