import AirPlayPlist
import AirPlayWire
import AirPlayTesting
import Foundation
import Testing

/// AirPlay 2 against pyatv (PyPI): with `airplay2 = true` the box advertises features 38, 43,
/// 46 and 48, and pyatv 0.18 takes its AirPlay 2 path on its own: transient pair-setup, the
/// control connection encrypted, SETUP with binary plists (session, then streams), an event
/// channel, realtime audio sealed with ChaCha20-Poly1305 and timed by NTP. The same daemon
/// still plays AirPlay 1 senders.
@Suite(.serialized, .timeLimit(.minutes(10))) struct AirPlay2InteropTests {
    static let sweep: SweepMedia? = try? SweepMedia()

    /// A daemon serving AirPlay 2 (and AirPlay 1), writing raw PCM to `raw`.
    struct Box {
        let daemon: LocalDaemon
        let deviceID: String
        let features: String
        let raw: String

        init(access: String = "anyone") throws {
            let directory = Products.scratchDirectory("airplay2")
            let config = directory + "/airplayd.toml"
            try "airplay2 = true\naccess = \"\(access)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            raw = directory + "/out.pcm"
            daemon = try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:\(raw)"])
            let log = daemon.process.stderr.split(separator: "\n")
            deviceID = String(try #require(log.first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first))
            features = String(try #require(log.first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first))
        }

        /// `atvremote stream_file` as pyatv does it for this box's `_raop._tcp` record: its `ft`
        /// decides the protocol (AirPlay 2 with bit 38 or 48); without `ft` pyatv speaks AirPlay 1.
        func stream(_ file: String, airPlay2: Bool = true, extra: [String] = [], during: (() throws -> Void)? = nil) throws -> CommandResult {
            let atvremote = try Products.peerTool("atvremote")
            let sweep = try #require(AirPlay2InteropTests.sweep)
            let arguments = ["--debug", "--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(daemon.port),
                             "--protocol", "raop", "--id", deviceID,
                             "--service-properties", "|cn=0,1|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68" + (airPlay2 ? "|ft=\(features)" : "")]
            let path = file.hasPrefix("/") ? file : "\(sweep.directory)/\(file)"
            let ended = daemon.process.occurrences(of: "audio session ended")
            let process = try ManagedProcess(atvremote, arguments + extra + ["stream_file=\(path)"],
                                             directory: sweep.directory, label: "atvremote")
            try during?()
            let status = process.waitForExit(timeout: 60)
            // pyatv's TEARDOWN comes while its last quarter second is still to play (flags 7).
            daemon.process.waitForOutput("audio session ended", moreThan: ended, timeout: 5)
            return CommandResult(status: status ?? -1, stdout: process.stdout, stderr: process.stderr)
        }

        /// What the box wrote, as samples.
        func output() throws -> [Int16] {
            let data = try Data(contentsOf: URL(fileURLWithPath: raw))
            return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
    }

    @Test func pyatvStreamsOverAirPlay2BitExactWithItsMetadata() throws {
        let sweep = try #require(Self.sweep)
        let box = try Box()
        var nowPlaying = ""
        let result = try box.stream("sweep.flac") {
            // Mid-stream, once the text and the progress are in (what is asserted below).
            _ = poll(timeout: 12, interval: 0.1) {
                nowPlaying = (try? RawHTTPConnection(port: box.daemon.port).request("GET", "/now-playing").text) ?? ""
                let playing = (try? JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any]) ?? [:]
                return playing["title"] as? String == "Sweep Song" && playing["artist"] as? String == "Test Artist"
                    && playing["state"] as? String == "playing" && abs((playing["duration"] as? Double ?? 0) - 6) < 0.1
            }
        }
        let log = box.daemon.process.stderr
        #expect(result.status == 0, "\(result.stdout.suffix(3000))\(result.stderr.suffix(3000))")
        // pyatv's own account: it chose AirPlay 2 and paired transiently.
        let pyatvLog = result.stdout + result.stderr
        #expect(pyatvLog.contains("airplayv2") || pyatvLog.contains("AirPlayV2"), "pyatv took its AirPlay 2 path")
        #expect(log.contains("transient pairing: the connection is encrypted"), "\(log.suffix(2000))")
        #expect(log.contains("AirPlay 2 session setup") && log.contains("timing=NTP"))
        #expect(log.contains("AirPlay 2 event channel listening"))
        #expect(log.contains("codec=L16") && log.contains("encrypted=true"))

        let comparison = sweep.compare(try box.output())
        #expect(comparison.offset != nil, "the sweep is found in the output")
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        print("measure: pyatv AirPlay 2 realtime stream, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
        #expect(log.contains("lost=0") && !log.contains("does not authenticate"), "every packet opened, none lost on loopback")

        let playing = try #require(try JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any], "\(nowPlaying)")
        #expect(playing["title"] as? String == "Sweep Song")
        #expect(playing["artist"] as? String == "Test Artist")
        #expect(playing["state"] as? String == "playing")
        #expect(abs((playing["duration"] as? Double ?? 0) - 6) < 0.1, "progress gave the duration")
    }

    /// The volume pyatv sets, and the cover `airplay stream` finds in a file (pyatv 0.18 sends no
    /// artwork from files: its tag reader has none), reach the box over AirPlay 2 as over RAOP:
    /// SET_PARAMETER on the encrypted connection, the gain on the samples, the artwork in
    /// `/now-playing`.
    @Test func volumeAndArtworkArriveOverAirPlay2() throws {
        let sweep = try #require(Self.sweep)
        let box = try Box()
        let result = try box.stream("sweep.flac", extra: ["set_volume=50"])
        #expect(result.status == 0, "\(result.stdout.suffix(2000))\(result.stderr.suffix(2000))")
        #expect(box.daemon.process.stderr.contains("AirPlay 2 session setup") && box.daemon.process.stderr.contains("volume.dB=-15.0"))
        // pyatv maps 50 % to -15 dB: every sample is scaled by 10^(-15/20).
        let gain = pow(10.0, -15.0 / 20.0)
        let comparison = sweep.compare(try box.output(), transform: { Int16((Double($0) * gain).rounded()) }, tolerance: 1)
        #expect(comparison.exact >= 0.999, "scaled share \(comparison.exact)")

        let directory = Products.scratchDirectory("airplay2-tags")
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        let cover = directory + "/cover.png", tagged = directory + "/tagged.flac"
        for job in [["-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=blue:s=32x32", "-frames:v", "1", cover],
                    ["-loglevel", "error", "-y", "-i", sweep.directory + "/sweep.flac", "-i", cover, "-map", "0:a", "-map", "1:v",
                     "-c:a", "copy", "-c:v", "copy", "-disposition:v", "attached_pic", tagged]] {
            let made = try runCommand(ffmpeg, job, timeout: 60)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let sender = try ManagedProcess(try Products.executable("airplay"),
                                        ["stream", tagged, "--to", "127.0.0.1:\(box.daemon.port)", "--protocol", "2"],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: directory,
                                        label: "airplay")
        // While it plays, once its title and cover are in (what is asserted below).
        var nowPlaying = ""
        _ = poll(timeout: 12, interval: 0.1) {
            nowPlaying = (try? RawHTTPConnection(port: box.daemon.port).request("GET", "/now-playing").text) ?? ""
            let playing = (try? JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any]) ?? [:]
            let artwork = playing["artwork"] as? [String: Any] ?? [:]
            return playing["title"] as? String == "Sweep Song" && artwork["type"] as? String == "image/png"
                && Data(base64Encoded: artwork["base64"] as? String ?? "") == FileManager.default.contents(atPath: cover)
        }
        #expect(sender.waitForExit(timeout: 30) == 0, "\(sender.stderr)")
        let playing = try #require(try JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any], "\(nowPlaying)")
        #expect(playing["title"] as? String == "Sweep Song")
        let artwork = try #require(playing["artwork"] as? [String: Any], "\(nowPlaying)")
        #expect(artwork["type"] as? String == "image/png")
        #expect(Data(base64Encoded: artwork["base64"] as? String ?? "") == FileManager.default.contents(atPath: cover))
    }

    /// The same box still plays an AirPlay 1 sender: pyatv reading a RAOP record without `ft`
    /// speaks RAOP (ANNOUNCE, SETUP with Transport) and its audio comes out bit-exact too.
    @Test func anAirPlay1SenderStillPlaysOnTheSameBox() throws {
        let sweep = try #require(Self.sweep)
        let box = try Box()
        let result = try box.stream("sweep.flac", airPlay2: false)
        #expect(result.status == 0, "\(result.stdout.suffix(2000))\(result.stderr.suffix(2000))")
        let log = box.daemon.process.stderr
        #expect(log.contains("audio announced") && !log.contains("AirPlay 2 session setup"), "RAOP's ANNOUNCE, no plist SETUP")
        let comparison = sweep.compare(try box.output())
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
    }

    /// What a sender gets for an AirPlay 2 SETUP the box cannot take: on a clear connection 470
    /// (the keys come from pairing), and on an encrypted one a 4xx naming what is wrong. The
    /// connection stays usable: pyatv's helper sends each request twice on it.
    @Test func setupsThatCannotBeServedGetTheirReason() throws {
        let box = try Box()
        let body = PropertyList.dictionary(["timingProtocol": .string("NTP"), "timingPort": .integer(6002)]).encoded(as: .binary)
        let clear = try RawHTTPConnection(port: box.daemon.port).request(
            "SETUP", "rtsp://127.0.0.1/1", headers: ["CSeq": "1", "Content-Type": "application/x-apple-binary-plist"], body: body,
            protocolName: "RTSP/1.0")
        #expect(clear.status == 470 && clear.text.contains("pair-verify or transient"), "\(clear.status) \(clear.text)")

        let cases: [(PropertyList, Int, String)] = [
            (.dictionary(["timingProtocol": .string("PTP")]), 451, "timingProtocol PTP is not supported"),
            (.dictionary(["streams": .array([.dictionary(["type": .integer(103), "ct": .integer(2)])])]), 461, "buffered audio"),
            (.dictionary(["name": .string("no timing, no streams")]), 400, "neither timingProtocol nor streams"),
        ]
        for (plist, status, reason) in cases {
            let answer = try verifiedRTSP(box, "SETUP", body: plist.encoded(as: .binary))
            let responses = try #require(answer["responses"] as? [[String: Any]], "\(answer)")
            #expect(responses.count == 2)
            for response in responses {
                #expect(response["status"] as? Int == status && (response["body_text"] as? String ?? "").contains(reason), "\(response)")
            }
        }
        let garbage = try verifiedRTSP(box, "SETUP", body: Array("bplist00 not really".utf8))
        #expect((garbage["responses"] as? [[String: Any]])?.first?["status"] as? Int == 400, "\(garbage)")
    }

    /// Two SETUPs other receivers crashed on in 2025-26 (shairport-sync 5.5's security release),
    /// on one encrypted connection: a session whose timing peers' `Addresses` hold a number,
    /// data, a dictionary and a boolean beside one address (only strings are addresses: the
    /// session is set up), then a stream whose key (`shk`) is 5 bytes (400 naming it). The
    /// daemon serves on.
    @Test func setupsOtherReceiversCrashedOnGetAnAnswer() throws {
        let box = try Box()
        let peers = PropertyList.dictionary(["Addresses": .array([.integer(42), .data([1, 2, 3]), .dictionary([:]), .bool(true), .string("127.0.0.1")]),
                                             "ID": .integer(7)])
        let session = PropertyList.dictionary(["timingProtocol": .string("NTP"), "timingPort": .integer(6002), "timingPeerInfo": peers,
                                               "timingPeerList": .array([peers, .integer(3), .dictionary(["Addresses": .integer(5)])])])
        let stream = PropertyList.dictionary(["streams": .array([.dictionary(["type": .integer(96), "ct": .integer(2), "shk": .data([1, 2, 3, 4, 5]),
                                                                               "spf": .integer(352), "controlPort": .integer(6001)])])])
        let answer = try verifiedRTSP(box, "SETUP", body: session.encoded(as: .binary), second: stream.encoded(as: .binary))
        let responses = try #require(answer["responses"] as? [[String: Any]], "\(answer)")
        #expect(responses.first?["status"] as? Int == 200, "\(answer)")
        #expect(responses.last?["status"] as? Int == 400 && (responses.last?["body_text"] as? String ?? "").contains("shk must be 32 bytes"), "\(answer)")
        #expect(box.daemon.process.isRunning)
    }

    /// One RTSP request, twice (the second with `second`'s body when given), over a connection
    /// pyatv encrypted with a transient pair-setup.
    func verifiedRTSP(_ box: Box, _ method: String, body: [UInt8], second: [UInt8]? = nil) throws -> [String: Any] {
        let python = try Products.peerTool("python3")
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_verified_request.py"
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let result = try runCommand(python, [script, String(box.daemon.port), "transient", "RTSP:" + method, "rtsp://127.0.0.1/1", hex(body)]
                                        + (second.map { [hex($0)] } ?? []),
                                    timeout: 40)
        let line = try #require(result.stdout.split(separator: "\n").last, "\(result.stdout)\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result.stdout)\(result.stderr)")
    }
}
