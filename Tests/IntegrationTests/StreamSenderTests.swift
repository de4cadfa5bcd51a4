import AirPlayTesting
import Foundation
import Testing

/// `airplay stream`: local audio files to AirPlay speakers as realtime RAOP. airplayd speaks
/// AirPlay 2 too and says so in `GET /info`, so the cases about AirPlay 1 itself (RSA, Digest,
/// DMAP over RTSP, resends on the control port) ask for it with `--protocol 1`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct StreamSenderTests {
    private func airplay(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try runCommand(try Products.executable("airplay"), arguments,
                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeout: timeout)
    }

    @Test func aFlacFileReachesAirplaydBitExact() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("stream") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let started = monotonicSeconds()
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)", "--json", "--protocol", "1"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(monotonicSeconds() - started > 6, "paced in real time")
        #expect(result.stdout.contains("\"ok\":true"))
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        #expect(comparison.offset == 0)
        #expect(daemon.process.stderr.contains("lost=0"))
        // airplayd answers Apple-Challenge and decodes ALAC: the stream is compressed and encrypted.
        #expect(daemon.process.stderr.contains("codec=ALAC") && daemon.process.stderr.contains("encrypted=true"), "\(daemon.process.stderr)")
        // Timed by our sender's clock (its sync packets agree with its timing answers), which is
        // the machine's: nothing to correct, and every packet out within a few milliseconds.
        let stream = try RAOPClockTests.streamFigures(daemon.port)
        let clock = try #require(stream["clock"] as? [String: Any]), sync = try #require(stream["sync"] as? [String: Any])
        #expect(clock["source"] as? String == "sender", "\(stream)")
        #expect(stream["framesInserted"] as? Int == 0 && stream["framesRemoved"] as? Int == 0, "\(stream)")
        // The sync error also counts how late the output thread woke: 1-2 ms p50 in any case,
        // p95 under 5 ms on a quiet machine but 5.6 beside the whole suite on two cores (CI).
        // The median shows the timing; the p95 bound catches a playout gone astray.
        #expect((sync["p50Ms"] as? Double ?? 99) < 3, "\(sync)")
        #expect((sync["p95Ms"] as? Double ?? 99) < 10, "\(sync)")
        print("measure: airplay stream → airplayd, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %, "
              + "sync error mean \(sync["meanMs"] ?? "?") ms p95 \(sync["p95Ms"] ?? "?") ms max \(sync["maxMs"] ?? "?") ms")
    }

    /// `airplay stream --protocol 2`: transient pairing, SETUP with plists, an event channel,
    /// ALAC sealed with ChaCha20-Poly1305; airplayd's output is the file, bit for bit.
    @Test func overAirPlay2TheFileArrivesBitExact() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let directory = Products.scratchDirectory("stream2")
        let raw = directory + "/out.pcm", config = directory + "/airplayd.toml"
        try "airplay2 = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:\(raw)"])
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)", "--json", "--protocol", "2"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("\"protocol\":2") && result.stdout.contains("\"codec\":\"ALAC\""), "\(result.stdout)")
        // The start line names the codec the AirPlay 2 setup chose, not the one before it.
        #expect(result.stdout.contains("(ALAC, AirPlay 2)"), "\(result.stdout)")
        let log = daemon.process.stderr
        #expect(log.contains("transient pairing") && log.contains("AirPlay 2 session setup") && log.contains("AirPlay 2 event channel listening"))
        #expect(log.contains("codec=ALAC") && log.contains("lost=0") && !log.contains("does not authenticate"), "\(log.suffix(1500))")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        print("measure: airplay stream --protocol 2 → airplayd, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// Both RTP counters wrap inside the stream (sequence 65500 + 60, time 2^32 − 100000 + 2.3 s).
    @Test func sequenceAndTimestampWrapAround() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("wrap") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let result = try runCommand(try Products.executable("airplay"),
                                    ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus",
                                                  "AIRPLAY_RTP_START": "65500:4294867296"], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999 && comparison.offset == 0, "bit-exact share \(comparison.exact)")
    }

    /// Tags become DMAP text, the embedded cover the artwork, the duration progress; the
    /// receiver's now-playing state shows them while the stream plays. Over AirPlay 2 to a box
    /// with feature bit 50 they go as MediaRemote now playing instead (`Protocol/now-playing.md`
    /// §7), which its metadata pipe shows as sent.
    @Test(arguments: ["1", "2"]) func tagsCoverAndProgressReachTheReceiver(protocol version: String) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let directory = Products.scratchDirectory("tags\(version)")
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        let cover = directory + "/cover.png", tagged = directory + "/tagged.flac"
        for job in [["-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=32x32", "-frames:v", "1", cover],
                    ["-loglevel", "error", "-y", "-i", sweep.directory + "/sweep.flac", "-i", cover, "-map", "0:a", "-map", "1:v",
                     "-c:a", "copy", "-c:v", "copy", "-disposition:v", "attached_pic", "-metadata", "genre=Test Tones", tagged]] {
            let made = try runCommand(ffmpeg, job, timeout: 60)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let pipe = directory + "/metadata"
        try "airplay2 = \(version == "2")\nmetadata_pipe = \"\(pipe)\"\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--audio-output", "raw:/dev/null"])
        let reader = try PipeReader(fifo: pipe)
        let process = try ManagedProcess(try Products.executable("airplay"), ["stream", tagged, "--to", "127.0.0.1:\(daemon.port)", "--protocol", version],
                                         environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: directory,
                                         label: "airplay")
        // While it plays, once the tags, the cover and a second of progress are in (what is asserted below).
        var text = ""
        _ = poll(timeout: 12, interval: 0.1) {
            text = (try? RawHTTPConnection(port: daemon.port).request("GET", "/now-playing").text) ?? ""
            let playing = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
            let artwork = playing["artwork"] as? [String: Any] ?? [:]
            return playing["title"] as? String == "Sweep Song" && playing["artist"] as? String == "Test Artist"
                && playing["album"] as? String == "Test Album" && playing["genre"] as? String == "Test Tones"
                && abs((playing["duration"] as? Double ?? 0) - 6) < 0.1 && (playing["position"] as? Double ?? 0) > 1
                && artwork["type"] as? String == "image/png"
                && Data(base64Encoded: artwork["base64"] as? String ?? "") == FileManager.default.contents(atPath: cover)
        }
        #expect(process.waitForExit(timeout: 30) == 0, "\(process.stderr)")
        let playing = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        #expect(playing["title"] as? String == "Sweep Song")
        #expect(playing["artist"] as? String == "Test Artist")
        #expect(playing["album"] as? String == "Test Album")
        #expect(playing["genre"] as? String == "Test Tones")
        #expect(abs((playing["duration"] as? Double ?? 0) - 6) < 0.1, "\(text)")
        #expect((playing["position"] as? Double ?? 0) > 1)
        let artwork = try #require(playing["artwork"] as? [String: Any], "\(text)")
        #expect(artwork["type"] as? String == "image/png")
        #expect(Data(base64Encoded: artwork["base64"] as? String ?? "") == FileManager.default.contents(atPath: cover))
        let bodies = try reader.finish().items.filter { $0.code == "copl" }.map { String(decoding: $0.data, as: UTF8.self) }
        if version == "2" {
            #expect(bodies.contains { $0.contains("updateMRNowPlayingInfo") } && bodies.contains { $0.contains("updateMRPlaybackState") },
                    "MediaRemote now playing to a bit-50 box: \(bodies.count) bodies")
        } else {
            #expect(bodies.isEmpty, "AirPlay 1 carries DMAP")
        }
    }

    /// Space on the terminal pauses (FLUSH) and resumes (RECORD) the stream; the audio that was
    /// sent but not yet heard is sent again, so the listener hears on from where they paused.
    @Test func spacePausesAndResumesWhereItStopped() throws {
        let python = try Products.peerTool("python")
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("pause") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pty_keys.py"
        let result = try runCommand(python, [script, "3=\\s", "5=\\s", "--", try Products.executable("airplay"), "stream",
                                             sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("⏸"), "the live line shows the pause: \(result.stdout.suffix(400))")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // Around the pause a few packets may play twice or not at all: the sender sends again,
        // under new RTP times, what it believes was not heard, and the FLUSH takes a round trip
        // while a raw output has taken up to a group of four packets (30 ms) early. So the audio
        // before the pause and the audio after it are each found in place, each at its own
        // offset, at most a group apart (measured: 0 to 3 packets); everything else comes out
        // once, in order.
        let before = sweep.compare(samples), after = sweep.compare(samples, from: 5 * 44100)
        let offsets = [before.offset, after.offset].compactMap { $0 }
        #expect(offsets.count == 2 && abs(offsets[0] - offsets[1]) <= 4 * 352, "offsets \(before.offset ?? -1), \(after.offset ?? -1)")
        let comparison = sweep.compare(samples, offsets: offsets)
        #expect(comparison >= 0.95, "share in place \(comparison)")
        #expect(samples.count / 2 >= 6 * 44100 - 4410, "nothing lost to the pause: \(samples.count / 2) frames")
        print("measure: pause/resume, \(String(format: "%.2f", comparison * 100)) % of the frames in place, offsets \(offsets)")
    }

    /// A wrong or missing password is refused (exit 77); the right one streams.
    @Test func passwordsAreAnsweredWithDigest() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let config = Products.scratchDirectory("pw") + "/airplayd.toml"
        try "password = \"s3cret\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null", "--config", config])
        let target = ["--protocol", "1", "--to", "127.0.0.1:\(daemon.port)", sweep.directory + "/cafe.flac"]
        #expect(try airplay(["stream"] + target).status == 77)
        #expect(try airplay(["stream", "--password", "guess"] + target).status == 77)
        let right = try airplay(["stream", "--password", "s3cret"] + target)
        #expect(right.status == 0, "\(right.stderr)")
    }

    /// A speaker that takes AirPlay 2's session but refuses its native realtime stream with 400,
    /// as Sonos speakers do (airplayd's test fault): `airplay stream` says so and plays to it
    /// over AirPlay 1, its RAOP-compatible path, bit-exact.
    @Test func aSpeakerRefusingAirPlay2StreamsIsPlayedOverAirPlay1() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("sonos") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"], environment: ["AIRPLAYD_FAULT_REFUSE_REALTIME_STREAMS": "1"])
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)", "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("RAOP-compatible path") && result.stdout.contains("\"protocol\":1"), "\(result.stdout)\(result.stderr)")
        #expect(daemon.process.stderr.contains("realtime streams are refused"), "the AirPlay 2 stream was tried first")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(sweep.compare(samples).exact >= 0.999)
    }

    /// 5 % of the packets are dropped on their way into airplayd (its test-only knob): the
    /// resend requests are answered from our backlog, and the output is still bit-exact.
    @Test func droppedPacketsAreResentFromTheBacklog() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("lossy") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"], environment: ["AIRPLAYD_FAULT_DROP_AUDIO_PERCENT": "5"])
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)", "--json", "--protocol", "1"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
        let resent = object["resent"] as? Int ?? 0
        #expect(resent > 20, "\(summary)")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        print("measure: 5 % dropped into airplayd, \(resent) packets resent, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// `--to A --to B`: two airplayd receivers get the same RTP times and sync packets and map
    /// them through their own timing exchanges; a reader timing both raw outputs (FIFOs) sees
    /// every second of audio come out of both within 5 ms.
    /// Over AirPlay 2 (`--protocol 2`, both daemons with `airplay2 = true`) the same holds:
    /// transient pairing, plist SETUPs and ChaCha20-Poly1305 audio change nothing in the timing.
    @Test(arguments: [1, 2])
    func twoReceiversPlayTheSameFrameAtTheSameMoment(protocolVersion: Int) throws {
        let python = try Products.peerTool("python")
        let sweep = try #require(RAOPInteropTests.sweep)
        let directory = Products.scratchDirectory("multi")
        let fifos = [directory + "/a.pcm", directory + "/b.pcm"]
        for fifo in fifos { #expect(mkfifo(fifo, 0o600) == 0) }
        let reader = try ManagedProcess(python, [Products.repositoryRoot + "/Tests/IntegrationTests/peers/fifo_clock.py"] + fifos + ["40"],
                                        directory: directory, label: "fifo-clock")
        let config = directory + "/airplayd.toml"
        try "airplay2 = \(protocolVersion == 2)\n".write(toFile: config, atomically: true, encoding: .utf8)
        let first = try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:\(fifos[0])"])
        let second = try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:\(fifos[1])"])
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--json", "--protocol", "\(protocolVersion)",
                                  "--to", "127.0.0.1:\(first.port)", "--to", "127.0.0.1:\(second.port)"])
        if protocolVersion == 2 {
            #expect(result.stdout.components(separatedBy: "\"protocol\":2").count == 3, "\(result.stdout)")
            #expect(first.process.stderr.contains("AirPlay 2 session setup") && second.process.stderr.contains("AirPlay 2 session setup"))
        }
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        first.process.stop(grace: 2)
        second.process.stop(grace: 2)
        let report = try FifoClockReport(reader)
        let skews = report.skews
        #expect(skews.count >= 4, "\(report.line)")
        #expect(skews.allSatisfy { abs($0) <= 5 }, "\(report.line)")
        #expect(report.sameSamples)
        let summary = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.contains("\"skewBoundMs\""), "\(summary)")
        print("measure: two airplayd (protocol \(protocolVersion)), output skew per second \(skews) ms; sender's bound from timing: \(summary)")
    }

    /// The receiver dies mid-stream: the sender notices at its next keep-alive (every 2 s) and
    /// exits 74, "connection lost".
    @Test func aReceiverThatDiesEndsTheStreamWithConnectionLost() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let process = try ManagedProcess(try Products.executable("airplay"),
                                         ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)"],
                                         environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"],
                                         directory: Products.scratchDirectory("dies"), label: "airplay")
        #expect(process.waitForOutput("streaming", timeout: 10, inStdout: true))
        daemon.process.signal(SIGKILL)
        let started = monotonicSeconds()
        #expect(process.waitForExit(timeout: 15) == 74, "\(process.stdout)\(process.stderr)")
        #expect(monotonicSeconds() - started < 5, "noticed within the keep-alive")
    }

    @Test func unusableFilesAndUnreachableReceiversHaveTheirExitCodes() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let notAudio = Products.scratchDirectory("bad") + "/notes.txt"
        try "not audio\n".write(toFile: notAudio, atomically: true, encoding: .utf8)
        #expect(try airplay(["stream", notAudio, "--to", "127.0.0.1:9"]).status == 65)
        #expect(try airplay(["stream", "/nonexistent.flac", "--to", "127.0.0.1:9"]).status == 65)
        #expect(try airplay(["stream", sweep.directory + "/cafe.flac", "--to", "127.0.0.1:9"]).status == 69)
    }

    /// shairport-sync (Debian), a receiver nobody here wrote, with its stdout backend writing raw PCM.
    @Test func aFlacFileReachesShairportSync() throws {
        try TestHost.require(["shairport-sync"])
        let sweep = try #require(RAOPInteropTests.sweep)
        let host = try TestHost(label: "sps")
        defer { host.close() }
        try host.startAvahi()
        // Volume control off: at full volume shairport-sync would still dither its software volume.
        let config = host.directory + "/shairport-sync.conf"
        try "general = {\n  ignore_volume_control = \"yes\";\n};\n".write(toFile: config, atomically: true, encoding: .utf8)
        let receiver = try host.spawn(try #require(TestHost.which("shairport-sync")),
                                      ["-c", config, "-a", "Shairport Test", "-p", "5055", "-vv", "-o", "stdout"], label: "shairport-sync")
        #expect(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Shairport Test") } != nil, "\(receiver.stderr)")
        let result = try host.run(try Products.executable("airplay"), ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:5055",
                                                                      "--json"], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // shairport-sync proves the AirPort key: ALAC, RSA-wrapped key, AES packets.
        #expect(result.stdout.contains("\"codec\":\"ALAC\"") && result.stdout.contains("\"encrypted\":true"), "\(result.stdout)")
        Thread.sleep(forTimeInterval: 1)   // shairport-sync writes out what it still holds (no end to poll for)
        let samples = try Data(contentsOf: URL(fileURLWithPath: receiver.stdoutPath)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // shairport-sync drops the first packets until its clocks settle: compare from 1 s on.
        let comparison = sweep.compare(samples, from: 44100)
        #expect(comparison.exact >= 0.99, "bit-exact share \(comparison.exact) of \(samples.count / 2) frames; \(receiver.stderr.suffix(1500))")
        // Our timing requests are an extra RAOP receivers need not answer: shairport-sync logs
        // each as an unknown packet (with -vv), so it gets the first two only
        // (`ReceiverLink.unansweredTimingRequests`). One every 2 s, as before, made 3 in this stream.
        let complaints = receiver.stderr.lowercased().components(separatedBy: "0xd2").count - 1
        #expect(complaints <= 2, "shairport-sync complained of \(complaints) timing requests: \(receiver.stderr.suffix(1500))")
        print("measure: airplay stream → shairport-sync, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %, "
              + "\(complaints) timing requests it did not expect")
    }
}
