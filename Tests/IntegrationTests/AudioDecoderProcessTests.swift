import AirPlayTesting
import Foundation
import Testing

/// AAC (from iPhones and Apple's Music app, buffered or realtime) is decoded by GStreamer in a
/// process of its own per stream (`airplayd --audio-decoder`): a crash there, on a hostile
/// packet or a bug in `avdec_aac`, costs that stream a moment of audio, never the daemon.
@Suite(.timeLimit(.minutes(10))) struct AudioDecoderProcessTests {
    /// Twenty seconds of AAC (realtime RAOP) to one room; three seconds in, its decoder process is killed as a
    /// segfault would kill it. The daemon says so, starts another for the next packets and
    /// plays the stream to its end: the tone fills nearly all of the output (measured: one packet lost, a new
    /// decoder within 0.1 s, the tone in all 200 tenths of a second).
    @Test func aCrashedAACDecoderCostsAMomentNotTheStream() throws {
        let directory = Products.scratchDirectory("decoder-crash")
        let tone = directory + "/tone.m4a", reference = directory + "/tone.wav"
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        for job in [["-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=20", "-ac", "2",
                     "-c:a", "aac", "-b:a", "256k", tone],
                    ["-loglevel", "error", "-y", "-i", tone, "-c:a", "pcm_s16le", reference]] {
            #expect(try runCommand(ffmpeg, job, timeout: 60).status == 0)
        }
        let raw = directory + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        // Realtime AAC-LC (mpeg4-generic) paced as a sender plays it; its comparison with the
        // reference is not the point here (the packets lost to the crash are missing).
        let stream = try ManagedProcess(try Products.peerTool("python"),
                                        [Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_alac_sender.py", "127.0.0.1",
                                         String(daemon.port), raw, tone, reference, "2"],
                                        directory: directory, label: "raop-aac-sender")
        func decoderPIDs() -> [Int32] {
            daemon.process.lines(containing: "audio decoder process started").compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
            }
        }
        #expect(poll(timeout: 15) { !decoderPIDs().isEmpty }, "\(daemon.process.stderr.suffix(2000))\n\(stream.stdout)\(stream.stderr)")
        Thread.sleep(forTimeInterval: 3)   // three seconds into the stream, mid-play, as the test says
        let first = try #require(decoderPIDs().first)
        #expect(kill(first, SIGSEGV) == 0)
        #expect(poll(timeout: 10) { decoderPIDs().count >= 2 }, "a new decoder for the next packets: \(daemon.process.stderr.suffix(2000))")
        Thread.sleep(forTimeInterval: 1)   // a second of stream for the new decoder (its RSS, below)
        // What a decoder process costs: its resident memory, a second into its stream.
        let resident = decoderPIDs().last.flatMap { try? String(contentsOfFile: "/proc/\($0)/status", encoding: .utf8) }?
            .split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.map { $0.dropFirst(6).trimmingCharacters(in: .whitespaces) } ?? "?"
        #expect(stream.waitForExit(timeout: 60) != nil, "\(stream.stdout)\(stream.stderr)")
        // The session went on to the sender's TEARDOWN, the packet in the dying decoder dropped.
        #expect(daemon.process.lines(containing: "audio session ended").last?.contains("reason=TEARDOWN") == true, "\(daemon.process.stderr.suffix(2000))")
        #expect(daemon.process.isRunning)
        let ended = daemon.process.lines(containing: "audio decoder process ended").first ?? ""
        #expect(ended.contains("pid=\(first)") && ended.contains("killed by signal 11"), "\(daemon.process.stderr.suffix(3000))")
        // The session's end ends its decoder, reaped (no zombie left).
        let second = try #require(decoderPIDs().last)
        #expect(poll(timeout: 5) { kill(second, 0) != 0 }, "decoder \(second) outlived its session")
        #expect(daemon.process.isRunning)
        daemon.process.stop(grace: 2)
        // 16-bit stereo at 44.1 kHz, in tenths of a second: the tone's, or silence.
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let window = 4410 * 2
        let loud = stride(from: 0, to: samples.count - window, by: window).filter { start in
            samples[start..<start + window].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window) > 1000 * 1000
        }.count
        #expect(loud >= 190, "tone in \(loud) of 200 tenths of a second: \(daemon.process.stderr.suffix(2000))")
        print("measure: AAC decoder process killed 3 s into a 20 s stream: tone in \(loud) tenths of a second of 200, decoders started \(decoderPIDs().count), a decoder's RSS \(resident)")
    }
}
