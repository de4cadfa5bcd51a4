import AirPlayTesting
import Foundation
import Testing

/// Playback timed to the sender's clock: timing exchanges and sync packets map RTP times to our
/// clock, and a sender whose crystal runs fast or slow is followed one frame at a time.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RAOPClockTests {
    /// The `stream` figures of `/now-playing` (the current session's, or the last one's).
    static func streamFigures(_ port: Int) throws -> [String: Any] {
        let text = try RawHTTPConnection(port: port).request("GET", "/now-playing").text
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        return try #require(document["stream"] as? [String: Any], "\(text)")
    }

    /// A sender whose clock runs 450 ppm fast (or slow) paces its packets by that clock; we play
    /// by ours, so about 20 frames a second must go (or come). The output keeps its waveform:
    /// no step between neighbouring frames is much larger than in the sine itself.
    @Test(arguments: [450.0, -450.0])
    func aDriftingSenderClockIsFollowedWithoutJumps(ppm: Double) throws {
        let python = try Products.peerTool("python")
        let raw = Products.scratchDirectory("drift") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_drifting_sender.py"
        // The drift is told from the timing answers once six quick ones span 10 s; under load a
        // slow answer does not count (its offset is skewed), so the stream leaves room for more.
        // The two senders play one after the other: together they slowed each other's answers
        // enough that one of them never had six (CI, session 27: 450 ppm estimated as 0).
        let seconds = 16.0
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), String(ppm), String(seconds)], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").last.map(String.init), "\(result.stdout)")
        #expect(line.hasPrefix("OK "), "\(result.stdout)")
        // The box asks for the sender's clock eight times in its first 0.4 s, so the quickest
        // of several answers starts the playout (a lossy link may lose some).
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any], "\(line)")
        #expect(report["timing_requests_first_second"] as? Int == 8, "\(line)")

        let stream = try Self.streamFigures(daemon.port)
        let clock = try #require(stream["clock"] as? [String: Any])
        let sync = try #require(stream["sync"] as? [String: Any])
        #expect(clock["source"] as? String == "sender", "\(stream)")
        let drift = clock["driftPPM"] as? Double ?? 0
        #expect(abs(drift - ppm) < 45, "drift estimated at \(drift) ppm")
        // The sender sends `seconds` of its clock in seconds / (1 + ppm) of ours.
        let expected = seconds * 44100 * abs(ppm) * 1e-6
        let (wanted, unwanted) = ppm > 0 ? ("framesRemoved", "framesInserted") : ("framesInserted", "framesRemoved")
        let corrected = stream[wanted] as? Int ?? 0
        // The count depends on how far off the start was and on how loaded the machine is (the
        // sender is Python): what matters is the direction and the order of magnitude.
        #expect(Double(corrected) > expected * 0.4 && Double(corrected) < expected * 1.6, "\(corrected) \(wanted), \(expected) expected")
        #expect((stream[unwanted] as? Int ?? 0) < 10)
        // The sync error counts how late the output thread woke and how evenly the Python
        // sender paced its packets: 3.5-4.2 ms p95 on a quiet machine, 5.0 beside the suite,
        // 7.5 beside stress-ng. What shows the drift followed is the estimate and the count of
        // frames corrected above; this bound catches a playout gone astray.
        let p95 = sync["p95Ms"] as? Double ?? 99
        #expect(p95 < 10, "sync error p95 \(p95) ms")
        #expect(stream["lost"] as? Int == 0)

        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.count / 2 > Int(seconds * 44100 * 0.95))
        // The largest step of the sines is 12000·2π·441/44100 ≈ 754 (left), 9000·2π·662/44100 ≈ 849
        // (right). A frame removed by averaging steps 1.5 times that (1273); one cut outright, twice (1698).
        var worstStep = 0
        for index in stride(from: 2, to: samples.count, by: 1) {
            worstStep = max(worstStep, abs(Int(samples[index]) - Int(samples[index - 2])))
        }
        #expect(worstStep < 1500, "a click: neighbouring frames differ by \(worstStep)")
        print("measure: sender clock \(ppm) ppm, estimated \(drift) ppm, \(corrected) frames \(wanted) (\(Int(expected)) expected), "
              + "sync error mean \(sync["meanMs"] ?? "?") ms p95 \(p95) ms max \(sync["maxMs"] ?? "?") ms, worst step \(worstStep), clock \(clock)")
    }

    /// libraop (Music Assistant's sender) stamps each flags-7 sync with its next frame's time.
    /// Started now (0.25 s), it back-dates its timeline by its latency and bursts that backlog at
    /// once: its first sync, sent before our timing requests are answered, is 2.55 s behind its
    /// arrival. Given a start time 4 s ahead, as Music Assistant gives it, its syncs are stamped
    /// seconds ahead until the audio flows. Both are right: every frame plays when the sender
    /// promised (0.25 s after its stamp, by flags 7), bit for bit.
    @Test(arguments: ["0.25", "4"])
    func aLibraopStartPlaysWhenPromised(startIn: String) throws {
        let python = try Products.peerTool("python")
        let fifo = Products.scratchDirectory("backdated") + "/out.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(fifo)"])
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_backdated_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), fifo, "8", "2.55", startIn], timeout: 90)
        let line = try #require(result.stdout.split(separator: "\n").last.map(String.init), "\(result.stdout)\(result.stderr)")
        #expect(result.status == 0 && line.hasPrefix("OK "), "\(result.stdout)\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
        let exact = report["exact"] as? Double ?? 0
        let errors = report["errors_ms"] as? [Double] ?? []
        #expect(exact >= 0.999, "\(report)")
        #expect(errors.count >= 7 && errors.allSatisfy { abs($0) <= 5 }, "heard when promised, from the first second: \(errors)")

        let stream = try Self.streamFigures(daemon.port)
        let clock = try #require(stream["clock"] as? [String: Any])
        #expect(clock["source"] as? String == "sender" && clock["implausibleSyncs"] as? Int == 0, "\(stream)")
        #expect(stream["framesRemoved"] as? Int == 0 && stream["framesInserted"] as? Int == 0 && stream["lost"] as? Int == 0, "\(stream)")
        print("measure: libraop-style start in \(startIn) s, bit-exact \(exact * 100) %, heard against the promise \(errors) ms, "
              + "resent \(report["resent"] ?? "?")")
    }

    /// With every core busy (stress-ng, as a compile would), the output still holds every frame
    /// whole, in order and with its channels in place: a reader of the raw FIFO that falls
    /// behind gets the rest of a frame begun, never a sample shifted (the one-sample shift seen
    /// once under load came from a FIFO write cut mid-frame).
    ///
    /// Not every frame bit-exact: starved of CPU, the Python sender answers timing requests
    /// milliseconds late, unevenly, so its clock may seem to move by over 2 ms for a second and
    /// the playout rightly adds or removes a few frames (CI, session 33: 4 frames inserted, the
    /// rest shifted by them, 27.5 % bit-exact at the same place). Frames found whole and in order
    /// around those few is what this test is about; the daemon's count of them is printed.
    @Test func underLoadEveryFrameStaysWholeAndInOrder() throws {
        try TestHost.require(["stress-ng"])
        let python = try Products.peerTool("python")
        let fifo = Products.scratchDirectory("loaded") + "/out.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(fifo)"])
        let stress = try ManagedProcess(try #require(TestHost.which("stress-ng")), ["--cpu", "0", "--timeout", "20"],
                                        directory: Products.scratchDirectory("stress"), label: "stress-ng")
        defer { stress.stop() }
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_backdated_sender.py"
        let result = try runCommand(python, [script, "127.0.0.1", String(daemon.port), fifo, "10", "2.0", "0.25"], timeout: 90)
        let line = try #require(result.stdout.split(separator: "\n").last.map(String.init), "\(result.stdout)\(result.stderr)")
        #expect(result.status == 0 && line.hasPrefix("OK "), "\(result.stdout)\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
        let stream = try Self.streamFigures(daemon.port)
        let corrected = (stream["framesInserted"] as? Int ?? 0) + (stream["framesRemoved"] as? Int ?? 0)
        let inOrder = report["in_order"] as? Double ?? 0
        #expect(inOrder >= 0.999, "whole frames, in order, channels in place: \(report); the playout: \(stream)")
        // Corrections are a frame a packet, and only past 2 ms: a few dozen at most in 10 s.
        #expect(corrected < 200, "\(stream)")
        print("measure: under stress-ng on every core, whole and in order \(inOrder * 100) %, bit-exact \(report["exact"] ?? "?"), "
              + "frames corrected \(corrected), packets lost \(stream["lost"] ?? "?"), heard against the promise \(report["errors_ms"] ?? "?") ms")
    }
}
