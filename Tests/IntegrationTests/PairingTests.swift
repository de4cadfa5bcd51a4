import AirPlayCrypto
import AirPlayPairing
import AirPlayTesting
import Foundation
import Testing

/// HAP pairing against pyatv (PyPI), the sender nobody here wrote: `atvremote pair` with the
/// box's PIN, pair-verify with the credentials it stored, transient pairing, and what
/// `access = "paired"` refuses to everyone else.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PairingInteropTests {
    /// A daemon with pairing turned on through its configuration file.
    struct PairingBox {
        let daemon: LocalDaemon
        let deviceID: String
        let features: String
        let stateDirectory: String

        init(pin: String = "2468", access: String = "paired") throws {
            let directory = Products.scratchDirectory("pairing")
            let config = directory + "/airplayd.toml"
            try "pin = \"\(pin)\"\naccess = \"\(access)\"\nairplay2 = true\n".write(toFile: config, atomically: true, encoding: .utf8)
            stateDirectory = directory + "/state"
            // The last --state-dir wins over LocalDaemon's own.
            daemon = try LocalDaemon(extra: ["--config", config, "--state-dir", stateDirectory])
            let log = daemon.process.stderr.split(separator: "\n")
            deviceID = String(try #require(log.first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first))
            features = String(try #require(log.first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first))
        }

        /// atvremote's flags for this box, as its `_airplay._tcp` record describes it.
        var atvremote: [String] {
            // --storage none: pyatv would otherwise keep the credentials in ~/.pyatv.conf under this
            // device id and use them against every later daemon of this machine.
            ["--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(daemon.port), "--protocol", "airplay", "--id", deviceID,
             "--service-properties", "|deviceid=\(deviceID)|features=\(features)|flags=0x204|model=airplayd1,1|srcvers=220.68|protovers=1.0"]
        }

        /// `atvremote … pair`, typing `pin` at its prompt; the credentials it prints, if any.
        func pair(typing pin: String) throws -> (credentials: String?, output: String) {
            let atvremote = try Products.peerTool("atvremote")
            let command = "echo \(pin) | '\(atvremote)' " + self.atvremote.map { "'\($0)'" }.joined(separator: " ") + " pair"
            let result = try runCommand("/bin/sh", ["-c", command], timeout: 60)
            let output = result.stdout + result.stderr
            let credentials = output.split(separator: "\n").first { $0.contains("You may now use these credentials:") }?
                .split(separator: " ").last.map(String.init)
            return (credentials, output)
        }

        /// One request over an encrypted connection that pyatv verified with `credentials` ("transient" for transient pairing).
        func verifiedRequest(_ credentials: String, _ method: String, _ path: String, body: [UInt8]? = nil) throws -> [String: Any] {
            let python = try Products.peerTool("python3")
            let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_verified_request.py"
            let hex = body.map { $0.map { String(format: "%02x", $0) }.joined() }
            let result = try runCommand(python, [script, String(daemon.port), credentials, method, path] + (hex.map { [$0] } ?? []), timeout: 40)
            let line = try #require(result.stdout.split(separator: "\n").last, "\(result.stdout)\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result.stdout)\(result.stderr)")
        }
    }

    @Test func atvremotePairsWithThePINAndVerifiesWithItsCredentials() throws {
        let box = try PairingBox()
        // What a sender reads before pairing: HAP pairing offered, pairing required.
        let info = try RawHTTPConnection(port: box.daemon.port).request("GET", "/info").text
        #expect(info.contains("<key>pk</key>") && info.contains("<key>pi</key>"), "\(info)")

        let (credentials, output) = try box.pair(typing: "2468")
        let stored = try #require(credentials, "pyatv printed no credentials:\n\(output)\n\(box.daemon.process.stderr.suffix(3000))")
        #expect(stored.split(separator: ":").count == 4, "HAP credentials are ltpk:ltsk:atv_id:client_id")
        #expect(box.daemon.process.waitForOutput("paired with a new controller", timeout: 5))
        let pairings = try String(contentsOfFile: box.stateDirectory + "/pairings.json", encoding: .utf8)
        let clientID = String(decoding: try #require(VectorDocument.bytes(hex: String(stored.split(separator: ":")[3]))), as: UTF8.self)
        #expect(pairings.contains(clientID), "\(pairings)")

        // pyatv's pair-verify, then requests in encrypted frames; the receiver answers both.
        let verified = try box.verifiedRequest(stored, "GET", "/info")
        #expect(verified["ok"] as? Bool == true, "\(verified)")
        let responses = try #require(verified["responses"] as? [[String: Any]])
        #expect(responses.count == 2 && responses.allSatisfy { $0["status"] as? Int == 200 }, "\(responses)")
        #expect(box.daemon.process.stderr.contains("pair-verify: the connection is encrypted"))

        // On that verified connection a state-changing request is allowed (it is not 470).
        let stop = try box.verifiedRequest(stored, "POST", "/stop")
        let stopStatus = (stop["responses"] as? [[String: Any]])?.first?["status"] as? Int
        #expect(stopStatus != nil && stopStatus != 470, "\(stop)")
    }

    @Test func aWrongPINPairsNothing() throws {
        let box = try PairingBox()
        let (credentials, output) = try box.pair(typing: "1111")
        #expect(credentials == nil, "\(output)")
        #expect(box.daemon.process.waitForOutput("pair-setup failed", timeout: 5))
        #expect(!FileManager.default.fileExists(atPath: box.stateDirectory + "/pairings.json"))
    }

    @Test func transientPairingEncryptsButDoesNotAuthorise() throws {
        let box = try PairingBox()
        let info = try box.verifiedRequest("transient", "GET", "/info")
        #expect(info["ok"] as? Bool == true, "\(info)")
        #expect((info["responses"] as? [[String: Any]])?.allSatisfy { $0["status"] as? Int == 200 } == true, "\(info)")
        #expect(box.daemon.process.stderr.contains("transient pairing: the connection is encrypted"))
        // Transient pairing proves no stored pairing: under access = "paired" it may not play.
        let stop = try box.verifiedRequest("transient", "POST", "/stop")
        #expect((stop["responses"] as? [[String: Any]])?.first?["status"] as? Int == 470, "\(stop)")
    }

    /// Every endpoint that changes what plays answers 470 to an unpaired sender and changes
    /// nothing; who the box is and pairing itself stay open.
    @Test func unpairedSendersChangeNothingUnderPairedAccess() throws {
        let box = try PairingBox()
        let connection = try RawHTTPConnection(port: box.daemon.port)
        let refused: [(String, String)] = [
            ("POST", "/play"), ("POST", "/scrub?position=3"), ("POST", "/rate?value=1"), ("POST", "/stop"),
            ("POST", "/volume?volume=0.5"), ("PUT", "/setProperty?forwardEndTime"), ("GET", "/playback-info"),
            ("POST", "/reverse"),
        ]
        for (method, path) in refused {
            let response = try connection.request(method, path)
            #expect(response.status == 470, "\(method) \(path) → \(response.status)")
        }
        // RTSP methods are RAOP's whatever path they name, the open ones included.
        for method in ["ANNOUNCE", "SETUP", "RECORD", "SET_PARAMETER", "FLUSH", "TEARDOWN"] {
            for target in ["rtsp://127.0.0.1/1", "rtsp://127.0.0.1/pair-setup", "rtsp://127.0.0.1/hls/x", "/info"] {
                let response = try connection.request(method, target, headers: ["CSeq": "1"], protocolName: "RTSP/1.0")
                #expect(response.status == 470, "\(method) \(target) → \(response.status)")
            }
        }
        #expect(try connection.request("GET", "/info").status == 200)
        // The senders nobody here wrote fare no better without pairing.
        let media = try #require(VideoPlaybackTests.media)
        let python = try Products.peerTool("python")
        let pypi = try runCommand(python, [Products.repositoryRoot + "/Tests/IntegrationTests/peers/airplay_pypi_client.py",
                                           "127.0.0.1", String(box.daemon.port), media.url("clip.mp4")], timeout: 60)
        #expect(pypi.status != 0 && pypi.stdout.contains("FAIL"), "\(pypi.stdout)\(pypi.stderr)")
        let pyatv = try runCommand(try Products.peerTool("atvremote"), box.atvremote + ["play_url=\(media.url("clip.mp4"))"], timeout: 60)
        #expect(pyatv.status != 0, "\(pyatv.stdout)\(pyatv.stderr)")
        let curl = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                                    "http://127.0.0.1:\(box.daemon.port)/play", "--data-binary", "Content-Location: \(media.url("clip.mp4"))\n"])
        #expect(curl.stdout == "470", "\(curl.stdout)\(curl.stderr)")
        #expect(try connection.request("OPTIONS", "*", headers: ["CSeq": "2"], protocolName: "RTSP/1.0").status == 200)
        #expect(!box.daemon.process.stderr.contains("video session"), "nothing started")
    }

    @Test func thePairingsCommandListsAndRemoves() throws {
        let box = try PairingBox()
        let (credentials, output) = try box.pair(typing: "2468")
        let stored = try #require(credentials, "\(output)")
        let clientID = String(decoding: try #require(VectorDocument.bytes(hex: String(stored.split(separator: ":")[3]))), as: UTF8.self)
        let airplayd = try Products.executable("airplayd")
        let list = try runCommand(airplayd, ["pairings", "list", "--state-dir", box.stateDirectory])
        #expect(list.status == 0 && list.stdout.contains(clientID) && list.stdout.contains("admin"), "\(list.stdout)\(list.stderr)")
        let remove = try runCommand(airplayd, ["pairings", "remove", clientID, "--state-dir", box.stateDirectory])
        #expect(remove.status == 0, "\(remove.stdout)\(remove.stderr)")
        // The running daemon sees the removal: the old credentials no longer verify.
        let verified = try box.verifiedRequest(stored, "GET", "/info")
        #expect(verified["ok"] as? Bool == false || box.daemon.process.stderr.contains("is not paired"), "\(verified)")
        let again = try runCommand(airplayd, ["pairings", "list", "--state-dir", box.stateDirectory])
        #expect(again.stdout.contains("no paired senders"), "\(again.stdout)")
    }

    /// `kill -9` at any moment of a rewrite leaves the old set of pairings or the new one,
    /// never a broken file (temporary file, fsync, rename, fsync of the directory).
    @Test func killNineMidWriteLeavesTheOldOrTheNewPairings() throws {
        let airplayd = try Products.executable("airplayd")
        let state = Products.scratchDirectory("churn") + "/state"
        for round in 0..<8 {
            let writer = try ManagedProcess(airplayd, ["pairings", "churn", "--count", "100000", "--state-dir", state],
                                            directory: Products.scratchDirectory("churn"), label: "churn")
            // Killed while it rewrites: after its first pairing is stored (a loaded machine may
            // take longer than the delay to start it), a different moment each round.
            _ = poll(timeout: 10) { FileManager.default.fileExists(atPath: state + "/pairings.json") }
            usleep(UInt32(5_000 + round * 23_000))
            kill(writer.pid, SIGKILL)
            _ = writer.waitForExit(timeout: 5)
            let list = try runCommand(airplayd, ["pairings", "list", "--state-dir", state])
            #expect(list.status == 0, "round \(round): \(list.stdout)\(list.stderr)")
            #expect(list.stdout.contains("churn-a"), "round \(round): \(list.stdout)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains(".tmp.") }
            #expect(leftovers.isEmpty, "the next start sweeps temporary files: \(leftovers)")
        }
    }

    /// `airplay pair` with the PIN, then `airplay play` pair-verifies by itself under
    /// `access = "paired"`; before pairing, and after `airplay unpair`, it is refused with 470.
    @Test func theAirplaySenderPairsThenPlays() throws {
        let box = try PairingBox()
        let media = try #require(VideoPlaybackTests.media)
        let config = Products.scratchDirectory("sender-config")
        let environment = ["XDG_CONFIG_HOME": config, "XDG_STATE_HOME": Products.scratchDirectory("sender-state"),
                           "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        let airplay = try Products.executable("airplay")
        let to = ["--to", "127.0.0.1:\(box.daemon.port)"]
        let refused = try runCommand(airplay, ["play", media.url("clip.mp4")] + to, environment: environment, timeout: 30)
        #expect(refused.status == 77 && refused.stderr.contains("airplay pair"), "\(refused.stdout)\(refused.stderr)")

        let wrong = try runCommand(airplay, ["pair", "--pin", "1357"] + to, environment: environment)
        #expect(wrong.status == 77 && wrong.stderr.contains("refused the PIN"), "\(wrong.stdout)\(wrong.stderr)")
        let pair = try runCommand(airplay, ["pair", "--pin", "2468"] + to, environment: environment)
        #expect(pair.status == 0, "\(pair.stdout)\(pair.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: config + "/airplay/credentials.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let play = try runCommand(airplay, ["play", media.url("clip.mp4"), "--json"] + to, environment: environment, timeout: 40)
        #expect(play.status == 0, "\(play.stdout)\(play.stderr)")
        // Each command is a new connection that pair-verifies by itself; the video is playing once it says so.
        var status = CommandResult(status: -1, stdout: "", stderr: "")
        #expect(poll(timeout: 10, interval: 0.2) {
            status = (try? runCommand(airplay, ["status", "--json"] + to, environment: environment)) ?? status
            return status.status == 0 && status.stdout.contains("\"state\":\"playing\"")
        }, "\(status.stdout)\(status.stderr)")
        #expect(box.daemon.process.waitForOutput("video reached its end", timeout: 20))

        let unpair = try runCommand(airplay, ["unpair"] + to, environment: environment)
        #expect(unpair.status == 0, "\(unpair.stdout)\(unpair.stderr)")
        let afterUnpair = try runCommand(airplay, ["status"] + to, environment: environment)
        #expect(afterUnpair.status == 77, "\(afterUnpair.stdout)\(afterUnpair.stderr)")
    }

    /// An on-path attacker appending a clear request to a sender's pair-verify M3 gets the
    /// connection closed, not the sender's authority.
    @Test func aClearRequestInjectedAfterVerifyClosesTheConnection() throws {
        let box = try PairingBox()
        let identity = PairingIdentity(identifier: "phone-1", key: Ed25519SigningKey.generate())
        func post(_ connection: RawHTTPConnection, _ path: String, _ message: TLV8?) throws -> TLV8 {
            let response = try connection.request("POST", path, headers: ["X-Apple-HKP": "3", "Content-Type": "application/octet-stream"],
                                                  body: message?.bytes ?? [])
            #expect(response.status == 200, "\(path): \(response.startLine)")
            return try TLV8(bytes: response.body)
        }
        // Pair with the PIN.
        let setupConnection = try RawHTTPConnection(port: box.daemon.port)
        var setup = PairingClient.Setup(identity: identity, pin: "2468")
        let m2 = try post(setupConnection, "/pair-setup", PairingClient.setupStart(transient: false))
        let m4 = try post(setupConnection, "/pair-setup", try setup.proof(answering: m2))
        let receiver = try setup.receiver(answering: try post(setupConnection, "/pair-setup", try setup.exchange(answering: m4)), m4: m4)

        // Verify, with a clear POST /stop riding behind M3 in the same segment.
        let connection = try RawHTTPConnection(port: box.daemon.port)
        var verify = try PairingClient.Verify(identity: identity, receiver: receiver)
        let v2 = try post(connection, "/pair-verify", verify.start)
        let m3 = try verify.proof(answering: v2).bytes
        let head = "POST /pair-verify HTTP/1.1\r\nX-Apple-HKP: 3\r\nContent-Type: application/octet-stream\r\nContent-Length: \(m3.count)\r\n\r\n"
        try connection.send(Array(head.utf8) + m3 + Array("POST /stop HTTP/1.1\r\nContent-Length: 0\r\n\r\n".utf8))
        let v4 = try connection.readMessage(timeout: 5)
        #expect(v4.status == 200)
        #expect(connection.waitForClose(timeout: 5), "the injected clear request ends the connection")
        #expect(box.daemon.process.waitForOutput("a clear request after encryption was decided", timeout: 5))
    }

    /// A guesser's tenth wrong PIN starts a back-off for its source: the next M1 is answered,
    /// without any SRP computed, with HAP's Backoff error and the seconds to wait (RetryDelay),
    /// not MaxTries (which tells a sender never to try again); `airplay pair` says when to
    /// retry, and `/diagnostics` and `airplay doctor` name the source locked out.
    @Test func tenWrongPINsStartABackOffThatSaysHowLongToWait() throws {
        let box = try PairingBox()
        let identity = PairingIdentity(identifier: "guesser", key: Ed25519SigningKey.generate())
        func post(_ connection: RawHTTPConnection, _ message: TLV8) throws -> TLV8 {
            let response = try connection.request("POST", "/pair-setup", headers: ["X-Apple-HKP": "3", "Content-Type": "application/octet-stream"],
                                                  body: message.bytes)
            #expect(response.status == 200, "\(response.startLine)")
            return try TLV8(bytes: response.body)
        }
        for guess in 0..<10 {
            let connection = try RawHTTPConnection(port: box.daemon.port)
            var setup = PairingClient.Setup(identity: identity, pin: String(format: "%04d", guess))
            let m2 = try post(connection, PairingClient.setupStart(transient: false))
            let m4 = try post(connection, try setup.proof(answering: m2))
            #expect(m4.byte(.error) == TLV8.ErrorCode.authentication.rawValue, "guess \(guess): \(m4.bytes)")
        }
        let refused = try post(try RawHTTPConnection(port: box.daemon.port), PairingClient.setupStart(transient: false))
        #expect(refused.byte(.state) == 2 && refused.byte(.error) == TLV8.ErrorCode.backoff.rawValue, "\(refused.bytes)")
        #expect((20...30).contains(refused.integer(.retryDelay) ?? 0), "\(refused.bytes)")
        let airplay = try Products.executable("airplay")
        let told = try runCommand(airplay, ["pair", "--pin", "2468", "--to", "127.0.0.1:\(box.daemon.port)"],
                                  environment: ["XDG_CONFIG_HOME": Products.scratchDirectory("guesser-config"),
                                                "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        #expect(told.status == 77 && told.stderr.contains("retry in"), "\(told.stdout)\(told.stderr)")
        // The box names the source it locked out; `airplay doctor` says so.
        let diagnostics = try RawHTTPConnection(port: box.daemon.port).request("GET", "/diagnostics").text
        #expect(diagnostics.contains(#""pairingLockouts":[{"#) && diagnostics.contains(#""source":"127.0.0.1""#), "\(diagnostics.prefix(600))")
        let doctor = try runCommand(airplay, ["doctor", "127.0.0.1:\(box.daemon.port)", "--browse-seconds", "0", "--json"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        #expect(doctor.stdout.contains("pairing-locked-out"), "\(doctor.stdout)\(doctor.stderr)")
    }
}
