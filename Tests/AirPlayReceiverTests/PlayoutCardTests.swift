@testable import AirPlayReceiver
import AirPlayMedia
import AirPlayTiming
import Testing

/// The playout on a sound card's own crystal, with the time and the card in the test's hand: a
/// card running hundreds of ppm off the system clock plays every packet when the sender means
/// it, to a fraction of a millisecond, by single frames inserted or removed; a card on time is
/// left bit-exact; a run starts with silence so its first frame leaves on time, however long the
/// write that started the card took.
@Suite struct PlayoutCardTests {
    static let frames = 352

    /// A sender's timeline that means RTP frame T at `start + T / 44100` on our clock.
    final class FixedTimeline: PlayoutTimeline, @unchecked Sendable {
        let start: Double
        init(start: Double) { self.start = start }
        func localTime(of rtp: UInt32) -> Double? { start + Double(rtp) / 44100 }
    }

    /// A card whose crystal runs `ppm` off 44.1 kHz, started by its first write, its pointer
    /// moving in 1 ms steps; it keeps what it was given, to tell when each frame left.
    struct Card {
        let ppm: Double
        var started: Double?
        var frames: [Int32] = []   // one value per frame (the left channel)
        var rate: Double { 44100 * (1 + ppm * 1e-6) }

        func reading(at time: Double) -> OutputClockReading {
            guard let started else { return OutputClockReading(time: time, writtenFrames: 0, queuedFrames: 0, restarts: 0) }
            let played = min(frames.count, Int((time - started) * rate) / 44 * 44)
            return OutputClockReading(time: time, writtenFrames: frames.count, queuedFrames: frames.count - played, restarts: 0,
                                      startTime: started)
        }

        mutating func write(_ samples: [Int32], at time: Double) {
            if started == nil { started = time }
            frames += stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        }

        func leaves(_ index: Int) -> Double { started! + Double(index) / rate }
    }

    /// Packet `index`'s samples: all `index + 1`, so where it begins on the card is found again.
    static func samples(_ index: Int) -> [Int32] { [Int32](repeating: Int32(index + 1), count: frames * 2) }

    /// Plays `seconds` of packets (all received well ahead) on `card` as the playout's thread
    /// would: one card reading a wake-up, everything due written, then sleep. Returns each
    /// packet's error at the card (when its first frame left, minus when it was meant).
    static func play(on card: inout Card, seconds: Double, from start: Double = 100, correction: DriftCorrection = .stuff)
        -> (errors: [Double], schedule: PlayoutSchedule, midway: AudioPlayout.OutputFigures?) {
        var midway: AudioPlayout.OutputFigures?
        let timeline = FixedTimeline(start: start + 0.5)
        var schedule = PlayoutSchedule(timeline: timeline, sampleRate: 44100, channels: 2, framesPerPacket: frames, bufferDelay: 0.5,
                                       correction: correction)
        let packets = Int(seconds * 44100) / frames
        var received = 0
        var now = start
        while now < start + 0.5 + seconds {
            // The sender keeps a second ahead.
            while received < packets, Double(received * frames) / 44100 < now - start + 1 {
                _ = schedule.receive(timestamp: UInt32(received * frames), samples: samples(received), arrival: now)
                received += 1
            }
            schedule.observe(card: card.reading(at: now))
            if midway == nil, now > start + seconds / 2 { midway = schedule.stats.output }
            var wait = 0.01
            while true {
                let step = schedule.next(now: now, delay: 0, writeAhead: 0.1)
                // A write takes its time (a debug build's first one, 0.4 ms): the card starts then.
                if case .write(let samples, _) = step { card.write(samples, at: now + 0.0004); continue }
                if case .wait(let seconds) = step { wait = seconds }
                break
            }
            now += min(max(wait, 0.0005), 0.05) + 0.0003   // woken a little late, as threads are
        }
        var errors: [Double] = []
        var seen = Set<Int32>()
        for (index, value) in card.frames.enumerated() where value != 0 && !seen.contains(value) {
            seen.insert(value)
            errors.append(card.leaves(index) - timeline.localTime(of: UInt32(Int(value - 1) * frames))!)
        }
        return (errors, schedule, midway)
    }

    @Test(arguments: [-500.0, -300, 300, 500])
    func aCardOffByHundredsOfPPMPlaysEveryPacketOnTime(ppm: Double) throws {
        var card = Card(ppm: ppm)
        let (errors, schedule, midway) = Self.play(on: &card, seconds: 60)
        #expect(errors.count == Int(60 * 44100) / Self.frames)
        let settled = errors.dropFirst(Int(2 * 44100) / Self.frames)
        let worst = settled.map(abs).max() ?? 1
        let perSecond = stride(from: 0, to: errors.count, by: 125).map { (errors[$0] * 1e5).rounded() / 100 }
        let worstAfter10 = errors.dropFirst(Int(10 * 44100) / Self.frames).map(abs).max() ?? 1
        #expect(worst < 0.0005 && worstAfter10 < 0.0003,
                "worst \(worst * 1000) ms after the first 2 s, \(worstAfter10 * 1000) after 10 s; each second (ms): \(perSecond)")
        // The frames the card gained or lost, and no more: 60 s at `ppm`.
        let net = schedule.stats.framesInserted - schedule.stats.framesRemoved
        let owed = 60 * 44100 * ppm * 1e-6
        #expect(abs(Double(net) - owed) < 30, "net \(net), owed \(owed)")
        let figures = try #require(midway)
        #expect(abs((figures.ratePPM ?? 0) - ppm) < 5, "\(figures)")
        #expect(figures.delayMilliseconds > 70 && figures.delayMilliseconds < 140, "the card is kept 0.1 s ahead: \(figures)")
    }

    @Test func aCardOnTimeIsLeftBitExactAndItsFirstFrameLeavesOnTime() {
        var card = Card(ppm: 0)
        let (errors, schedule, _) = Self.play(on: &card, seconds: 30)
        #expect(schedule.stats.framesInserted == 0 && schedule.stats.framesRemoved == 0, "\(schedule.stats)")
        #expect(abs(errors[0]) < 0.0001, "first frame \(errors[0] * 1000) ms off")
        #expect(errors.map(abs).max()! < 0.0002)
        // Silence before the first frame, then every packet as it was sent.
        let sound = Array(card.frames.drop { $0 == 0 })
        let sent = (0..<(30 * 44100 / Self.frames)).flatMap { [Int32](repeating: Int32($0 + 1), count: Self.frames) }
        #expect(sound.count == sent.count && sound == sent, "\(sound.count) frames played, \(sent.count) sent")
    }

    /// `audio_drift_correction = "off"`: nothing is stuffed, so a card 300 ppm fast drifts its
    /// 18 ms a minute away from the sender (still short of the 20 ms a jump is followed at).
    @Test func withCorrectionOffACardDriftsFreely() {
        var card = Card(ppm: 300)
        let (errors, schedule, _) = Self.play(on: &card, seconds: 60, correction: .off)
        #expect(schedule.stats.framesInserted == 0 && schedule.stats.framesRemoved == 0, "\(schedule.stats)")
        #expect(abs(errors[0]) < 0.0005)
        #expect(abs(errors.last! + 0.018) < 0.001, "a fast card plays ever earlier: \(errors.last! * 1000) ms at the end")
    }

    /// A resampler that records what it was given and plays the packet's value `frames` long.
    final class RecordingResampler: PacketResampler, @unchecked Sendable {
        var calls: [(packet: Int, frames: Int, before: [Int32], after: [Int32])] = []
        func resample(_ packet: [Int32], to frames: Int, before: ArraySlice<Int32>, after: ArraySlice<Int32>,
                      channels: Int, maximumSample: Int32) -> [Int32]? {
            calls.append((packet.count / channels, frames, Array(before), Array(after)))
            return [Int32](repeating: packet[0], count: frames * channels)
        }
    }

    /// `audio_drift_correction = "resample"`: each corrected packet goes to the resampler, one
    /// frame longer or shorter, with the packet heard before it and the one after as context,
    /// and the card is followed as closely as by stuffing.
    @Test func resamplingGivesTheResamplerEachCorrectedPacketWithItsNeighbours() {
        let resampler = RecordingResampler()
        var card = Card(ppm: -300)
        let (errors, schedule, _) = Self.play(on: &card, seconds: 30, correction: .resample(resampler))
        let settled = errors.dropFirst(Int(2 * 44100) / Self.frames)
        #expect(settled.map(abs).max()! < 0.0005)
        #expect(resampler.calls.count == schedule.stats.framesInserted + schedule.stats.framesRemoved)
        #expect(abs(Double(schedule.stats.framesInserted - schedule.stats.framesRemoved) + 30 * 44100 * 300e-6) < 30,
                "a slow card gets frames removed: \(schedule.stats)")
        // (The stream's last packet has nothing after it.)
        for call in resampler.calls.dropFirst() where !call.after.isEmpty {
            #expect(call.packet == Self.frames && abs(call.frames - Self.frames) == 1)
            // The frames heard just before (the previous packet's value) and the next packet's.
            let packetValue = call.after.first.map { $0 - 1 }
            #expect(call.before.count == 2 * Self.frames && call.after.count == 2 * Self.frames)
            #expect(call.before.last == packetValue.map { $0 - 1 } || call.before.last == 0, "\(call.before.last ?? -1) before packet \(packetValue ?? -1)")
        }
    }
}
