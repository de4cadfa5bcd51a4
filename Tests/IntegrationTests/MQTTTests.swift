import AirPlayTesting
import Foundation
import Testing

/// A mosquitto broker (Debian) on a loopback port of its own.
final class Broker {
    let port: Int
    let directory: String
    private var process: ManagedProcess?

    init(directory: String) throws {
        self.directory = directory
        port = 20000 + Int.random(in: 0..<20000)
        try "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\n"
            .write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    func start() throws {
        process = try ManagedProcess(try #require(TestHost.which("mosquitto")), ["-c", directory + "/mosquitto.conf"],
                                     directory: directory, label: "mosquitto")
        guard poll(timeout: 10, { (try? runCommand("/usr/bin/mosquitto_pub", ["-p", String(port), "-t", "probe", "-n"], timeout: 5).status) == 0 }) else {
            throw TestHostError("mosquitto did not start: \(process?.stderr ?? "")")
        }
    }

    func stop() {
        process?.stop()
        process = nil
    }

    /// A subscriber printing `TOPIC|LENGTH|PAYLOAD-IN-HEX` lines (covers are binary).
    func subscribe(_ topics: [String]) throws -> ManagedProcess {
        let process = try ManagedProcess("/usr/bin/mosquitto_sub", ["-p", String(port), "-F", "%t|%l|%x"] + topics.flatMap { ["-t", $0] },
                                         directory: directory, label: "mosquitto_sub")
        Thread.sleep(forTimeInterval: 0.3)
        return process
    }

    deinit { stop() }
}

/// A subscriber's line for a text message.
func mqttLine(_ topic: String, _ text: String) -> String { "\(topic)|\(text.utf8.count)|" + mqttHex(text) }

/// Text as the subscriber prints its bytes.
func mqttHex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }

/// Now playing over MQTT, against mosquitto and its clients.
@Suite(.serialized) struct MQTTInteropTests {
    @Test func mqttShowsWhatPlaysTakesCommandsAndSurvivesABrokerRestart() throws {
        try TestHost.require(["mosquitto", "mosquitto_sub", "mosquitto_pub", "ffmpeg"])
        let directory = Products.scratchDirectory("mqtt")
        let broker = try Broker(directory: directory)
        let media = try TestMedia(seconds: 30)
        let all = try broker.subscribe(["homeassistant/#", "airplayd/test/#"])
        defer { all.stop() }
        try "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\ntopic = \"airplayd/test\"\n"
            .write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        var daemon: LocalDaemon? = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--airplay2", "off"])
        let port = try #require(daemon?.port)
        #expect(all.waitForOutput(mqttLine("airplayd/test/availability", "online"), timeout: 10, inStdout: true), "\(daemon?.process.stderr.suffix(800) ?? "")")
        #expect(all.waitForOutput("/title/config|", timeout: 5, inStdout: true), "Home Assistant discovery")
        #expect(all.stdout.contains(mqttHex("\"command_topic\":\"airplayd/test/remote\"")), "buttons command through the remote topic")

        // pyatv streams with text and a cover.
        let sweep = try #require(RAOPInteropTests.sweep)
        let cover = directory + "/cover.jpg"
        #expect(try runCommand(try #require(TestHost.which("ffmpeg")), ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=green:s=48x48",
                                                                          "-frames:v", "1", cover], timeout: 30).status == 0)
        let coverSize = try #require(FileManager.default.attributesOfItem(atPath: cover)[.size] as? Int)
        let pyatv = try ManagedProcess(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_stream_metadata.py", "127.0.0.1", String(port),
            "AABBCCDDEEFF", "cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68", sweep.directory + "/sweep.flac", cover,
        ], directory: directory, label: "pyatv")
        defer { pyatv.stop() }
        #expect(all.waitForOutput(mqttLine("airplayd/test/title", "Sweep Song"), timeout: 15, inStdout: true))
        #expect(all.waitForOutput("airplayd/test/cover|\(coverSize)|", timeout: 5, inStdout: true), "the cover, whole")
        #expect(all.waitForOutput(mqttLine("airplayd/test/state", "playing"), timeout: 5, inStdout: true))
        #expect(pyatv.waitForExit(timeout: 30) != nil)

        // A video; a command on TOPIC/remote pauses it.
        let control = try RawHTTPConnection(port: port)
        #expect(try control.request("POST", "/play", headers: ["X-Apple-Session-ID": "mqtt-video"],
                                    body: Array("Content-Location: \(media.url("clip.mp4"))\r\nStart-Position: 0\r\n".utf8)).status == 200)
        #expect(all.waitForOutput(mqttLine("airplayd/test/title", "clip"), timeout: 15, inStdout: true))
        #expect(poll(timeout: 10) {
            all.stdout.split(separator: "\n").last { $0.hasPrefix("airplayd/test/state|") } == Substring(mqttLine("airplayd/test/state", "playing"))
        })
        #expect(try runCommand("/usr/bin/mosquitto_pub", ["-p", String(broker.port), "-t", "airplayd/test/remote", "-m", "pause"], timeout: 5).status == 0)
        #expect(all.waitForOutput(mqttLine("airplayd/test/remote/result", "ok pause"), timeout: 5, inStdout: true), "\(all.stdout.suffix(500))")
        #expect(all.waitForOutput(mqttLine("airplayd/test/state", "paused"), timeout: 5, inStdout: true))
        let info = try control.request("GET", "/playback-info", headers: ["X-Apple-Session-ID": "mqtt-video"]).text
        #expect(info.contains("<key>rate</key>\n\t<real>0") || info.contains("<key>rate</key><real>0"), "the player itself paused: \(info.prefix(600))")
        #expect(try runCommand("/usr/bin/mosquitto_pub", ["-p", String(broker.port), "-t", "airplayd/test/remote", "-m", "dance"], timeout: 5).status == 0)
        #expect(all.waitForOutput(mqttLine("airplayd/test/remote/result", "error dance: unknown command"), timeout: 5, inStdout: true))

        // The broker goes away and comes back empty (no persistence): everything is published again.
        broker.stop()
        Thread.sleep(forTimeInterval: 2)
        try broker.start()
        let again = try broker.subscribe(["airplayd/test/#"])
        defer { again.stop() }
        #expect(again.waitForOutput(mqttLine("airplayd/test/availability", "online"), timeout: 35, inStdout: true), "reconnected with back-off")
        #expect(again.waitForOutput(mqttLine("airplayd/test/state", "paused"), timeout: 5, inStdout: true))
        // A daemon that stops says so.
        daemon = nil
        #expect(again.waitForOutput(mqttLine("airplayd/test/availability", "offline"), timeout: 10, inStdout: true))
    }
}
