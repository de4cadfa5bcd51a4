import AirPlayTesting
import Foundation
import Testing

/// Two rooms on simulated cards at +200 and -200 ppm playing `seconds` of one stream, and what
/// that proves: every second the same frames left the two cards within `bound` ms, no card
/// underran, each room said its rate and corrected about its card's 200 ppm of frames
/// (`corrections`, in ppm of the stream), and each room's log holds `said`, when given.
/// `play()` only plays and records (it may run on any thread); `judge` holds the expectations.
struct TwoRoomsOnCards: Sendable {
    var timing: CardTestTiming
    /// The output a room is started with, by room index (`alsa:card0`, `alsasink device=card1`).
    var output: @Sendable (Int) -> String
    var seconds = 122
    /// The first seconds left out of the comparison.
    var skip: Double = 1
    var correction = "stuff"
    var bound: Double = 1
    var corrections: ClosedRange<Double> = 150...400
    var ppmTolerance: Double = 20
    var server: CardServer?
    var said: String?

    /// What one trial left behind.
    struct Record: Sendable {
        let stream: CommandResult
        /// Each room's log.
        let logs: [String]
        /// Each room's last "audio session ended" line.
        let ended: [String]
        let report: SimulatedCards.Report
        let ppm: [Double]
    }

    /// Starts the rooms and the sender on hosts of their own, streams, and compares the cards.
    func play() throws -> Record {
        let label = "\(timing)-\(output(0).prefix(5))-\(correction)".replacingOccurrences(of: " ", with: "-")
        let short = (timing == .bufferedOnPTP ? "b" : timing == .realtimeOnPTP ? "r" : "1") + (output(0).hasPrefix("alsa:") ? "a" : "g")
            + correction.prefix(1) + (server?.rawValue.prefix(1) ?? "")
        let group = try BufferedAudioTests.Group(label: "cards-" + short, count: 2, fifos: false)
        let cards = try SimulatedCards(label: label, ppm: [200, -200])
        let file = try SoundCardTests.music(seconds: seconds, in: group.sender.directory)
        let pulse: CardSoundServer? = try server.map { (server: CardServer) -> CardSoundServer in
            server == .pulseAudio ? try CardsPulseAudio(cards: cards) : try CardsPipeWire(cards: cards)
        }
        try group.start(environment: pulse?.environment ?? cards.environment, airPlay1Only: timing == .airPlay1OnNTP ? [0, 1] : [],
                        audioOutput: output, options: ["--audio-drift-correction", correction])
        let (mode, extra) = timing.streamArguments
        let stream = try group.stream(file, mode: mode, extra: extra, timeout: Double(seconds) + 60)
        Thread.sleep(forTimeInterval: 1)   // the cards play out what they hold
        let ended = group.daemons.map { $0.process.lines(containing: "audio session ended").last ?? "" }
        for daemon in group.daemons { daemon.process.stop(grace: 2) }
        pulse?.stop()   // it closes the cards, flushing their records
        return Record(stream: stream, logs: group.daemons.map { $0.process.stderr }, ended: ended,
                      report: try cards.compare(skip: skip), ppm: cards.ppm)
    }

    /// The expectations on what `play()` recorded.
    func judge(_ record: Record) {
        let ended = record.ended.joined(separator: "\n")
        #expect(record.stream.status == 0, "\(record.stream.stdout)\(record.stream.stderr)\n\(record.logs.map { String($0.suffix(1500)) }.joined(separator: "\n--\n"))")
        if let said {
            for log in record.logs { #expect(log.contains(said), "\(log.prefix(3000))") }
        }
        let report = record.report
        #expect(report.skews.count >= seconds - Int(skip) - 5, "\(report.line)\n\(ended)")
        #expect(report.p99 <= bound && report.skews.allSatisfy { abs($0) <= bound }, "\(report.line)\n\(ended)")
        #expect(report.restarts == [0, 0], "no underrun mid-stream: \(report.line)\n\(ended)")
        for (index, line) in record.ended.enumerated() {
            let fields = line.split(separator: " ")
            // Each room said what its card does: about +200 and -200 ppm.
            let ppm = fields.first { $0.hasPrefix("output.ppm=") }.flatMap { Double($0.dropFirst(11)) }
            #expect(ppm.map { abs($0 - record.ppm[index]) < ppmTolerance } == true, "\(line)")
            // The frames each room corrected: the card's 200 ppm of the stream, give or take.
            let count = { (key: String) in fields.first { $0.hasPrefix(key + "=") }.flatMap { Int($0.dropFirst(key.count + 1)) } ?? 0 }
            let corrected = count("frames.inserted") + count("frames.removed")
            #expect(corrections.contains(Double(corrected) / (Double(seconds) * 44100) * 1e6), "corrections counted and bounded: \(line)")
        }
        let sorted = report.skews.map(abs).sorted()
        print("measure: \(timing.rawValue) to \(output(0)) (\(correction)), two rooms on cards at +200/-200 ppm, \(seconds) s: per-second skew at the cards p50 \(sorted.isEmpty ? -1 : sorted[sorted.count / 2]) ms, p99 \(report.p99) ms, max \(sorted.last ?? -1) ms")
    }
}

/// Runs `body` on a thread of its own and waits for it without holding one of the test
/// runner's threads (there is one per core; a blocked one runs nothing else meanwhile).
func onAThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
