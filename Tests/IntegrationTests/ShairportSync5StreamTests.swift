import AirPlayMedia
import AirPlayTesting
import Foundation
import Testing

/// `airplay stream --protocol 2 --mode buffered` into the AirPlay 2 receiver Linux boxes run:
/// shairport-sync 5.2.1 with nqptp (`../shared/peers`), in a namespace of its own with avahi,
/// following our PTP grandmaster across a veth link. Its `stdout` backend writes what it
/// decoded at the rate and depth the test sets, with the volume ignored so nothing is scaled;
/// those bytes are compared with the file. Before the SSRC named the format, shairport-sync
/// dropped every packet ("Unrecognised SSRC") and played nothing.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ShairportSync5StreamTests {
    /// What one stream left: shairport-sync's output bytes, `airplay`'s result and shairport-sync's log.
    struct Played {
        var output: [UInt8]
        var stream: CommandResult
        var log: String
    }

    /// shairport-sync 5 with nqptp and avahi in a namespace of its own (10.97.1.2:7000), joined to
    /// a sender's namespace (10.97.1.1) by a veth link; its output is `rate` Hz `format`.
    final class Reference {
        let sender: TestHost
        let theirs: TestHost
        let clock: ManagedProcess
        let process: ManagedProcess
        /// The sender's end of the link.
        let senderInterface: String
        /// Whether the sender's namespace is this reference's own (else a group's, closed by it).
        private let ownsSender: Bool
        static let target = "10.97.1.2:7000"

        /// With `sender`, shairport-sync 5 joins that namespace's group at `addresses` (its own,
        /// the sender's end) instead of a sender namespace of its own.
        init(label: String, rate: Int = 44100, format: String = "S16_LE", sender: TestHost? = nil,
             addresses: (String, String) = ("10.97.1.2", "10.97.1.1"), metadataPipe: String? = nil) throws {
            let nqptp = AppleProfileTests.reference + "/bin/nqptp", shairport = AppleProfileTests.reference + "/bin/shairport-sync"
            guard FileManager.default.isExecutableFile(atPath: shairport), FileManager.default.isExecutableFile(atPath: nqptp) else {
                throw TestHostError("shairport-sync 5 is not built at \(AppleProfileTests.reference): run tools/setup-deps --test")
            }
            ownsSender = sender == nil
            self.sender = try sender ?? TestHost(label: label + "-sender")
            theirs = try TestHost(label: label + "-sps5")
            let theirLink = try theirs.link(to: self.sender, addresses: [addresses.0], peerAddress: addresses.1)
            senderInterface = String(theirLink.dropLast()) + "p"   // link(to:) names the far end like the near one, ending in p
            try theirs.startAvahi(interfaces: [theirLink])
            clock = try theirs.spawn(nqptp, [], label: "nqptp")
            try """
                general = { name = "Reference"; port = 7000; output_backend = "stdout"; ignore_volume_control = "yes"; };
                stdout = { output_rate = \(rate); output_format = "\(format)"; };
                \(metadataPipe.map { "metadata = { enabled = \"yes\"; include_cover_art = \"yes\"; pipe_name = \"\($0)\"; };" } ?? "")
                """.write(toFile: theirs.directory + "/sps.conf", atomically: true, encoding: .utf8)
            process = try theirs.spawn(shairport, ["-c", theirs.directory + "/sps.conf", "-u", "-vv"], label: "shairport-sync-5")
            #expect(try theirs.waitForService("_airplay._tcp", timeout: 20) { $0.name == "Reference" } != nil, "\(process.stderr.suffix(3000))")
        }

        /// `airplay` with `arguments`, from the sender's namespace.
        func airplay(_ arguments: [String]) throws -> CommandResult {
            try sender.run(try Products.executable("airplay"), arguments, timeout: 120)
        }

        deinit {
            process.stop()
            clock.stop()
            theirs.close()
            if ownsSender { sender.close() }
        }
    }

    /// Streams `file` into a fresh shairport-sync 5 whose output is `rate` Hz `format`.
    static func play(_ file: String, mode: String = "buffered", extra: [String] = [], rate: Int, format: String, label: String) throws -> Played {
        let reference = try Reference(label: label, rate: rate, format: format)
        let stream = try reference.airplay(["stream", file, "--protocol", "2", "--mode", mode, "--json", "--to", Reference.target] + extra)
        // The backend writes about a second ahead of playing: by the stream's end it has it all.
        reference.process.stop(grace: 3)
        let output = Array((try? Data(contentsOf: URL(fileURLWithPath: reference.process.stdoutPath))) ?? Data())
        return Played(output: output, stream: stream, log: reference.process.stderr)
    }

    /// shairport-sync 5's own deviations from `Protocol/airplay2.md`, as the runner names them.
    static let peerDeviations = [
        "airplay2.setup-in-clear": "answered 200 with no session in it",   // 200 after every handler since 2025-02 (rtsp.c)
    ]

    /// `airplay conformance` tries AirPlay 2 sessions on PTP where the receiver advertises it:
    /// shairport-sync 5 serves no NTP session (it answers one with an empty 200), and passes
    /// every AirPlay 2 check on PTP but the one its status regression breaks, which is named.
    @Test func theConformanceRunnerPassesShairportSync5sAirPlay2Section() throws {
        let reference = try Reference(label: "sps5-conf")
        // The sender's namespace browses too, so the checks of the `_airplay._tcp` record run.
        try reference.sender.startAvahi(interfaces: [reference.senderInterface])
        let result = try reference.airplay(["conformance", Reference.target, "--json"])
        let report = try ConformanceTests.Report(result.stdout)
        let airPlay2 = report.checks.filter { $0.key.hasPrefix("airplay2.") }
        #expect(airPlay2.count >= 6, "\(report.summary)")
        for (id, check) in airPlay2 {
            if let deviation = Self.peerDeviations[id] {
                #expect(check.result == "fail" && check.detail.contains(deviation), "\(id): \(check.result) \(check.detail)")
            } else {
                #expect(check.result == "pass", "\(id): \(check.result) \(check.detail)\n\(reference.process.stderr.suffix(2000))")
            }
        }
        print("measure: airplay conformance → shairport-sync 5: " + airPlay2.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value.result) (\($0.value.detail.prefix(50)))" }.joined(separator: "; "))
    }

    /// shairport-sync's S16_LE output holds the CD-quality sweep bit for bit.
    static func expectTheSweep(_ played: Played, _ sweep: SweepMedia, what: String) {
        let samples = played.output.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact), \(samples.count / 2) frames\n\(played.log.suffix(3000))")
        print("measure: airplay \(what) into shairport-sync 5, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// ALAC at 48 kHz/24-bit, SSRC 0x15000000 as Apple's senders write it: every sample of the
    /// 24-bit FLAC comes out of shairport-sync (S32_LE, the 24 bits on top).
    @Test func a24Bit48kHzFileArrivesBitExact() throws {
        let sweep = try HiResSweep()
        let played = try Self.play(sweep.flac, rate: 48000, format: "S32_LE", label: "sps5-hires")
        #expect(played.stream.status == 0, "\(played.stream.stdout)\(played.stream.stderr)")
        #expect(played.stream.stdout.contains("ALAC 48 kHz") && played.stream.stdout.contains("24-bit"), "\(played.stream.stdout)")
        #expect(!played.log.contains("Unrecognised SSRC"), "\(played.log.suffix(2000))")
        let samples = played.output.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }.map { $0 >> 8 }
        let comparison = alignAndCompare(samples, with: sweep.reference, from: 4800)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact), \(samples.count / 2) frames\n\(played.log.suffix(3000))")
        print("measure: airplay buffered ALAC 48k/24 into shairport-sync 5, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// shairport-sync 5.2.1 advertises no feature bit 50: `airplay stream` tells it what plays
    /// with DMAP text as before, and its metadata pipe shows the title (`Protocol/now-playing.md` §7).
    @Test func aReceiverWithoutBit50GetsDMAP() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let pipe = Products.scratchDirectory("sps5-metadata") + "/metadata"
        let reference = try Reference(label: "sps5-dmap", metadataPipe: pipe)
        let reader = try PipeReader(fifo: pipe)
        let stream = try reference.airplay(["stream", sweep.directory + "/sweep.flac", "--protocol", "2", "--mode", "buffered", "--to", Reference.target])
        #expect(stream.status == 0, "\(stream.stdout)\(stream.stderr)")
        Thread.sleep(forTimeInterval: 1)   // the reader takes the last items off the FIFO (it reports only when stopped)
        let items = try reader.finish().items
        #expect(items.contains { $0.type == "core" && $0.code == "minm" && $0.text == "Sweep Song" }, "\(items.map(\.description))")
        #expect(!items.contains { $0.code == "copl" }, "no MediaRemote bodies to a receiver without bit 50")
        print("measure: airplay stream → shairport-sync 5.2.1 metadata pipe \(items.map(\.description).joined(separator: " "))")
    }

    /// ALAC at 44.1 kHz/16-bit goes with shairport-sync's own code, 0x0000FACE: bit-exact.
    @Test func aCDQualityFileArrivesBitExact() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let played = try Self.play(sweep.directory + "/sweep.flac", rate: 44100, format: "S16_LE", label: "sps5-cd")
        #expect(played.stream.status == 0, "\(played.stream.stdout)\(played.stream.stderr)")
        #expect(!played.log.contains("Unrecognised SSRC"), "\(played.log.suffix(2000))")
        Self.expectTheSweep(played, sweep, what: "buffered ALAC 44.1k/16")
    }

    /// A CD-quality file as Apple's lossless format (`--rate 48000`, what `airplay` sends a
    /// receiver that takes nothing closer): resampled to 48 kHz/24-bit by the sender, it comes out
    /// of shairport-sync as sox resamples the same file (`sox -D … -r 48000`), within the two
    /// filters' difference.
    @Test func aCDQualityFileResampledTo48kHzIsPlayed() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let sox = try #require(TestHost.which("sox"), "sox (tools/setup-deps --test) makes the reference")
        let referenceFile = sweep.directory + "/sweep-48k.raw"
        let made = try runCommand(sox, ["-D", sweep.directory + "/sweep.wav", "-t", "raw", "-e", "signed", "-b", "16", "-r", "48000", referenceFile], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let reference = try Data(contentsOf: URL(fileURLWithPath: referenceFile)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let played = try Self.play(sweep.directory + "/sweep.flac", extra: ["--rate", "48000"], rate: 48000, format: "S32_LE", label: "sps5-48k")
        #expect(played.stream.status == 0, "\(played.stream.stdout)\(played.stream.stderr)")
        #expect(played.stream.stdout.contains("ALAC 48 kHz") && played.stream.stdout.contains("24-bit"), "\(played.stream.stdout)")
        #expect(played.stream.stdout.contains("\"converted\":true") && played.stream.stdout.contains("\"sampleRate\":48000"), "\(played.stream.stdout)")
        // The top 16 of shairport-sync's 32 bits, against sox's 16-bit reference.
        let samples = played.output.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }.map { Int16(truncatingIfNeeded: $0 >> 16) }
        let (snr, delay) = BufferedAudioTests.signalToNoise(samples, reference: reference, from: 48000, frames: 3 * 48000)
        #expect(snr > 40, "SNR \(snr) dB at \(delay) frames in, \(samples.count / 2) frames\n\(played.log.suffix(3000))")
        print("measure: airplay buffered ALAC 44.1k/16 resampled to 48k/24 into shairport-sync 5, SNR \(String(format: "%.1f", snr)) dB against sox")
    }

    /// A mixed group of the receivers Linux boxes run (`--mode auto`): shairport-sync 5 takes
    /// buffered audio on our PTP clock, Debian's shairport-sync 3.3.8 (AirPlay 1) realtime audio
    /// on NTP, both from one `airplay stream`. Each plays the file: shairport-sync 5 bit for bit,
    /// 3.3.8 bit for bit after the first second it drops while its clocks settle. (Their stdout
    /// backends give no timing: the group's step is measured between airplayd rooms.)
    @Test func aMixedGroupOfShairportSync5And338IsPlayed() throws {
        try TestHost.require(["shairport-sync"])
        let sweep = try #require(RAOPInteropTests.sweep)
        let reference = try Reference(label: "sps-mixed")
        let config = reference.theirs.directory + "/sps3.conf"
        try "general = {\n  ignore_volume_control = \"yes\";\n};\n".write(toFile: config, atomically: true, encoding: .utf8)
        let old = try reference.theirs.spawn(try #require(TestHost.which("shairport-sync")),
                                             ["-c", config, "-a", "Old Room", "-p", "5055", "-o", "stdout"], label: "shairport-sync-3")
        defer { old.stop() }
        #expect(try reference.theirs.waitForService("_raop._tcp") { $0.name.hasSuffix("@Old Room") } != nil, "\(old.stderr)")
        let stream = try reference.airplay(["stream", sweep.directory + "/sweep.flac", "--mode", "auto", "--json",
                                            "--to", Reference.target, "--to", "10.97.1.2:5055"])
        #expect(stream.status == 0, "\(stream.stdout)\(stream.stderr)")
        #expect(stream.stdout.components(separatedBy: "AirPlay 2 buffered").count == 2 && stream.stdout.contains("\"protocol\":1"),
                "shairport-sync 5 buffered, 3.3.8 on AirPlay 1: \(stream.stdout)")
        reference.process.stop(grace: 3)
        old.stop(grace: 3)
        let output = Array((try? Data(contentsOf: URL(fileURLWithPath: reference.process.stdoutPath))) ?? Data())
        Self.expectTheSweep(Played(output: output, stream: stream, log: reference.process.stderr), sweep, what: "--mode auto, buffered beside 3.3.8,")
        let samples = try Data(contentsOf: URL(fileURLWithPath: old.stdoutPath)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples, from: 44100)
        #expect(comparison.exact >= 0.99, "3.3.8: bit-exact share \(comparison.exact) of \(samples.count / 2) frames; \(old.stderr.suffix(1500))")
        print("measure: airplay --mode auto into shairport-sync 3.3.8 (AirPlay 1 beside shairport-sync 5 buffered), bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// The three kinds of airplayd room (buffered, realtime on PTP, AirPlay 1 on NTP) and
    /// shairport-sync 5, each in a namespace of its own, from one `airplay stream --mode auto`:
    /// shairport-sync 5 and the buffered room take buffered audio on our PTP clock, the others
    /// realtime audio on the same timeline. The airplayd rooms play the same samples, every
    /// second within a millisecond; shairport-sync 5 plays the file bit for bit (its stdout
    /// backend gives no timing).
    @Test func threeKindsOfAirplaydRoomAndShairportSync5PlayOneStream() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let group = try BufferedAudioTests.Group(label: "four-way", fifos: true)
        let reference = try Reference(label: "four-way", sender: group.sender, addresses: ("10.94.4.2", "10.94.4.1"))
        let reader = try group.read(with: "fifo_clock", seconds: 60)
        try group.start(airPlay1Only: [2], withoutBuffer: [1])
        let result = try group.stream(sweep.directory + "/sweep.flac", mode: "auto", extra: ["--to", "10.94.4.2:7000"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.components(separatedBy: "AirPlay 2 buffered").count == 3, "room 1 and shairport-sync 5 buffered: \(result.stdout)")
        #expect(result.stdout.components(separatedBy: "AirPlay 2 on PTP").count == 2 && result.stdout.contains("\"protocol\":1"), "\(result.stdout)")
        for daemon in group.daemons { daemon.process.stop(grace: 2) }
        reference.process.stop(grace: 3)
        let report = try FifoClockReport(reader)
        #expect(report.skews.count >= 4 && report.skews.allSatisfy { abs($0) <= 1 }, "\(report.line)")
        #expect(report.sameSamples, "\(report.line)")
        let output = Array((try? Data(contentsOf: URL(fileURLWithPath: reference.process.stdoutPath))) ?? Data())
        Self.expectTheSweep(Played(output: output, stream: result, log: reference.process.stderr), sweep,
                            what: "--mode auto beside three airplayd rooms (buffered, realtime on PTP, AirPlay 1),")
        print("measure: --mode auto to a buffered, a realtime-on-PTP and an AirPlay 1 airplayd room beside shairport-sync 5, largest skew per second \(report.skews) ms")
    }

    /// Realtime ALAC (type 96) on our PTP clock, as OwnTone and Music Assistant send to every
    /// AirPlay 2 speaker: shairport-sync 5 serves no NTP session, and plays this bit-exact.
    @Test func aRealtimeStreamOnPTPArrivesBitExact() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let played = try Self.play(sweep.directory + "/sweep.flac", mode: "realtime", extra: ["--timing", "ptp"], rate: 44100,
                                   format: "S16_LE", label: "sps5-rt")
        #expect(played.stream.status == 0, "\(played.stream.stdout)\(played.stream.stderr)")
        #expect(played.stream.stdout.contains("AirPlay 2 on PTP"), "\(played.stream.stdout)")
        Self.expectTheSweep(played, sweep, what: "realtime ALAC on PTP")
    }

    /// AAC-LC at 44.1 kHz, SSRC 0x16000000: lossy, so compared by its signal-to-noise ratio.
    @Test func anAACStreamIsPlayed() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let played = try Self.play(sweep.directory + "/sweep.flac", extra: ["--codec", "aac"], rate: 44100, format: "S16_LE", label: "sps5-aac")
        #expect(played.stream.status == 0, "\(played.stream.stdout)\(played.stream.stderr)")
        #expect(!played.log.contains("Unrecognised SSRC"), "\(played.log.suffix(2000))")
        let samples = played.output.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let (snr, delay) = BufferedAudioTests.signalToNoise(samples, reference: sweep.reference, from: 44100, frames: 3 * 44100)
        #expect(snr > 40, "SNR \(snr) dB at \(delay) frames in, \(samples.count / 2) frames\n\(played.log.suffix(3000))")
        print("measure: airplay buffered AAC-LC 44.1k into shairport-sync 5, SNR \(String(format: "%.1f", snr)) dB")
    }
}
