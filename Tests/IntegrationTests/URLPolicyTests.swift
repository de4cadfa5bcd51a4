import AirPlayTesting
import Foundation
import Testing

/// `video_refuse_local_urls` covers every URL the box fetches for a sender, not only the
/// `/play` host. A hostile origin (in a namespace of its own, so it is not local) redirects to
/// the box's loopback, and serves playlists whose variants, segments and keys live there. With
/// the policy, the service on the box's loopback hears nothing. Without it, the same plays reach
/// that service, which proves the test's servers would catch a lapse.
@Suite(.serialized) struct URLPolicyTests {
    struct Box {
        let box: TestHost
        let origin: TestHost
        let secretLog: String
        let originBase: String
        let curl: String

        init(label: String) throws {
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
            let server = try origin.spawn("/usr/bin/python3", [script, "origin", "10.97.1.1", "0", "http://127.0.0.1:\(secretPort)"], label: "origin")
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
            let status = try box.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "X-Apple-Session-ID: policy",
                                            "--data-binary", "Content-Location: \(originBase)\(path)\nStart-Position: 0\n",
                                            "http://127.0.0.1:7000/play"]).stdout
            var info = ""
            _ = poll(timeout: 10, interval: 0.25) {
                info = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/playback-info"]).stdout) ?? ""
                return info.contains("<key>error</key>")
            }
            return (status, info)
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
        for (path, reason) in [("/redirect.m3u8", "loopback"), ("/master.m3u8", "loopback"), ("/rewrite.m3u8", "loopback"),
                               ("/keyed.m3u8", nil), ("/redirect.mp4", nil)] {
            let (status, info) = try setup.play(path)
            #expect(status == "200", "\(path): /play answered \(status)")
            #expect(info.contains("<key>error</key>"), "\(path) must fail: \(info)")
            if let reason { #expect(info.contains(reason), "\(path): the error says why: \(info)") }
            #expect(setup.secretRequests.isEmpty, "\(path) reached the box's loopback: \(setup.secretRequests)")
        }
    }

    @Test func withoutThePolicyTheSameOriginReachesTheBox() throws {
        let setup = try Box(label: "urlopen")
        defer { setup.close() }
        let daemon = try setup.daemon(refuseLocal: false)
        defer { daemon.process.stop(grace: 2) }
        _ = try setup.play("/redirect.m3u8")
        _ = try setup.play("/rewrite.m3u8")
        _ = try setup.play("/redirect.mp4")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-redirected.m3u8") }, "\(setup.secretRequests)")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-segment.ts") }, "\(setup.secretRequests)")
        #expect(poll(timeout: 10) { setup.secretRequests.contains("/secret-redirected.mp4") }, "the player follows redirects: \(setup.secretRequests)")
    }
}
