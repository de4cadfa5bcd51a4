import AirPlayTesting
import Foundation
import Testing

/// AirPlay 2 data streams (type 130) against pyatv's own remote-control tunnel, the one it
/// opens to Apple TVs: a remote-control-only session, RECORD, then the data stream, whose
/// MediaRemote messages each get their reply. What plays meanwhile plays on, untouched.
/// `Protocol/airplay2.md` §18.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DataStreamInteropTests {
    @Test func pyatvsTunnelIsAnsweredWhileAStreamPlaysOn() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let directory = Products.scratchDirectory("datastream")
        let raw = directory + "/out.pcm"
        try "airplay2 = true\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--audio-output", "raw:\(raw)"])
        let stream = try ManagedProcess(try Products.executable("airplay"), ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)",
                                                                              "--protocol", "1"],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: directory, label: "airplay")
        defer { stream.stop() }
        #expect(daemon.process.waitForOutput("RECORD", timeout: 10) || daemon.process.waitForOutput("audio session", timeout: 5))
        let tunnel = try runCommand(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_datastream.py", String(daemon.port),
        ], timeout: 60)
        #expect(tunnel.stdout.contains("\"ok\": true") && tunnel.stdout.contains("\"replies\": 2"), "\(tunnel.stdout)\(tunnel.stderr.suffix(2000))")
        let log = daemon.process.stderr
        #expect(log.contains("AirPlay 2 remote-control session") && log.contains("AirPlay 2 data stream listening"), "\(log.suffix(3000))")
        #expect(log.contains("MediaRemote DEVICE_INFO"), "the message's type, at debug level")
        #expect(daemon.process.waitForOutput("AirPlay 2 data stream ended", timeout: 5) && daemon.process.stderr.contains("messages=2"))

        // The stream was never taken over: it plays to its end, bit for bit.
        #expect(stream.waitForExit(timeout: 30) == 0, "\(stream.stderr.suffix(1500))")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        #expect(!daemon.process.stderr.contains("taken over"))
        print("measure: pyatv's remote-control tunnel: data stream answered (\(tunnel.stdout.trimmingCharacters(in: .whitespacesAndNewlines))), the stream beside it \(String(format: "%.2f", comparison.exact * 100)) % bit-exact")
    }

    /// A command on the data stream goes where the box's other remotes' go: the phone's
    /// "pause" pauses the video the box plays, and is answered Success; a command the box does
    /// not take ("like this track") is answered NotSupported.
    @Test func aCommandOnTheStreamPausesWhatTheBoxPlays() throws {
        let media = try TestMedia(seconds: 30)
        let directory = Products.scratchDirectory("datastream-command")
        try "airplay2 = true\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--audio-output", "raw:/dev/null"])
        let control = try RawHTTPConnection(port: daemon.port)
        #expect(try control.request("POST", "/play", headers: ["X-Apple-Session-ID": "datastream-video"],
                                    body: Array("Content-Location: \(media.url("clip.mp4"))\r\nStart-Position: 0\r\n".utf8)).status == 200)
        func rate() -> String {
            let info = (try? control.request("GET", "/playback-info", headers: ["X-Apple-Session-ID": "datastream-video"]).text) ?? ""
            return info.contains("<key>rate</key>\n\t<real>1") ? "1" : info.contains("<key>rate</key>\n\t<real>0") ? "0" : "?"
        }
        #expect(poll(timeout: 15) { rate() == "1" }, "the video plays")
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_datastream.py"
        let pause = try runCommand(try Products.peerTool("python3"), [script, String(daemon.port), "pause"], timeout: 60)
        #expect(pause.stdout.contains("\"ok\": true") && pause.stdout.contains("\"identifier\": \"command-1\", \"sendError\": 0, \"handlerReturnStatus\": 0"),
                "\(pause.stdout)\(pause.stderr.suffix(1500))\n\(daemon.process.stderr.suffix(2000))")
        #expect(poll(timeout: 5) { rate() == "0" }, "the video paused")
        let like = try runCommand(try Products.peerTool("python3"), [script, String(daemon.port), "liketrack"], timeout: 60)
        #expect(like.stdout.contains("\"sendError\": 10"), "NotSupported: \(like.stdout)")
        print("measure: a pause on the data stream: \(pause.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
}
