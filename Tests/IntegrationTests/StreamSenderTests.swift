import AirPlayTesting
import Foundation
import Testing

/// `airplay stream`: local audio files to AirPlay speakers, as L16 RAOP.
@Suite(.serialized) struct StreamSenderTests {
    private func airplay(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try runCommand(try Products.executable("airplay"), arguments,
                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeout: timeout)
    }

    @Test func aFlacFileReachesAirplaydBitExact() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let raw = Products.scratchDirectory("stream") + "/out.pcm"
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)"])
        let started = monotonicSeconds()
        let result = try airplay(["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)", "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(monotonicSeconds() - started > 6, "paced in real time")
        #expect(result.stdout.contains("\"ok\":true"))
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        #expect(comparison.offset == 0)
        #expect(daemon.process.stderr.contains("lost=0"))
        // Timed by our sender's clock (its sync packets agree with its timing answers), which is
        // the machine's: nothing to correct, and every packet out within a few milliseconds.
        let stream = try RAOPClockTests.streamFigures(daemon.port)
        let clock = try #require(stream["clock"] as? [String: Any]), sync = try #require(stream["sync"] as? [String: Any])
        #expect(clock["source"] as? String == "sender", "\(stream)")
        #expect(stream["framesInserted"] as? Int == 0 && stream["framesRemoved"] as? Int == 0, "\(stream)")
        #expect((sync["p95Ms"] as? Double ?? 99) < 5, "\(sync)")
        print("measure: airplay stream → airplayd, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %, "
              + "sync error mean \(sync["meanMs"] ?? "?") ms p95 \(sync["p95Ms"] ?? "?") ms max \(sync["maxMs"] ?? "?") ms")
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
                                      ["-c", config, "-a", "Shairport Test", "-p", "5055", "-o", "stdout"], label: "shairport-sync")
        #expect(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Shairport Test") } != nil, "\(receiver.stderr)")
        let result = try host.run(try Products.executable("airplay"), ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:5055"],
                                  timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        Thread.sleep(forTimeInterval: 1)
        let samples = try Data(contentsOf: URL(fileURLWithPath: receiver.stdoutPath)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // shairport-sync drops the first packets until its clocks settle: compare from 1 s on.
        let comparison = sweep.compare(samples, from: 44100)
        #expect(comparison.exact >= 0.99, "bit-exact share \(comparison.exact) of \(samples.count / 2) frames; \(receiver.stderr.suffix(1500))")
        print("measure: airplay stream → shairport-sync, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }
}
