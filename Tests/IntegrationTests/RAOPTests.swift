import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

/// Aligns stereo `output` on `reference` (20 samples from frame `start`) and returns the offset
/// (output frame = reference frame + offset) and the share of reference frames from `start` on
/// that the output holds, each sample within `tolerance`.
func alignAndCompare<Sample: BinaryInteger>(_ output: [Sample], with reference: [Sample], tolerance: Int = 0,
                                            from start: Int) -> (offset: Int?, exact: Double) {
    let frames = reference.count / 2
    guard output.count >= 40, 2 * start + 20 <= reference.count else { return (nil, 0) }
    let probe = Array(reference[(2 * start)..<(2 * start + 20)])
    func close(_ a: Sample, _ b: Sample) -> Bool { abs(Int(a) - Int(b)) <= tolerance }
    var offset: Int?
    for k in 0..<(output.count / 2 - 10) where Array(output[(2 * k)..<(2 * k + 20)]).elementsEqual(probe, by: close) {
        offset = k - start
        break
    }
    guard let offset else { return (nil, 0) }
    var equal = 0
    for frame in start..<frames {
        let at = 2 * (frame + offset)
        guard at >= 0, at + 1 < output.count else { continue }
        if close(output[at], reference[2 * frame]), close(output[at + 1], reference[2 * frame + 1]) { equal += 1 }
    }
    return (offset, Double(equal) / Double(frames - start))
}

/// A sweep made by ffmpeg (different tones left and right) as a WAV reference and as a tagged FLAC.
final class SweepMedia: @unchecked Sendable {
    let directory: String
    let reference: [Int16]

    /// `seconds`: how long the sweep lasts (6 s by default: long enough for every session step,
    /// short enough for many tests; fault tests want time for a fault and the recovery after it).
    init(seconds: Int = 6) throws {
        directory = Products.scratchDirectory(seconds == 6 ? "sweep" : "sweep\(seconds)")
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        let wav = directory + "/sweep.wav"
        for job in [
            ["-loglevel", "error", "-y", "-f", "lavfi", "-i",
             "aevalsrc=0.5*sin(2*PI*(100+400*t)*t)|0.4*sin(2*PI*(300+200*t)*t):s=44100:d=\(seconds)", "-ac", "2", "-ar", "44100",
             "-c:a", "pcm_s16le", wav],
            ["-loglevel", "error", "-y", "-i", wav, "-metadata", "title=Sweep Song", "-metadata", "artist=Test Artist",
             "-metadata", "album=Test Album", directory + "/sweep.flac"],
            ["-loglevel", "error", "-y", "-i", wav, "-t", "2", "-metadata", "title=Café Müller", directory + "/cafe.flac"],
        ] {
            let result = try runCommand(ffmpeg, job, timeout: 60)
            guard result.status == 0 else { throw TestHostError("ffmpeg: \(result.stderr)") }
        }
        // The samples after the 44-byte RIFF header ffmpeg writes for plain PCM.
        let data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let start = data.range(of: Data("data".utf8))!.upperBound + 4
        reference = data[start...].withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Aligns `output` on the reference (frame 4410, 100 ms in) and returns the offset and the
    /// share of frames after the first 100 ms that match `transform(reference)` exactly.
    func compare(_ output: [Int16], transform: (Int16) -> Int16 = { $0 }, tolerance: Int = 0,
                 from start: Int = 4410) -> (offset: Int?, exact: Double) {
        alignAndCompare(output, with: reference.map(transform), tolerance: tolerance, from: start)
    }

    /// The share of reference frames after the first 100 ms found in `output` at any of
    /// `offsets` (audio that moved by a packet at a pause is still in place on each side).
    func compare(_ output: [Int16], offsets: [Int], from start: Int = 4410) -> Double {
        let frames = reference.count / 2
        var equal = 0
        for frame in start..<frames where offsets.contains(where: { offset in
            let at = 2 * (frame + offset)
            return at >= 0 && at + 1 < output.count && output[at] == reference[2 * frame] && output[at + 1] == reference[2 * frame + 1]
        }) {
            equal += 1
        }
        return Double(equal) / Double(frames - start)
    }
}

/// RAOP audio against pyatv (PyPI), the sender nobody here wrote.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RAOPInteropTests {
    static let sweep: SweepMedia? = try? SweepMedia()

    private func stream(_ daemon: LocalDaemon, volume: Int, file: String = "sweep.flac", password: String? = nil,
                        during: (() throws -> Void)? = nil) throws -> CommandResult {
        let atvremote = try Products.peerTool("atvremote")
        let deviceID = try #require(daemon.process.stderr.split(separator: "\n")
            .first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first)
        let sweep = try #require(Self.sweep)
        let process = try ManagedProcess(atvremote, [
            // No pyatv storage: a password or credentials kept from another run must not answer for this one.
            "--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(daemon.port), "--protocol", "raop", "--id", String(deviceID),
            // What our _raop._tcp TXT record says; --manual skips discovery.
            "--service-properties", "|cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68",
        ] + (password.map { ["--raop-password", $0] } ?? []) + [
            "set_volume=\(volume)", "stream_file=\(sweep.directory)/\(file)",
        ], directory: sweep.directory, label: "atvremote")
        let ended = daemon.process.occurrences(of: "audio session ended")
        try during?()
        let status = process.waitForExit(timeout: 60)
        // pyatv's TEARDOWN comes while its last quarter second is still to play (flags 7).
        daemon.process.waitForOutput("audio session ended", moreThan: ended, timeout: 5)
        return CommandResult(status: status ?? -1, stdout: process.stdout, stderr: process.stderr)
    }

    private func output(_ path: String) throws -> [Int16] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    @Test func pyatvStreamComesOutBitExactWithItsMetadata() throws {
        let sweep = try #require(Self.sweep)
        let raw = sweep.directory + "/out-\(UUID().uuidString.prefix(6)).pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        var nowPlaying = ""
        let result = try stream(daemon, volume: 100) {
            // Mid-stream, once the text, the progress and a second of audio are in (what is asserted below).
            _ = poll(timeout: 10, interval: 0.1) {
                nowPlaying = (try? RawHTTPConnection(port: daemon.port).request("GET", "/now-playing").text) ?? ""
                let playing = (try? JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any]) ?? [:]
                let figures = playing["stream"] as? [String: Any] ?? [:]
                return playing["title"] as? String == "Sweep Song" && playing["artist"] as? String == "Test Artist"
                    && playing["album"] as? String == "Test Album" && playing["state"] as? String == "playing"
                    && abs((playing["duration"] as? Double ?? 0) - 6) < 0.1 && (playing["position"] as? Double ?? 0) > 1
                    && playing["volume"] as? Double == 0 && (figures["received"] as? Int ?? 0) > 100 && figures["lost"] as? Int == 0
            }
        }
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let comparison = sweep.compare(try output(raw))
        #expect(comparison.offset != nil, "the sweep is found in the output")
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        print("measure: pyatv L16 stream, bit-exact \(String(format: "%.4f", comparison.exact * 100)) % at offset \(comparison.offset ?? -1)")

        let playing = try #require(try JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any], "\(nowPlaying)")
        #expect(playing["title"] as? String == "Sweep Song")
        #expect(playing["artist"] as? String == "Test Artist")
        #expect(playing["album"] as? String == "Test Album")
        #expect(playing["state"] as? String == "playing")
        #expect(abs((playing["duration"] as? Double ?? 0) - 6) < 0.1, "progress gave the duration")
        #expect((playing["position"] as? Double ?? 0) > 1)
        #expect(playing["volume"] as? Double == 0)
        let stream = try #require(playing["stream"] as? [String: Any], "playout figures for benchmarks")
        #expect((stream["received"] as? Int ?? 0) > 100)
        #expect(stream["lost"] as? Int == 0)
        #expect(daemon.process.stderr.contains("lost=0"), "no packet lost on loopback")

        let after = try RawHTTPConnection(port: daemon.port).request("GET", "/now-playing").text
        #expect(after.contains("\"state\":\"idle\""), "now playing is cleared when the session ends")
    }

    /// The default kind of output is a GStreamer sink description. A synced filesink at the end
    /// of that pipeline shows the whole path (appsrc, convert, resample, sink) is bit-exact too.
    /// Drift correction is off: a filesink's clock is the machine's, and amid the suite's load
    /// the sink once fell behind and was stuffed 19 frames (72 % bit-exact), which is that
    /// correction doing its job, not this path failing.
    @Test func aGStreamerSinkOutputIsBitExact() throws {
        let sweep = try #require(Self.sweep)
        let file = Products.scratchDirectory("gst-out") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-drift-correction", "off", "--audio-output", "filesink location=\(file) sync=true"])
        let result = try stream(daemon, volume: 100)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(daemon.process.stderr.contains("lost=0"))
        let comparison = sweep.compare(try output(file))
        let summary = daemon.process.lines(containing: "audio session ended")
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact) at \(comparison.offset ?? -1); \(summary)")
    }

    /// An output that cannot start once a session plays (here a filesink whose folder does not
    /// exist; a sound card gone or busy in real life) is built on the playout's thread, not in
    /// SETUP's handler: the session ends with the reason and its connection closes, so the
    /// sender stops instead of streaming into nothing, and the daemon stays up for the next one.
    @Test func anOutputThatCannotStartEndsTheSession() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "filesink location=/nonexistent/airplayd/out.pcm"])
        let result = try stream(daemon, volume: 100)
        #expect(result.status != 0, "pyatv should see the connection close: \(result.stdout)")
        #expect(poll(timeout: 5) { daemon.process.stderr.contains("audio output failed") })
        #expect(daemon.process.stderr.contains("audio session ended") && daemon.process.stderr.contains("refused to start"))
        #expect(!daemon.process.stderr.contains("GStreamer-CRITICAL"), "the failed pipeline is released once")
        #expect(try RawHTTPConnection(port: daemon.port).request("GET", "/info").status == 200, "the daemon still answers")
    }

    /// pyatv 0.18 writes DMAP string lengths in characters: non-ASCII tags arrive malformed.
    /// The receiver ignores that metadata and keeps playing; an error would abort the stream.
    @Test func malformedMetadataNeverStopsTheStream() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let result = try stream(daemon, volume: 100, file: "cafe.flac")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(daemon.process.stderr.contains("audio metadata ignored"))
        #expect(daemon.process.stderr.contains("lost=0"))
    }

    /// With a password configured, pyatv gets a 401 with a Digest challenge, answers it and streams;
    /// with the wrong password nothing plays.
    @Test func aPasswordProtectsTheAudio() throws {
        let config = Products.scratchDirectory("pw") + "/airplayd.toml"
        try "password = \"s3cret\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null", "--config", config])
        let wrong = try stream(daemon, volume: 100, file: "cafe.flac", password: "guess")
        #expect(wrong.status != 0)
        #expect(!daemon.process.stderr.contains("audio announced"), "a refused sender changed nothing")
        let right = try stream(daemon, volume: 100, file: "cafe.flac", password: "s3cret")
        #expect(right.status == 0, "\(right.stderr)")
        #expect(daemon.process.stderr.contains("audio announced"))
        let info = try RawHTTPConnection(port: daemon.port).request("GET", "/info").text
        #expect(info.contains("<key>pw</key>\n\t<true/>"), "\(info)")
    }

    /// 5 % of pyatv's audio packets are dropped on arrival (the daemon's test-only fault knob):
    /// each gap is asked for again (0x55), pyatv resends from its backlog (0x56), and the output
    /// is still bit-exact.
    @Test func droppedPacketsAreRecoveredByResendRequests() throws {
        let sweep = try #require(Self.sweep)
        let raw = sweep.directory + "/lossy-\(UUID().uuidString.prefix(6)).pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"], environment: ["AIRPLAYD_FAULT_DROP_AUDIO_PERCENT": "5"])
        let result = try stream(daemon, volume: 100)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let comparison = sweep.compare(try output(raw))
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        let stream = try RAOPClockTests.streamFigures(daemon.port)
        let received = stream["received"] as? Int ?? 0, requested = stream["requested"] as? Int ?? 0
        let retransmitted = stream["retransmitted"] as? Int ?? 0
        #expect(requested > 20 && retransmitted == requested, "\(stream)")
        #expect(stream["lost"] as? Int == 0, "\(stream)")
        print("measure: 5 % of pyatv's packets dropped: \(requested) requested of \(received) received, \(retransmitted) resent, "
              + "bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// pyatv in one namespace, airplayd in another across a veth link that loses 5 % of every
    /// UDP datagram at random, both ways (nftables in the box's namespace): audio, resend
    /// requests, resends, sync and timing alike. A resend lost too is asked for again while it can still play in time, so nothing
    /// is lost for good and the output is bit-exact.
    @Test func fivePercentLossBothWaysIsRecoveredBitExact() throws {
        let sweep = try #require(Self.sweep)
        let sender = try TestHost(label: "raop-loss-sender")
        defer { sender.close() }
        let box = try TestHost(label: "raop-loss-box")
        defer { box.close() }
        try sender.link(to: box, addresses: ["10.96.1.1"], peerAddress: "10.96.1.2")
        let nft = try #require(TestHost.which("nft"), "nftables is a test dependency (tools/setup-deps --test)")
        for rule in [["add", "table", "inet", "loss"],
                     ["add", "chain", "inet", "loss", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                     ["add", "rule", "inet", "loss", "in", "meta", "l4proto", "udp", "numgen", "random", "mod", "100", "<", "5", "counter", "drop"],
                     ["add", "chain", "inet", "loss", "out", "{", "type", "filter", "hook", "output", "priority", "0", ";", "}"],
                     ["add", "rule", "inet", "loss", "out", "meta", "l4proto", "udp", "numgen", "random", "mod", "100", "<", "5", "counter", "drop"]] {
            let result = try box.run(nft, rule)
            #expect(result.status == 0, "nft \(rule.joined(separator: " ")): \(result.stderr)")
        }
        let raw = box.directory + "/out.pcm"
        let daemon = try RunningDaemon.start(in: box, extra: ["--airplay2", "off", "--audio-output", "raw:\(raw)", "--video-sink", "fakesink sync=true"])
        let deviceID = daemon.storedDeviceID.replacingOccurrences(of: ":", with: "")
        let result = try sender.run(try Products.peerTool("atvremote"), [
            "--storage", "none", "--manual", "--address", "10.96.1.2", "--port", "7000", "--protocol", "raop", "--id", deviceID,
            "--service-properties", "|cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68",
            "stream_file=\(sweep.directory)/sweep.flac",
        ], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        daemon.process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
        let curl = try #require(TestHost.which("curl"))
        let text = try box.run(curl, ["-s", "http://127.0.0.1:7000/now-playing"]).stdout
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        let stream = try #require(document["stream"] as? [String: Any], "\(text)")
        daemon.process.stop(grace: 2)
        let ruleset = try box.run(nft, ["list", "ruleset"]).stdout
        let dropped = ruleset.components(separatedBy: "packets ").dropFirst().first?.split(separator: " ").first.flatMap { Int($0) } ?? 0
        let comparison = sweep.compare(try output(raw))
        let requested = stream["requested"] as? Int ?? 0, again = stream["requestedAgain"] as? Int ?? 0
        #expect(dropped > 20, "the link really lost datagrams: \(ruleset)")
        #expect(stream["lost"] as? Int == 0, "\(stream)")
        #expect(comparison.exact >= 0.9999, "bit-exact share \(comparison.exact): \(stream)")
        print("measure: RAOP across a link losing 5 % of UDP (\(dropped) datagrams dropped): \(requested) requested, "
              + "\(again) asked again, \(stream["retransmitted"] as? Int ?? 0) resent, lost \(stream["lost"] as? Int ?? -1), "
              + "bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    @Test func theVolumePyatvSetsIsApplied() throws {
        let sweep = try #require(Self.sweep)
        let raw = sweep.directory + "/vol-\(UUID().uuidString.prefix(6)).pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let result = try stream(daemon, volume: 50)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(daemon.process.stderr.contains("volume.dB=-15.0"))
        // pyatv maps 50 % to -15 dB: every sample is scaled by 10^(-15/20).
        let gain = pow(10.0, -15.0 / 20.0)
        let comparison = sweep.compare(try output(raw), transform: { Int16((Double($0) * gain).rounded()) }, tolerance: 1)
        #expect(comparison.exact >= 0.999, "scaled share \(comparison.exact)")
    }
}

/// An encrypting sender written on Python's `cryptography` package: it checks our Apple-Response
/// against the AirPort public key and streams RSA-OAEP/AES-CBC encrypted L16.
@Suite(.timeLimit(.minutes(10))) struct RAOPEncryptionTests {
    @Test func appleResponseVerifiesAndEncryptedAudioComesOutBitExact() throws {
        let python = try Products.peerTool("python")
        let raw = Products.scratchDirectory("enc") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_encrypted_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), raw], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").last)
        #expect(line.hasPrefix("OK "), "\(result.stdout)")
        #expect(line.contains("\"offset_frames\": 0"))
        #expect(daemon.process.stderr.contains("encrypted=true"))
    }
}

/// ALAC: real packets from an .m4a ffmpeg encodes, sent as RAOP (4096-frame packets, larger
/// than NIO's default 2 KiB datagram buffer), decoded by GStreamer's avdec_alac.
@Suite(.timeLimit(.minutes(10))) struct RAOPALACTests {
    /// AAC-LC: ffmpeg's AAC in an .m4a, sent as RAOP mpeg4-generic with its AudioSpecificConfig.
    /// The reference is ffmpeg's own decode; GStreamer's avdec_aac is the same decoder, so the
    /// output matches within one step of 16-bit rounding.
    @Test func aacPacketsDecodeLikeFFmpeg() throws {
        let python = try Products.peerTool("python")
        let sweep = try #require(RAOPInteropTests.sweep)
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        let m4a = sweep.directory + "/sweep-aac.m4a"
        let reference = sweep.directory + "/sweep-aac-ref.wav"
        for job in [["-loglevel", "error", "-y", "-i", sweep.directory + "/sweep.wav", "-c:a", "aac", "-b:a", "256k", m4a],
                    ["-loglevel", "error", "-y", "-i", m4a, "-c:a", "pcm_s16le", reference]] {
            #expect(try runCommand(ffmpeg, job, timeout: 60).status == 0)
        }
        let raw = Products.scratchDirectory("aac") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_alac_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), raw, m4a, reference, "2"], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").last?.hasPrefix("OK ") == true, "\(result.stdout)")
        #expect(daemon.process.stderr.contains("codec=AAC"))
    }

    /// AAC-ELD as iOS announces it (`mode=AAC-eld; constantDuration=…`, no `config=`): the
    /// receiver builds the AudioSpecificConfig itself, and GStreamer's avdec_aac decodes each
    /// 480- or 512-frame packet. The packets are built bit by bit (no ELD encoder is free to
    /// install), each a pair of steady tones, which must come out at their frequencies.
    @Test(arguments: [480, 512])
    func aacELDPacketsDecodeToTheirTones(frameLength: Int) throws {
        let python = try Products.peerTool("python")
        let raw = Products.scratchDirectory("eld") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_eld_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), raw, String(frameLength)], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").last?.hasPrefix("OK ") == true, "\(result.stdout)")
        #expect(daemon.process.stderr.contains("codec=AAC-ELD"))
    }

    @Test func alacPacketsComeOutBitExact() throws {
        let python = try Products.peerTool("python")
        let sweep = try #require(RAOPInteropTests.sweep)
        let m4a = sweep.directory + "/sweep-alac.m4a"
        if !FileManager.default.fileExists(atPath: m4a) {
            let encoded = try runCommand(try #require(TestHost.which("ffmpeg")),
                                         ["-loglevel", "error", "-y", "-i", sweep.directory + "/sweep.wav", "-c:a", "alac", m4a], timeout: 60)
            #expect(encoded.status == 0, "\(encoded.stderr)")
        }
        let raw = Products.scratchDirectory("alac") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_alac_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), raw, m4a, sweep.directory + "/sweep.wav"],
                                    timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").last)
        #expect(line.hasPrefix("OK "), "\(result.stdout)")
        #expect(line.contains("\"offset_frames\": 0"))
        #expect(daemon.process.stderr.contains("codec=ALAC"))
        #expect(daemon.process.stderr.contains("lost=0"))
    }
}

/// RTSP on the control port, spoken byte by byte as senders do.
@Suite(.timeLimit(.minutes(10))) struct RTSPConformanceTests {
    static let sdp = """
        v=0\r
        o=iTunes 3413821438 0 IN IP4 127.0.0.1\r
        s=iTunes\r
        c=IN IP4 127.0.0.1\r
        t=0 0\r
        m=audio 0 RTP/AVP 96\r
        a=rtpmap:96 L16/44100/2\r
        a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r

        """

    private func rtsp(_ connection: RawHTTPConnection, _ method: String, _ cseq: Int, headers: [String: String] = [:],
                      body: String = "") throws -> RawHTTPConnection.Message {
        var all = headers
        all["CSeq"] = String(cseq)
        return try connection.request(method, "rtsp://127.0.0.1/3413821438", headers: all, body: Array(body.utf8), protocolName: "RTSP/1.0")
    }

    @Test func aSessionFromAnnounceToTeardown() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let c = try RawHTTPConnection(port: daemon.port)
        let options = try rtsp(c, "OPTIONS", 1, headers: ["Apple-Challenge": "AAAAAAAAAAAAAAAAAAAAAA"])
        #expect(options.startLine == "RTSP/1.0 200 OK")
        #expect(options.headers["cseq"] == "1")
        #expect(options.headers["public"]?.contains("ANNOUNCE") == true)
        #expect(options.headers["server"] == "AirTunes/366.0")

        #expect(try rtsp(c, "RECORD", 2).status == 454, "no session yet")
        #expect(try rtsp(c, "ANNOUNCE", 3, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        let setup = try rtsp(c, "SETUP", 4, headers: ["Transport": "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001;timing_port=6002"])
        #expect(setup.status == 200)
        let transport = RTSPTransport(parsing: setup.headers["transport"] ?? "")
        #expect(transport.port("server_port") != nil)
        #expect(transport.port("control_port") != nil)
        #expect(transport.port("timing_port") != nil)
        #expect(Int(setup.headers["session"] ?? "") != nil, "Session is a decimal number")
        #expect(try rtsp(c, "SETUP", 5).status == 455)
        #expect(try rtsp(c, "SET_PARAMETER", 6, headers: ["Content-Type": "text/parameters"], body: "volume: -11.5\r\n").status == 200)
        let volume = try rtsp(c, "GET_PARAMETER", 7, headers: ["Content-Type": "text/parameters"], body: "volume\r\n")
        #expect(volume.text == "volume: -11.500000\r\n")
        #expect(try rtsp(c, "SET_PARAMETER", 8, headers: ["Content-Type": "text/parameters"], body: "volume: 6\r\n").status == 400)
        #expect(try rtsp(c, "SET_PARAMETER", 9, headers: ["Content-Type": "text/parameters"], body: "loudness: 3\r\n").status == 451)
        #expect(try rtsp(c, "SET_PARAMETER", 10, headers: ["Content-Type": "text/parameters"], body: "progress: 1/2\r\n").status == 400)
        let dmap = DMAP.field("mlit", DMAP.field("minm", Array("A Title".utf8)) + DMAP.field("asar", Array("An Artist".utf8)))
        #expect(try c.request("SET_PARAMETER", "rtsp://127.0.0.1/1", headers: ["CSeq": "11", "Content-Type": "application/x-dmap-tagged"],
                              body: dmap, protocolName: "RTSP/1.0").status == 200)
        #expect(try c.request("SET_PARAMETER", "rtsp://127.0.0.1/1", headers: ["CSeq": "12", "Content-Type": "application/x-dmap-tagged"],
                              body: [0x6D, 0x6C, 0x69, 0x74, 0, 0, 0, 99], protocolName: "RTSP/1.0").status == 200,
                "broken DMAP is ignored, never fatal to the stream")
        #expect(try rtsp(c, "RECORD", 13).headers["audio-latency"] != nil)
        #expect(try c.request("POST", "/feedback", headers: ["CSeq": "14"], protocolName: "RTSP/1.0").status == 200)
        #expect(try rtsp(c, "FLUSH", 15, headers: ["RTP-Info": "seq=1;rtptime=0"]).status == 200)
        let info = try RawHTTPConnection(port: daemon.port).request("GET", "/now-playing").text
        #expect(info.contains("\"title\":\"A Title\""))
        #expect(try rtsp(c, "TEARDOWN", 16).status == 200)
        #expect(try rtsp(c, "RECORD", 17).status == 454)
    }

    @Test func unsupportedStreamsAreRefusedWithReasons() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let c = try RawHTTPConnection(port: daemon.port)
        let aac = Self.sdp.replacingOccurrences(of: "L16/44100/2", with: "mpeg4-generic/44100/2")
        let refused = try rtsp(c, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: aac)
        #expect(refused.status == 400, "AAC without its AudioSpecificConfig")
        #expect(refused.text.contains("config="))
        let wideALAC = Self.sdp.replacingOccurrences(of: "L16/44100/2", with: "AppleLossless")
            .replacingOccurrences(of: "352 0 16 40", with: "352 0 32 40")
        #expect(try rtsp(c, "ANNOUNCE", 6, headers: ["Content-Type": "application/sdp"], body: wideALAC).status == 415, "32-bit ALAC")
        let badKey = Self.sdp + "a=rsaaeskey:AAAA\r\na=aesiv:AAAAAAAAAAAAAAAAAAAAAA==\r\n"
        let refusedKey = try rtsp(c, "ANNOUNCE", 2, headers: ["Content-Type": "application/sdp"], body: badKey)
        #expect(refusedKey.status == 400, "a key that does not unwrap with the AirPort key")
        #expect(refusedKey.text.contains("rsaaeskey"))
        #expect(try rtsp(c, "ANNOUNCE", 3, headers: ["Content-Type": "text/plain"], body: "hello").status == 415)
        #expect(try rtsp(c, "ANNOUNCE", 4, headers: ["Content-Type": "application/sdp"], body: "v=0\r\n").status == 400)
        #expect(try rtsp(c, "DESCRIBE", 5).status == 501, "RTSP methods RAOP does not use")
    }

    @Test func aSecondSenderTakesOverAndTheFirstIsDisconnected() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let first = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(first, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        let second = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(second, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        // The replaced sender's connection is closed by the receiver.
        var closed = false
        do {
            _ = try first.readMessage(timeout: 5)
        } catch {
            closed = "\(error)".contains("closed")
        }
        #expect(closed)
    }

    /// A sender that vanishes (no RTSP, no RTP) loses its session after the timeout; the
    /// connection is closed and the next sender is served.
    @Test func aVanishedSenderTimesOut() throws {
        let config = Products.scratchDirectory("timeout") + "/airplayd.toml"
        try "audio_session_timeout = 2\naudio_takeover = \"refuse\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null", "--config", config])
        let gone = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(gone, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        let started = monotonicSeconds()
        var closed = false
        do { _ = try gone.readMessage(timeout: 8) } catch { closed = "\(error)".contains("closed") }
        #expect(closed)
        let waited = monotonicSeconds() - started
        #expect(waited > 1.5 && waited < 4.5, "ended after \(waited) s")
        #expect(daemon.process.stderr.contains("no RTSP or RTP for 2 s"))
        let next = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(next, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
    }

    @Test func takeoverCanBeRefused() throws {
        let config = Products.scratchDirectory("audio-refuse") + "/airplayd.toml"
        try "audio_takeover = \"refuse\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null", "--config", config])
        let first = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(first, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        let second = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(second, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 453)
        #expect(try rtsp(first, "TEARDOWN", 2).status == 200)
        #expect(try rtsp(second, "ANNOUNCE", 2, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
    }

    /// Packets arrive out of order and one is missing: the receiver asks for it (0x55) on the
    /// sender's control port, and the retransmission (0x56) fills the gap in the output.
    @Test func aGapIsRequestedAndTheRetransmissionFillsIt() throws {
        let raw = Products.scratchDirectory("gap") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let control = try UDPSocket()
        let c = try RawHTTPConnection(port: daemon.port)
        #expect(try rtsp(c, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Self.sdp).status == 200)
        let setup = try rtsp(c, "SETUP", 2, headers: ["Transport": "RTP/AVP/UDP;unicast;mode=record;control_port=\(control.port);timing_port=\(control.port)"])
        let transport = RTSPTransport(parsing: setup.headers["transport"] ?? "")
        let serverPort = Int(try #require(transport.port("server_port")))
        let controlPort = Int(try #require(transport.port("control_port")))
        #expect(try rtsp(c, "RECORD", 3).status == 200)
        let audio = try UDPSocket()
        // A short pause after RECORD before the first packet (no state to poll: RECORD was already answered).
        Thread.sleep(forTimeInterval: 0.1)
        // Packet n carries the value n in every sample, big-endian.
        func packet(_ n: UInt16, marker: Bool = false) -> RAOPAudioPacket {
            let sample: [UInt8] = [UInt8(n >> 8), UInt8(n & 0xFF)]
            return RAOPAudioPacket(sequence: 65533 &+ n, timestamp: 4_294_960_000 &+ UInt32(n) * 352, marker: marker,
                                   payload: Array(repeating: sample, count: 704).flatMap { $0 })
        }
        // Sequence and timestamp both wrap inside this stream.
        for n: UInt16 in [1, 2, 4, 5, 6] {
            try audio.send(packet(n, marker: n == 1).bytes, to: serverPort)
        }
        // Our control port is also our timing port: skip the receiver's timing requests (0x52).
        var resend: [UInt8]?
        for _ in 0..<10 {
            guard let datagram = control.receive(timeout: 3) else { break }
            if datagram.count >= 2, datagram[1] & 0x7F == 0x55 { resend = datagram; break }
        }
        let request = try #require(resend, "a resend request arrives on our control port")
        #expect(Array(request.prefix(2)) == [0x80, 0xD5])
        #expect(UInt16(request[4]) << 8 | UInt16(request[5]) == 65533 &+ 3, "first missing sequence")
        #expect(UInt16(request[6]) << 8 | UInt16(request[7]) == 1, "one packet missing")
        try audio.send([0x80, 0xD6, 0x00, 0x01] + packet(3).bytes, to: controlPort)
        // The six packets (704 samples each) reach the output.
        #expect(poll(timeout: 5) { ((try? FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int) ?? 0) >= 6 * 704 * 2 },
                "six packets played")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let values = stride(from: 0, to: samples.count, by: 704).map { samples[$0] }
        #expect(values.prefix(6) == [1, 2, 3, 4, 5, 6], "played in order, gap filled: \(values.prefix(8))")
        #expect(try rtsp(c, "TEARDOWN", 4).status == 200)
    }
}

/// A UDP socket on 127.0.0.1 for tests.
final class UDPSocket {
    let descriptor: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8], to port: Int) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard sent == bytes.count else { throw TestHostError("sendto failed") }
    }

    func receive(timeout: Double) -> [UInt8]? {
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&pollDescriptor, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? Array(buffer.prefix(count)) : nil
    }
}
