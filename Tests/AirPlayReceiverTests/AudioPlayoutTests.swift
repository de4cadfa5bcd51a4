@testable import AirPlayReceiver
import AirPlayMedia
import AirPlayTesting
import Glibc
import Testing

/// The playout's thread against an output: what it hands over, and in how many calls.
@Suite struct AudioPlayoutTests {
    /// An output that takes frames early (a file or FIFO) gets each pair of packets, fixed by
    /// RTP time, in one call: one write(2) for two packets is most of what a stream costs the
    /// receiver. Which pairs share a call can grow under load (a late wake writes all that is
    /// due), but a call never ends inside a pair, and every frame goes out once, in order.
    @Test func anOutputThatTakesFramesEarlyGetsEachPairInOneCall() {
        let output = RecordingPCMOutput(writeAhead: 0.010)
        let packets = Self.play(6, into: output)
        #expect(output.samples == packets.flatMap { $0 })
        #expect(output.writes.allSatisfy { $0.samples.count % (2 * 704) == 0 }, "\(output.writes.map(\.samples.count))")
    }

    /// The thread sleeps until a time on the clock, not for a length decided before its write:
    /// a sink that takes 5 ms a write (or a yield to another room, or the port's read) would
    /// otherwise make every write after the first 5 ms late. Each packet's write begins on its
    /// time: the median over ten is well within a millisecond and a half.
    @Test func aSlowWriteDoesNotMakeTheNextLate() {
        let output = RecordingPCMOutput(writeDuration: 0.005)
        let packets = Self.play(11, into: output)
        let writes = output.writes
        #expect(output.samples == packets.flatMap { $0 })
        guard let first = writes.first?.time, writes.count == 11 else { return }
        let lateness = writes.enumerated().dropFirst().map { ($0.element.time - first - Double($0.offset * 352) / 44100) * 1000 }.sorted()
        #expect(lateness[lateness.count / 2] < 1.5, "milliseconds late: \(lateness)")
    }

    /// Plays `count` packets of 352 stereo frames, their samples numbered in order, through a
    /// playout into `output`; returns them once all are written (or after a second).
    private static func play(_ count: Int, into output: RecordingPCMOutput) -> [[Int32]] {
        let playout = AudioPlayout(output: output, format: .cd, framesPerPacket: 352, bufferDelay: 0.05)
        let packets = (0..<count).map { index in (0..<704).map { Int32(index * 704 + $0) } }
        for (index, samples) in packets.enumerated() { playout.receive(timestamp: UInt32(index * 352), samples: samples) }
        for _ in 0..<200 where output.samples.count < count * 704 { usleep(5_000) }
        playout.stop()
        return packets
    }
}
