import AirPlayMedia
import Testing

/// One source read by two streams at their own pace (a mixed group's buffered and realtime
/// receivers): each gets every sample once, in order, however their reads interleave.
@Suite struct PCMTeeTests {
    final class Counting: PCMSource, @unchecked Sendable {
        let total: Int
        var next = 0
        let tags = TrackTags()
        init(frames: Int) { total = frames }
        func read(frames: Int) -> [Int32] {
            let count = min(frames, total - next)
            defer { next += count }
            return (next..<next + count).flatMap { [Int32($0), -Int32($0)] }
        }
    }

    @Test func eachBranchGetsEverySampleOnceInOrder() {
        let tee = PCMTee(Counting(frames: 100_000))
        let (ahead, behind) = (tee.branch(0), tee.branch(1))
        var first: [Int32] = [], second: [Int32] = []
        // One branch reads far ahead of the other, then both to the end, in uneven chunks.
        for _ in 0..<50 { first += ahead.read(frames: 1024) }
        while true {
            let a = ahead.read(frames: 352), b = behind.read(frames: 1000)
            first += a
            second += b
            if a.isEmpty && b.isEmpty { break }
        }
        let expected = (0..<100_000).flatMap { [Int32($0), -Int32($0)] }
        #expect(first == expected && second == expected)
    }

    /// Past the limit, the slower branch loses the oldest: memory stays bounded.
    @Test func aBranchThatStopsReadingDoesNotHoldTheWholeStream() {
        let tee = PCMTee(Counting(frames: 44100 * 10), limit: 1)
        let (reader, stopped) = (tee.branch(0), tee.branch(1))
        var read = 0
        while case let chunk = reader.read(frames: 4096), !chunk.isEmpty { read += chunk.count / 2 }
        #expect(read == 441_000)
        // The stopped branch resumes within the last second (plus a read's worth), not at 0.
        let resumed = stopped.read(frames: 1)
        #expect(resumed.first.map { Int($0) >= 441_000 - 44100 - 4096 - 65536 } == true, "\(resumed)")
    }
}
