import AirPlayTesting
import Foundation
import Testing

/// `video_refuse_local_urls` covers every URL the box fetches for a sender, not only the
/// `/play` host. A hostile origin (in a namespace of its own, so it is not local) redirects to
/// the box's loopback, and serves playlists whose variants, segments and keys live there. With
/// the policy, the service on the box's loopback hears nothing. Without it, the same plays reach
/// that service, which proves the test's servers would catch a lapse.
@Suite(.serialized, .timeLimit(.minutes(10))) struct URLPolicyTests {
    struct Box {
        let box: TestHost
        let origin: TestHost
        let secretLog: String
        let originBase: String
        let originLog: String
        let curl: String

        /// With `media`, the origin also serves that folder as `/media/` (and `/moved/` redirects there).
        init(label: String, media: String? = nil) throws {
            try TestHost.require(["curl", "python3"])
            box = try TestHost(label: label + "-box")
            origin = try TestHost(label: label + "-origin")
            try box.link(to: origin, addresses: ["10.97.1.2"], peerAddress: "10.97.1.1")
            curl = try #require(TestHost.which("curl"))
            let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/url_policy_servers.py"
            secretLog = box.directory + "/secret.log"
            _ = FileManager.default.createFile(atPath: secretLog, contents: nil)
            let secret = try box.spawn("/usr/bin/python3", [script, "secret", "127.0.0.1", "0", secretLog], label: "secret")
            #expect(poll(timeout: 10) { Int(secret.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil }, "\(secret.stderr)")
            let secretPort = try #require(Int(secret.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let log = origin.directory + "/origin.log"
            originLog = log
            let server = try origin.spawn("/usr/bin/python3", [script, "origin", "10.97.1.1", "0", "http://127.0.0.1:\(secretPort)"]
                                          + (media.map { [$0, log] } ?? []), label: "origin")
            #expect(poll(timeout: 10) { Int(server.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil }, "\(server.stderr)")
            originBase = "http://10.97.1.1:\(try #require(Int(server.stdout.trimmingCharacters(in: .whitespacesAndNewlines))))"
        }

        func close() {
            origin.close()
            box.close()
        }

        func daemon(refuseLocal: Bool) throws -> RunningDaemon {
            let config = box.directory + "/airplayd-\(refuseLocal).toml"
            try "video_refuse_local_urls = \(refuseLocal)\n".write(toFile: config, atomically: true, encoding: .utf8)
            return try RunningDaemon.start(in: box, extra: ["--config", config, "--audio-output", "fakesink sync=true",
                                                            "--video-sink", "fakesink sync=true"])
        }

        /// POST /play of `path` on the origin; the status, then the playback-info text once the
        /// player has failed (or after 10 s).
        func play(_ path: String) throws -> (status: String, info: String) {
            let status = try play(path, waitForError: false)
            var info = ""
            _ = poll(timeout: 10, interval: 0.25) {
                info = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/playback-info"]).stdout) ?? ""
                return info.contains("<key>error</key>")
            }
            return (status, info)
        }

        /// Polls `/scrub` until the position passes `seconds` (it plays), or 20 s.
        func plays(past seconds: Double) -> Bool {
            poll(timeout: 20, interval: 0.25) {
                let text = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/scrub"]).stdout) ?? ""
                let position = text.components(separatedBy: "\r\n").first { $0.hasPrefix("position:") }
                    .flatMap { Double($0.dropFirst(9).trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
                return position > seconds
            }
        }

        /// The origin's log: "PATH USER-AGENT" a request.
        var originRequests: [String] {
            ((try? String(contentsOfFile: originLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// POST /play of `path` on the origin; the status.
        func play(_ path: String, waitForError: Bool) throws -> String {
            try box.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "X-Apple-Session-ID: policy",
                               "--data-binary", "Content-Location: \(originBase)\(path)\nStart-Position: 0\n",
                               "http://127.0.0.1:7000/play"]).stdout
        }

        var secretRequests: [String] {
            ((try? String(contentsOfFile: secretLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    @Test func nothingASenderNamesReachesTheBoxItself() throws {
        let setup = try Box(label: "urlpolicy")
        defer { setup.close() }
        let daemon = try setup.daemon(refuseLocal: true)
        defer { daemon.process.stop(grace: 2) }
        // A redirect from the playlist's origin to the box; a variant, a segment and a key on
        // the box; a progressive file that redirects to the box.
        // A redirect from the playlist's origin to the box; a variant, a segment and a key on
        // the box; a segment on the origin that redirects to the box; a progressive file that
        // redirects to the box (refused by /play itself, as the box follows it first).
        for (path, reason) in [("/redirect.m3u8", "loopback"), ("/master.m3u8", "loopback"), ("/rewrite.m3u8", "loopback"),
                               ("/keyed.m3u8", nil), ("/bounce.m3u8", "loopback")] {
            let (status, info) = try setup.play(path)
            #expect(status == "200", "\(path): /play answered \(status)")
            #expect(info.contains("<key>error</key>"), "\(path) must fail: \(info) \(daemon.process.stderr.split(separator: "\n").filter { !$0.contains("control connection") && !$0.contains("playback-info") }.suffix(25).joined(separator: "\n"))")
            if let reason { #expect(info.contains(reason), "\(path): the error says why: \(info)") }
            #expect(setup.secretRequests.isEmpty, "\(path) reached the box's loopback: \(setup.secretRequests)")
        }
        let (status, _) = try setup.play("/redirect.mp4")
        #expect(status == "400", "a progressive URL that redirects to the box is refused at once")
        #expect(setup.secretRequests.isEmpty, "/redirect.mp4 reached the box's loopback: \(setup.secretRequests)")
    }

    /// The policy refuses only what leads to the box: an honest origin still plays. A progressive
    /// file behind a redirect (the box follows it, screened, and hands the player where it
    /// leads), and HLS whose segments, whole or byte ranges of one file, the gateway fetches for
    /// the player (the origin sees our user agent, never the player's).
    @Test func underThePolicyHonestMediaStillPlays() throws {
        let media = try TestMedia(seconds: 6)
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        try FileManager.default.createDirectory(atPath: media.directory + "/single", withIntermediateDirectories: true)
        let single = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-i", media.directory + "/clip.mp4", "-c", "copy", "-f", "hls",
                                             "-hls_time", "2", "-hls_flags", "single_file", "-hls_playlist_type", "vod",
                                             media.directory + "/single/index.m3u8"])
        #expect(single.status == 0, "\(single.stderr)")
        let setup = try Box(label: "urlhonest", media: media.directory)
        defer { setup.close() }
        let daemon = try setup.daemon(refuseLocal: true)
        defer { daemon.process.stop(grace: 2) }
        for path in ["/moved/clip.mp4", "/media/hls/index.m3u8", "/media/single/index.m3u8"] {
            let status = try setup.play(path, waitForError: false)
            #expect(status == "200", "\(path): /play answered \(status)")
            #expect(setup.plays(past: 1), "\(path) plays under the policy: \(daemon.process.stderr.split(separator: "\n").filter { !$0.contains("control connection") && !$0.contains("/scrub") }.suffix(30).joined(separator: "\n"))")
        }
        let player = setup.originRequests.filter { $0.hasPrefix("/media/") && !$0.hasPrefix("/media/clip.mp4") && !$0.contains("swift-airplay") }
        #expect(player.isEmpty, "the player fetched from the origin itself: \(player)")
        #expect(setup.originRequests.contains { $0.hasPrefix("/media/single/index.ts swift-airplay") }, "byte ranges through the gateway")
        let moved = setup.originRequests.filter { $0.hasPrefix("/moved/clip.mp4 ") }
        #expect(!moved.isEmpty && moved.allSatisfy { $0.contains("swift-airplay") }, "only the box follows the redirect: \(moved)")
        #expect(setup.originRequests.contains { $0.hasPrefix("/media/clip.mp4 ") && !$0.contains("swift-airplay") },
                "the player opened where the redirect led: \(setup.originRequests)")
        #expect(setup.secretRequests.isEmpty)
    }

    @Test func withoutThePolicyTheSameOriginReachesTheBox() throws {
        let setup = try Box(label: "urlopen")
        defer { setup.close() }
        let daemon = try setup.daemon(refuseLocal: false)
        defer { daemon.process.stop(grace: 2) }
        _ = try setup.play("/redirect.m3u8")
        _ = try setup.play("/rewrite.m3u8")
        _ = try setup.play("/redirect.mp4")
        _ = try setup.play("/bounce.m3u8")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-redirected.ts") }, "the player follows a segment's redirect: \(setup.secretRequests)")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-redirected.m3u8") }, "\(setup.secretRequests)")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-segment.ts") }, "\(setup.secretRequests)")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-redirected.mp4") }, "the player follows redirects: \(setup.secretRequests)")
    }
}
