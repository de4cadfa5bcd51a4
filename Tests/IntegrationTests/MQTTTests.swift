import AirPlayTesting
import Foundation
import Testing

/// A mosquitto broker (Debian) on a loopback port of its own.
final class Broker {
    let port: Int
    let directory: String
    /// What a client needs beyond the port (TLS, credentials).
    let clientArguments: [String]
    private var process: ManagedProcess?

    /// A broker; `listener` adds to its listener (TLS, a password file) and `clientArguments`
    /// is what its clients then need.
    init(directory: String, listener: String = "allow_anonymous true", clientArguments: [String] = []) throws {
        self.directory = directory
        self.clientArguments = ["-h", "127.0.0.1"] + clientArguments
        // Below the kernel's ephemeral range (32768 on): a port drawn from it was once taken by
        // another test's connection between the draw and mosquitto's bind.
        port = 20000 + Int.random(in: 0..<12000)
        // mosquitto's default log, and each subscription it takes (what `subscribe` waits for).
        let log = ["error", "warning", "notice", "information", "subscribe"].map { "log_type \($0)\n" }.joined()
        try "listener \(port) 127.0.0.1\n\(listener)\npersistence false\n\(log)"
            .write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    func start() throws {
        process = try ManagedProcess(try #require(TestHost.which("mosquitto")), ["-c", directory + "/mosquitto.conf"],
                                     directory: directory, label: "mosquitto")
        let probe = ["-p", String(port), "-t", "probe", "-n"] + clientArguments
        guard poll(timeout: 10, { (try? runCommand("/usr/bin/mosquitto_pub", probe, timeout: 5).status) == 0 }) else {
            throw TestHostError("mosquitto did not start: \(process?.stderr.suffix(1000) ?? "")")
        }
    }

    func stop() {
        process?.stop()
        process = nil
    }

    /// A subscriber printing `TOPIC|LENGTH|PAYLOAD-IN-HEX` lines (covers are binary).
    func subscribe(_ topics: [String]) throws -> ManagedProcess {
        let id = "sub-\(UUID().uuidString.prefix(8))"
        let process = try ManagedProcess("/usr/bin/mosquitto_sub",
                                         ["-p", String(port), "-i", id, "-F", "%t|%l|%x"] + clientArguments + topics.flatMap { ["-t", $0] },
                                         directory: directory, label: "mosquitto_sub")
        // The broker logs `ID QOS TOPIC` once it holds each subscription: what is published from then on reaches it.
        guard poll(timeout: 10, {
            let lines = (self.process?.stderr ?? "").split(separator: "\n")
            return topics.allSatisfy { topic in lines.contains { $0.hasSuffix(": \(id) 0 \(topic)") } }
        }) else {
            throw TestHostError("mosquitto_sub did not subscribe: \(process.stderr)\(self.process?.stderr.suffix(1000) ?? "")")
        }
        return process
    }

    deinit { stop() }
}

/// A subscriber's line for a text message.
func mqttLine(_ topic: String, _ text: String) -> String { "\(topic)|\(text.utf8.count)|" + mqttHex(text) }

/// Text as the subscriber prints its bytes.
func mqttHex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }

/// Now playing over MQTT, against mosquitto and its clients.
@Suite(.serialized, .timeLimit(.minutes(10))) struct MQTTInteropTests {
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
        // The child's own reports (four a second) have replaced what the pause said at once.
        Thread.sleep(forTimeInterval: 1)
        let later = try control.request("GET", "/playback-info", headers: ["X-Apple-Session-ID": "mqtt-video"]).text
        #expect(later.contains("<key>rate</key>\n\t<real>0") || later.contains("<key>rate</key><real>0"), "the player itself paused: \(later.prefix(600))")
        #expect(try runCommand("/usr/bin/mosquitto_pub", ["-p", String(broker.port), "-t", "airplayd/test/remote", "-m", "dance"], timeout: 5).status == 0)
        #expect(all.waitForOutput(mqttLine("airplayd/test/remote/result", "error dance: unknown command"), timeout: 5, inStdout: true))

        // The broker goes away and comes back empty (no persistence): everything is published again.
        broker.stop()
        Thread.sleep(forTimeInterval: 2)   // the broker stays away a while, as a restarted one does
        try broker.start()
        let again = try broker.subscribe(["airplayd/test/#"])
        defer { again.stop() }
        #expect(again.waitForOutput(mqttLine("airplayd/test/availability", "online"), timeout: 35, inStdout: true), "reconnected with back-off")
        #expect(again.waitForOutput(mqttLine("airplayd/test/state", "paused"), timeout: 5, inStdout: true))
        // A daemon that stops says so.
        daemon = nil
        #expect(again.waitForOutput(mqttLine("airplayd/test/availability", "offline"), timeout: 10, inStdout: true))
    }

    /// A command left retained on the broker (by a careless client, or an attacker) is handed
    /// to every new subscriber: it must not run when the daemon (re)subscribes, or every
    /// restart would replay it. Only commands published while the daemon listens run.
    @Test func aRetainedCommandIsNotRunWhenTheDaemonSubscribes() throws {
        try TestHost.require(["mosquitto", "mosquitto_sub", "mosquitto_pub"])
        let directory = Products.scratchDirectory("mqtt-retained")
        let broker = try Broker(directory: directory)
        #expect(try runCommand("/usr/bin/mosquitto_pub", ["-p", String(broker.port), "-t", "airplayd/test/remote", "-r", "-m", "stop"],
                               timeout: 5).status == 0)
        let results = try broker.subscribe(["airplayd/test/availability", "airplayd/test/remote/result"])
        defer { results.stop() }
        try "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\ntopic = \"airplayd/test\"\n"
            .write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--airplay2", "off"])
        #expect(results.waitForOutput(mqttLine("airplayd/test/availability", "online"), timeout: 10, inStdout: true),
                "\(daemon.process.stderr.suffix(800))")
        // The retained command reached the daemon with its subscription; a live one follows it.
        Thread.sleep(forTimeInterval: 1)
        #expect(try runCommand("/usr/bin/mosquitto_pub", ["-p", String(broker.port), "-t", "airplayd/test/remote", "-m", "dance"],
                               timeout: 5).status == 0)
        #expect(results.waitForOutput(mqttLine("airplayd/test/remote/result", "error dance: unknown command"), timeout: 5, inStdout: true))
        let answered = results.stdout.split(separator: "\n").filter { $0.hasPrefix("airplayd/test/remote/result|") }
        #expect(answered.count == 1, "only the live command was answered: \(answered)")
    }

    /// A broker that wants TLS and a password: the `[mqtt]` table's `tls_ca_file`, `username`
    /// and `password` get the daemon in; a wrong password is refused and said so.
    @Test func mqttLogsInWithAPasswordOverTLS() throws {
        try TestHost.require(["mosquitto", "mosquitto_sub", "mosquitto_passwd", "openssl"])
        let directory = Products.scratchDirectory("mqtt-tls")
        let openssl = try #require(TestHost.which("openssl"))
        let file = { (name: String) in directory + "/" + name }
        for job in [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "1",
             "-subj", "/CN=airplay test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"],
        ] {
            #expect(try runCommand(openssl, job, timeout: 60).status == 0)
        }
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: file("san.ext"), atomically: true, encoding: .utf8)
        #expect(try runCommand(openssl, ["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
                                         "-CAcreateserial", "-out", file("server.pem"), "-days", "1", "-extfile", file("san.ext")],
                               timeout: 60).status == 0)
        #expect(try runCommand(try #require(TestHost.which("mosquitto_passwd")), ["-b", "-c", directory + "/passwd", "box", "s3cret"],
                               timeout: 10).status == 0)
        let broker = try Broker(directory: directory, listener: """
            cafile \(directory)/ca.pem
            certfile \(directory)/server.pem
            keyfile \(directory)/server.key
            allow_anonymous false
            password_file \(directory)/passwd
            user root
            """, clientArguments: ["--cafile", directory + "/ca.pem", "-u", "box", "-P", "s3cret"])
        let watch = try broker.subscribe(["airplayd/tls/#"])
        defer { watch.stop() }
        func config(password: String) -> String {
            "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\ntopic = \"airplayd/tls\"\nusername = \"box\"\n"
                + "password = \"\(password)\"\ntls_ca_file = \"\(directory)/ca.pem\"\n"
        }
        try config(password: "s3cret").write(toFile: directory + "/good.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/good.toml", "--airplay2", "off"])
        #expect(watch.waitForOutput(mqttLine("airplayd/tls/availability", "online"), timeout: 10, inStdout: true),
                "\(daemon.process.stderr.suffix(800))")
        try config(password: "wrong").write(toFile: directory + "/bad.toml", atomically: true, encoding: .utf8)
        let refused = try LocalDaemon(extra: ["--config", directory + "/bad.toml", "--airplay2", "off"])
        #expect(refused.process.waitForOutput("MQTT broker refused the connection", timeout: 10), "\(refused.process.stderr.suffix(800))")
    }
}
