import AirPlayTesting
import Foundation
import Testing

/// The `airplay` sender CLI driving airplayd, and the old PyPI `airplay` client against airplayd.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SenderVideoTests {
    private func airplay(_ arguments: [String], state: String, timeout: Double = 40) throws -> CommandResult {
        try runCommand(try Products.executable("airplay"), arguments,
                       environment: ["XDG_STATE_HOME": state, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"],
                       timeout: timeout)
    }

    /// Over AirPlay 1 (`/play`, events on `/reverse`) and over AirPlay 2 (transient pairing,
    /// SETUP phase 1 with its event channel, RECORD, a binary-plist `/play`, the state polled
    /// from `/playback-info`), the same file plays to the end and the same events come out.
    @Test(arguments: [1, 2])
    func playALocalFileServedByTheSenderToTheEnd(protocolVersion: Int) throws {
        let media = try #require(VideoPlaybackTests.media)
        let state = Products.scratchDirectory("xdg")
        let config = state + "/airplayd.toml"
        try "airplay2 = \(protocolVersion == 2)\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", config])
        let started = monotonicSeconds()
        let result = try airplay(["play", media.directory + "/clip.mp4", "--to", "127.0.0.1:\(daemon.port)", "--json",
                                  "--protocol", "\(protocolVersion)"], state: state)
        if protocolVersion == 2 {
            #expect(daemon.process.stderr.contains("transient pairing") && daemon.process.stderr.contains("AirPlay 2 session setup"))
        }
        let took = monotonicSeconds() - started
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("{\"event\":\"playing\"}"))
        #expect(lines.last == "{\"event\":\"stopped\"}", "\(lines)")
        #expect(took > 7, "the file was served for the whole 8 s (\(took) s)")
        #expect(daemon.process.stderr.contains("video reached its end"))
    }

    /// A local HLS folder to airplayd, which advertises video, HLS and AirPlay 2 pairing in its
    /// `GET /info`: handed over as an iPhone hands it (`--playlists auto`), played to its end.
    /// Asked for URLs, the same folder is served by URL.
    @Test func playAnHLSFolderFromDisk() throws {
        let media = try #require(VideoPlaybackTests.media)
        let daemon = try LocalDaemon()
        let state = Products.scratchDirectory("xdg")
        let result = try airplay(["play", media.directory + "/hls", "--to", "127.0.0.1:\(daemon.port)", "--start", "5"], state: state)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("playing mlhls://localhost/index.m3u8"), "\(result.stdout)")
        #expect(result.stdout.contains("event: stopped"))
        let byURL = try airplay(["play", media.directory + "/hls", "--to", "127.0.0.1:\(daemon.port)", "--start", "5", "--playlists", "url"],
                                state: state)
        #expect(byURL.status == 0 && byURL.stdout.contains("playing http://") && byURL.stdout.contains("index.m3u8"), "\(byURL.stdout)\(byURL.stderr)")
    }

    @Test func controlCommandsAddressTheLastSession() throws {
        let media = try #require(VideoPlaybackTests.media)
        let daemon = try LocalDaemon()
        let state = Products.scratchDirectory("xdg")
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        let play = try airplay(["play", media.url("clip.mp4")] + to + ["--json"], state: state)
        #expect(play.status == 0, "\(play.stderr)")
        let session = try #require(try JSONSerialization.jsonObject(with: Data(play.stdout.utf8)) as? [String: Any])["session"] as? String
        let stored = try String(contentsOfFile: state + "/airplay/sessions.json", encoding: .utf8)
        #expect(stored.contains(try #require(session)))
        // The video plays before it is paused.
        #expect(poll(timeout: 10, interval: 0.2) {
            (try? airplay(["status"] + to + ["--json"], state: state))?.stdout.contains("\"state\":\"playing\"") == true
        }, "the video plays")

        #expect(try airplay(["pause"] + to, state: state).status == 0)
        let paused = try airplay(["status"] + to + ["--json"], state: state)
        #expect(paused.stdout.contains("\"state\":\"paused\""), "\(paused.stdout)")
        #expect(try airplay(["seek", "4"] + to, state: state).status == 0)
        let status = try airplay(["status"] + to + ["--json"], state: state)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(abs((object["position"] as? Double ?? 0) - 4) < 0.5)
        let back = try airplay(["skip", "-2"] + to + ["--json"], state: state)
        #expect(back.stdout.contains("\"position\":2"), "\(back.stdout)\(back.stderr)")
        #expect(try airplay(["resume"] + to, state: state).status == 0)
        #expect(try airplay(["rate", "1"] + to, state: state).status == 0)
        #expect(try airplay(["volume", "40"] + to, state: state).status == 0)
        let text = try airplay(["status"] + to, state: state)
        #expect(text.stdout.contains("/ 00:08  playing"), "\(text.stdout)")
        #expect(try airplay(["stop"] + to, state: state).status == 0)
        #expect(try airplay(["status"] + to + ["--json"], state: state).stdout.contains("\"state\":\"stopped\""))
    }

    @Test func failuresHaveDistinctExitCodes() throws {
        let daemon = try LocalDaemon()
        let state = Products.scratchDirectory("xdg")
        let unreachable = try airplay(["stop", "--to", "127.0.0.1:9"], state: state)
        #expect(unreachable.status == 69)
        let noAvahi = try airplay(["pause"], state: state)
        #expect(noAvahi.status == 69)
        #expect(noAvahi.stderr.contains("avahi-daemon"))
        let badFile = try airplay(["play", "/nonexistent/movie.mp4", "--to", "127.0.0.1:\(daemon.port)"], state: state)
        #expect(badFile.status == 65)
        let refused = try airplay(["seek", "3", "--to", "127.0.0.1:\(daemon.port)", "--json"], state: state)
        #expect(refused.status == 77, "nothing plays: the receiver answers 404")
        #expect(refused.stdout.contains("\"ok\":false"))
        let badURL = try airplay(["play", "http://127.0.0.1:1/missing.mp4", "--to", "127.0.0.1:\(daemon.port)", "--wait"], state: state)
        #expect(badURL.status == 77, "playback failed is reported: \(badURL.stderr)")
        #expect(badURL.stderr.contains("playback failed"))
    }

    @Test func thePyPIAirplayClientPlaysScrubsPausesAndStops() throws {
        let python = try Products.peerTool("python")
        let media = try #require(VideoPlaybackTests.media)
        // AirPlay 2 on: AirPlay 1 video (/play, /scrub, /rate, /stop in clear) works as before.
        let daemon = try LocalDaemon(extra: ["--airplay2", "on"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/airplay_pypi_client.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), media.url("clip.mp4")], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").last?.hasPrefix("OK ") == true, "\(result.stdout)")
    }
}
