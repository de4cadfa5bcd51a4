import AirPlayTesting
import Foundation
import Testing

/// An iPhone's video apps on the box: YouTube hands its video over as
/// `mlhls://localhost/master.m3u8` and serves the playlists itself over FCUP (condensed media
/// playlists, an English and a French dub), while the box fetches the segments from the origin,
/// another host; Safari hands over a plain `http://` master. The phone is a stand-in written
/// from the documented facts (`peers/iphone_video_sender.py`), proven first against UxPlay,
/// the receiver real iPhones' video is known to work with.
@Suite(.serialized, .timeLimit(.minutes(10))) struct IPhoneVideoTests {
    /// The phone (and YouTube's origin) at 10.79.0.1, the box at 10.79.0.2.
    struct Lab {
        let hosts: LinkedHosts
        let origin: String
        let media: String

        init(label: String) throws {
            hosts = try LinkedHosts(label: label, prefix: "10.79.0")
            media = try Self.makeMedia(in: hosts.sender.directory)
            let server = try hosts.sender.spawn(try Products.peerTool("python"), [Self.script, "origin", media], label: "origin")
            var port: Int?
            poll(timeout: 10) {
                port = Int(server.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                return port != nil
            }
            origin = "http://10.79.0.1:\(try #require(port, "the origin did not start: \(server.stderr)"))"
        }

        static let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/iphone_video_sender.py"

        /// 40 s of H.264 video and two AAC dubs (English, French) as ffmpeg's HLS, 2 s segments.
        static func makeMedia(in directory: String) throws -> String {
            let media = directory + "/media"
            try FileManager.default.createDirectory(atPath: media + "/groups", withIntermediateDirectories: true)
            let made = try runCommand(try #require(TestHost.which("ffmpeg")), [
                "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100",
                "-t", "40", "-map", "0:v", "-map", "1:a", "-map", "2:a", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "2",
                "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8",
                "-var_stream_map", "a:0,agroup:aud,language:en,name:English,default:yes a:1,agroup:aud,language:fr,name:French v:0,agroup:aud",
                media + "/groups/s%v/index.m3u8",
            ], timeout: 120)
            guard made.status == 0 else { throw TestHostError("ffmpeg: \(made.stderr)") }
            return media
        }

        /// UxPlay in the box, as the peers' README starts it (its HTTP port is then 7001), its
        /// mDNS responder on the lab's link only. `-reset 0`: the stand-in opens no RTSP session
        /// whose missing `/feedback` would end the video after 15 s.
        func startUxPlay() throws -> ManagedProcess {
            let root = ProcessInfo.processInfo.environment["AIRPLAY_PEERS"] ?? "/var/cache/airplay-peers"
            let uxplay = root + "/uxplay-1.73.6-2ece579/bin/uxplay"
            guard FileManager.default.isExecutableFile(atPath: uxplay) else {
                throw TestHostError("\(uxplay) is missing: tools/setup-deps --test builds it (../shared/peers/build uxplay)")
            }
            // Its responder sends to 224.0.0.251 and needs a route there: the lab's link.
            let link = try hosts.box.run("/usr/bin/python3", ["-c", "import socket; print([n for i, n in socket.if_nameindex() if n != 'lo'][0])"])
            _ = try hosts.box.run(try #require(TestHost.which("ip")), ["route", "add", "224.0.0.0/4", "dev",
                                                                       link.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
            let process = try hosts.box.spawn(uxplay, ["-hls", "-nh", "-n", "UxPlay Box", "-p", "7000", "-vs", "fakesink", "-as", "fakesink",
                                                       "-d", "-reset", "0"], label: "uxplay")
            guard poll(timeout: 15, { (process.stdout + process.stderr).contains("Initialized server socket") || !process.isRunning }),
                  process.isRunning else {
                throw TestHostError("uxplay did not start: \(process.stdout.suffix(2000))\(process.stderr.suffix(1000))")
            }
            return process
        }

        /// The phone's session against the box's `port`: its JSON report.
        func phone(port: Int, mode: String = "youtube", eventReplies: String = "http", rtsp: Bool = false) throws -> [String: Any] {
            let result = try hosts.sender.run(try Products.peerTool("python"), [
                Self.script, "phone", "10.79.0.2", String(port), "--origin", origin, "--media", media, "--mode", mode,
                "--event-replies", eventReplies, "--rtsp", rtsp ? "yes" : "no",
            ], timeout: 120)
            let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            guard let report = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestHostError("the phone stand-in failed: \(result.stdout.suffix(2000))\(result.stderr.suffix(2000))")
            }
            return report
        }

        func close() { hosts.close() }
    }

    /// What every receiver must do with a YouTube hand-over: play (the position advances at least
    /// 9 s in 12 s), land a scrub to 24 s, hold still at rate 0, stop; every playlist came over
    /// FCUP, ids from 1, each answer taken.
    static func expectYouTubePlayed(_ report: [String: Any], _ who: String) {
        let fcup = report["fcup"] as? [[String: Any]] ?? []
        #expect(report["play"] as? Int == 200, "\(who): \(report)")
        #expect(fcup.compactMap { $0["id"] as? Int } == Array(1...max(1, fcup.count)) && fcup.count >= 3, "\(who): \(fcup)")
        #expect(fcup.first?["url"] as? String == "mlhls://localhost/master.m3u8", "\(who): \(fcup)")
        #expect(fcup.allSatisfy { $0["status"] as? Int == 200 }, "\(who): \(fcup)")
        #expect((report["advanced"] as? Double ?? 0) >= 9, "\(who): \(report)")
        #expect((23.5...30).contains(report["scrubLanded"] as? Double ?? -1), "\(who): \(report)")
        #expect(abs(report["heldFor2s"] as? Double ?? 9) < 0.3, "\(who): \(report)")
        #expect(report["stop"] as? Int == 200 && (report["errors"] as? [String])?.isEmpty == true, "\(who): \(report)")
        print("measure: \(who): YouTube hand-over, /play to first position \(report["firstFrameSeconds"] ?? "?") s, \(report["advanced"] ?? "?") s played in \(report["advancedOver"] ?? "?") s, scrub landed at \(report["scrubLanded"] ?? "?") s, \(fcup.count) FCUP requests")
    }

    /// The stand-in against UxPlay: the hand-over plays there as iPhones' does, and a
    /// Safari-style `http://` master plays too.
    @Test func theIPhoneStandInPlaysOnUxPlay() throws {
        let lab = try Lab(label: "iphone-uxplay")
        defer { lab.close() }
        let uxplay = try lab.startUxPlay()
        Self.expectYouTubePlayed(try lab.phone(port: 7001), "UxPlay")
        #expect((uxplay.stdout + uxplay.stderr).contains("fcup_request send"), "\(uxplay.stdout.suffix(3000))")
        let safari = try lab.phone(port: 7001, mode: "url")
        #expect(safari["play"] as? Int == 200 && (safari["advanced"] as? Double ?? 0) >= 9, "UxPlay, Safari: \(safari)")
        #expect(uxplay.isRunning)
    }

    /// The same phone into airplayd, answering on the event channel with `EVENT/1.0 200 OK`,
    /// with the box set to French (`video_language = "fr"`): it plays, the French dub's playlist is
    /// the audio one asked for, the state events come in order, rate 1 plays on after rate 0;
    /// and a Safari-style `http://` master plays too. The phone also holds an AirPlay 2 RTSP
    /// session (transient pair-verify, SETUP phase 1) silent all along, as iOS 27 does while a
    /// video plays: with `audio_session_timeout = 5` it is still open after the 25 s video,
    /// kept alive by the video's own requests. Then a playlist: an item near its end with the
    /// next queued (`playlistInsert`), which plays when it ends, with no `stopped` between.
    @Test func anIPhonesYouTubeVideoPlaysOnAirplayd() throws {
        let lab = try Lab(label: "iphone-airplayd")
        defer { lab.close() }
        let config = lab.hosts.box.directory + "/airplayd.toml"
        try "video_language = \"fr\"\naudio_session_timeout = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: lab.hosts.box, extra: [
            "--config", config, "--audio-output", "fakesink sync=true", "--video-sink", "fakesink sync=true", "--ptp", "off",
        ])
        let report = try lab.phone(port: 7000, eventReplies: "event", rtsp: true)
        Self.expectYouTubePlayed(report, "airplayd")
        #expect(report["rtspSetup"] as? Int == 200 && report["rtspOpenAtEnd"] as? Bool == true, "\(report)")
        let asked = (report["fcup"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
        #expect(asked.contains("mlhls://localhost/itag/141/mediadata.m3u8") && !asked.contains("mlhls://localhost/itag/140/mediadata.m3u8"),
                "the French dub, not the English one: \(asked)")
        #expect((report["playedAfterResume"] as? Double ?? 0) >= 1.5, "\(report)")
        // The states in order: loading, playing (a scrub may rebuffer: loading, playing again),
        // paused at rate 0, playing at rate 1, and one stopped at the end.
        let events = report["events"] as? [String] ?? []
        let paused = events.firstIndex(of: "paused") ?? -1
        #expect(events.prefix(2) == ["loading", "playing"] && paused > 1 && events.dropFirst(paused + 1).first == "playing"
                && events.last == "stopped" && events.filter { $0 == "stopped" }.count == 1, "\(report)")
        let safari = try lab.phone(port: 7000, mode: "url")
        #expect(safari["play"] as? Int == 200 && (safari["advanced"] as? Double ?? 0) >= 9, "airplayd, Safari: \(safari)")
        // A playlist: the next item, queued with playlistInsert, plays when the first ends.
        let queue = try lab.phone(port: 7000, mode: "queue")
        #expect(queue["play"] as? Int == 200 && queue["playlistInsert"] as? Int == 200, "\(queue)")
        #expect((queue["nextAdvanced"] as? Double ?? 0) >= 2 && (queue["nextStartedAt"] as? Double ?? -1) >= 1, "\(queue)")
        #expect(!(queue["events"] as? [String] ?? []).dropLast().contains("stopped"), "no stop between the items: \(queue)")
        #expect(daemon.process.stderr.contains("video next item"), "\(daemon.process.stderr.suffix(3000))")
        #expect(daemon.process.isRunning, "\(daemon.process.stderr.suffix(3000))")
        #expect(daemon.process.stderr.contains("fcup request id=1"), "\(daemon.process.stderr.suffix(3000))")
    }

    /// What the box must survive from a phone: FairPlay video (`/fp-setup2`: 421 with the
    /// reason), a hand-over whose playlist is FairPlay-protected (refused with the reason, the
    /// phone told `stopped`), and a quality change while a playlist request is unanswered
    /// (`playlistRemove` of the playing item, then the late answer: 200, nothing breaks; UxPlay
    /// 1.73.6 aborts on the next `/action` there, #545, so this runs on airplayd only).
    @Test func hostileHandOversAreRefusedAndSurvived() throws {
        let lab = try Lab(label: "iphone-hostile")
        defer { lab.close() }
        let daemon = try RunningDaemon.start(in: lab.hosts.box, extra: [
            "--audio-output", "fakesink sync=true", "--video-sink", "fakesink sync=true", "--ptp", "off",
        ])
        let report = try lab.phone(port: 7000, mode: "hostile")
        #expect(report["fpSetup2"] as? Int == 421, "\(report)")
        #expect(report["drmPlay"] as? Int == 200 && (report["drmEvents"] as? [String])?.last == "stopped", "\(report)")
        #expect(daemon.process.stderr.contains("FairPlay-protected video (skd:// keys) cannot be played here"),
                "\(daemon.process.stderr.suffix(3000))")
        #expect(report["withheld"] as? [String] == ["mlhls://localhost/itag/136/mediadata.m3u8"], "\(report)")
        #expect(report["playlistRemove"] as? Int == 200 && report["lateAnswer"] as? Int == 200, "\(report)")
        #expect(report["serverInfoAfter"] as? Int == 200 && report["playbackInfoAfter"] as? Int == 200, "\(report)")
        #expect(daemon.process.isRunning && (report["errors"] as? [String])?.isEmpty == true, "\(report)")
    }

    /// `airplay play DIR` hands a local HLS video over as an iPhone does (the playlists over
    /// FCUP, the segments from its own media server) to the receivers that advertise it in
    /// `GET /info` (`--playlists auto`: video, HLS and FairPlay setup or AirPlay 2 pairing):
    /// into UxPlay (`-hls`) and into airplayd, each plays, lands a seek and stops when
    /// `airplay stop` says so.
    @Test func airplayPlayHandsALocalVideoOver() throws {
        let lab = try Lab(label: "airplay-fcup")
        defer { lab.close() }
        let uxplay = try lab.startUxPlay()
        let daemon = try RunningDaemon.start(in: lab.hosts.box, port: 7100, extra: [
            "--audio-output", "fakesink sync=true", "--video-sink", "fakesink sync=true", "--ptp", "off",
        ])
        for (name, port) in [("UxPlay", 7001), ("airplayd", 7100)] {
            let state = lab.hosts.sender.directory + "/state-\(port)"
            let environment = ["XDG_STATE_HOME": state]
            let airplay = try Products.executable("airplay")
            let to = ["--to", "10.79.0.2:\(port)"]
            let play = try lab.hosts.sender.spawn(airplay, ["play", lab.media + "/groups/master.m3u8", "--json",
                                                            "--protocol", "1"] + to,
                                                  environment: environment, label: "airplay-play")
            func position() -> Double {
                let result = try? lab.hosts.sender.run(airplay, ["status", "--json"] + to, environment: environment, timeout: 10)
                let object = (try? JSONSerialization.jsonObject(with: Data((result?.stdout ?? "").utf8))) as? [String: Any]
                return object?["position"] as? Double ?? -1
            }
            #expect(poll(timeout: 20, interval: 0.5) { position() >= 3 }, "\(name): \(play.stdout)\(play.stderr)")
            let seek = try lab.hosts.sender.run(airplay, ["seek", "24"] + to, environment: environment)
            #expect(seek.status == 0, "\(name): \(seek.stderr)")
            #expect(poll(timeout: 10, interval: 0.5) { (23.5...32).contains(position()) }, "\(name): position \(position())")
            let stop = try lab.hosts.sender.run(airplay, ["stop"] + to, environment: environment)
            #expect(stop.status == 0, "\(name): \(stop.stderr)")
            #expect(play.waitForExit(timeout: 20) != nil, "\(name): airplay play ends with the video: \(play.stdout)")
            #expect(play.stdout.contains(#"mlhls:\/\/localhost\/master.m3u8"#), "\(name): \(play.stdout)")
        }
        #expect((uxplay.stdout + uxplay.stderr).contains("fcup_request send"))
        #expect(daemon.process.stderr.contains("fcup request id=1"), "\(daemon.process.stderr.suffix(2000))")

        // `airplay conformance --profile apple-video`: airplayd follows the hand-over in every
        // step; UxPlay's deviations are named (and it gets as far as the playlists).
        for (name, port) in [("airplayd", 7100), ("UxPlay", 7001)] {
            let run = try lab.hosts.sender.run(try Products.executable("airplay"), [
                "conformance", "10.79.0.2:\(port)", "--profile", "apple-video", "--json", "--browse-seconds", "0.5",
            ], timeout: 90)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)\(run.stderr)")
            let checks = report["checks"] as? [[String: Any]] ?? []
            let deviations = checks.filter { $0["result"] as? String == "fail" }.map { "\($0["id"] ?? "?"): \($0["detail"] ?? "")" }
            print("measure: conformance --profile apple-video against \(name): \(report["passed"] ?? "?") passed, \(report["failed"] ?? "?") failed\(deviations.isEmpty ? "" : ": " + deviations.joined(separator: "; "))")
            #expect(checks.count == 12, "\(name): \(run.stdout)")
            #expect(checks.first { $0["id"] as? String == "apple-video.action-master" }?["result"] as? String == "pass", "\(name): \(run.stdout)")
            if name == "airplayd" { #expect(deviations.isEmpty && run.status == 0, "\(deviations)") }
        }
    }
}
