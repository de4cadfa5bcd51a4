import AirPlayTesting
import Foundation
import Testing

/// The RAOP senders every Linux desktop has, from Debian: PulseAudio's `module-raop-sink` and
/// PipeWire's `libpipewire-module-raop-sink`. Both send ALAC escape frames (uncompressed, with a
/// frame count and no END element), audio from an ephemeral UDP port rather than their
/// control or timing port, and RSA/AES or clear packets. All of it must play bit-exact.
@Suite(.serialized, .timeLimit(.minutes(10))) struct LinuxSenderTests {
    private func output(_ path: String) throws -> [Int16] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The daemon's closing line for the session: `received=…`, `dropped=…`.
    private func sessionSummary(_ daemon: LocalDaemon) -> String {
        daemon.process.lines(containing: "audio session ended").last ?? ""
    }

    @Test(arguments: ["RSA", "none"])
    func pulseAudioPlaysBitExact(encryption: String) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let padded = try PaddedSweep.make(from: sweep.directory + "/sweep.wav")
        // PulseAudio 16.1 can abort itself when a receiver answers SETUP and RECORD faster than
        // its I/O thread reads its own queue (raop-sink.c asserts a poll item that the queued
        // CONNECTED message has not made yet; `PulseAudioRAOPSender.abortedOnItsOwnRace`).
        // That is the sender's race, not the receiver's: it alone earns another try, with a new
        // sender. It failed two CI runs in a row with paplay's 2 s buffer; the sender now plays
        // with 50 ms, which made it rare.
        let attempts = 3
        for attempt in 1...attempts {
            let raw = sweep.directory + "/pulse-\(encryption)-\(UUID().uuidString.prefix(6)).pcm"
            // AirPlay 2 on: the same box serves AirPlay 1 senders as before.
            let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)", "--airplay2", "on"])
            let pulse = try PulseAudioRAOPSender()
            let played = try pulse.play(padded, port: daemon.port, encryption: encryption) {
                daemon.process.stderr.contains("request.method=OPTIONS")
            }
            if played.status != 0, pulse.abortedOnItsOwnRace, attempt < attempts {
                print("measure: PulseAudio RAOP sink (\(encryption)) aborted on its own SETUP/RECORD race (play \(attempt)); trying again")
                continue
            }
            #expect(played.status == 0, "paplay: \(played.stderr)\npulseaudio: \(pulse.log.suffix(4000))")
            #expect(poll(timeout: 10) { self.sessionSummary(daemon).contains("received=") }, "the session ends when the sink goes")
            let summary = sessionSummary(daemon)
            #expect(daemon.process.stderr.contains("codec=ALAC encrypted=\(encryption == "RSA")"))
            #expect(summary.contains("dropped=0"), "\(summary)")
            let comparison = sweep.compare(try output(raw))
            #expect(comparison.offset != nil, "the sweep is found in the output; \(summary)")
            #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact); \(summary)")
            print("measure: PulseAudio RAOP sink (\(encryption)), bit-exact \(String(format: "%.4f", comparison.exact * 100)) %; \(summary)")
            return
        }
    }

    /// PipeWire's graph, on its dummy driver at a 352-frame quantum, now and then runs a cycle
    /// late. Its RAOP sink then either sends a packet more or less than the file holds (every
    /// frame after it is still the file's, a packet later or earlier: checked as such), or
    /// moves its clock a packet or more against its RTP times; its next sync says so, and the
    /// box follows the sender's clock (frames added over the next seconds), as it must for a
    /// group. That run is not bit-exact through nobody's fault here: it earns up to four more
    /// tries, each with a new PipeWire (on this machine about one play in two moved its clock,
    /// with this receiver and the one before the sender conventions alike). Any other failure
    /// fails at once.
    @Test(arguments: ["RSA", "none"])
    func pipeWirePlaysBitExact(encryption: String) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let padded = try PaddedSweep.make(from: sweep.directory + "/sweep.wav")
        for attempt in 1...5 {
            let raw = sweep.directory + "/pipewire-\(encryption)-\(UUID().uuidString.prefix(6)).pcm"
            // AirPlay 2 on: the same box serves AirPlay 1 senders as before.
            let daemon = try LocalDaemon(extra: ["--audio-output", "raw:\(raw)", "--airplay2", "on"])
            let pipewire = try PipeWireRAOPSender(port: daemon.port, encryption: encryption)
            try pipewire.play(padded)
            // PipeWire sends no TEARDOWN: the session ends when the sender goes.
            withExtendedLifetime(pipewire) {}
            #expect(daemon.process.stderr.contains("codec=ALAC encrypted=\(encryption == "RSA")"), "\(pipewire.log.suffix(2000))")
            let samples = try output(raw)
            var comparison = sweep.compare(samples)
            if comparison.exact < 0.999, let offset = comparison.offset {
                let packets = sweep.compare(samples, offsets: (-4...4).map { offset + $0 * 352 })
                print("measure: PipeWire RAOP sink (\(encryption)): \(String(format: "%.4f", packets * 100)) % of the file in place within 4 packets")
                comparison.exact = max(comparison.exact, packets)
            }
            let figures = try RAOPClockTests.streamFigures(daemon.port)
            let clock = figures["clock"] as? [String: Any] ?? [:]
            if comparison.exact < 0.999, attempt < 5, clock["jumps"] as? Int ?? 0 > 0 {
                print("measure: PipeWire RAOP sink (\(encryption)) moved its clock \(clock["largestJumpMs"] ?? "?") ms mid-stream (play \(attempt)): trying again")
                continue
            }
            #expect(comparison.offset != nil, "the sweep is found in the output; \(figures)")
            #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact); \(figures)")
            #expect(figures["lost"] as? Int == 0, "\(figures)")
            print("measure: PipeWire RAOP sink (\(encryption)), bit-exact \(String(format: "%.4f", comparison.exact * 100)) %; \(figures)")
            return
        }
    }
}
