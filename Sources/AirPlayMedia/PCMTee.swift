import Synchronization

/// One source read by two streams at their own pace: a mixed group's buffered receivers (sent
/// seconds ahead) and its realtime ones (sent as they play). Each branch gets every frame once,
/// in order; what the slower branch has not read yet is held, up to `limit` seconds (beyond it
/// the slower branch loses the oldest: memory stays bounded if one stops reading).
public final class PCMTee: Sendable {
    private struct State {
        var held: [Int32] = []
        /// The sample index of `held[0]` since the start.
        var base = 0
        /// Each branch's next sample index.
        var positions: [Int]
        var ended = false
    }

    private let source: any PCMSource
    private let state: Mutex<State>
    private let heldLimit: Int

    /// A tee of `source` into `branches` readers, holding at most `limit` seconds for the slowest.
    public init(_ source: any PCMSource, branches: Int = 2, limit: Double = 30) {
        self.source = source
        state = Mutex(State(positions: [Int](repeating: 0, count: branches)))
        heldLimit = Int(limit * Double(source.format.sampleRate)) * 2
    }

    /// Reader `index` (0 ..< branches) as a source of its own.
    public func branch(_ index: Int) -> any PCMSource { Branch(tee: self, index: index) }

    /// The next `frames` frames for branch `index`; fewer at the end, empty after it.
    func read(branch index: Int, frames: Int) -> [Int32] {
        state.withLock { state in
            let wanted = frames * 2
            // Reading the source under the lock: the other branch waits for at most one read.
            while state.base + state.held.count - state.positions[index] < wanted && !state.ended {
                let more = source.read(frames: max(frames, 4096))
                if more.isEmpty { state.ended = true } else { state.held += more }
            }
            let from = state.positions[index] - state.base
            let count = min(wanted, state.held.count - from)
            let taken = Array(state.held[from..<from + count])
            state.positions[index] += count
            // Forget what every branch has read (in large steps); past the limit, the oldest.
            let slowest = state.positions.min() ?? 0
            var drop = slowest - state.base
            if state.held.count - drop > heldLimit { drop = state.held.count - heldLimit }
            if drop > 65536 || (drop > 0 && state.held.count > heldLimit) {
                state.held.removeFirst(drop)
                state.base += drop
                for branch in state.positions.indices where state.positions[branch] < state.base { state.positions[branch] = state.base }
            }
            return taken
        }
    }

    private final class Branch: PCMSource, @unchecked Sendable {
        let tee: PCMTee
        let index: Int
        init(tee: PCMTee, index: Int) {
            self.tee = tee
            self.index = index
        }
        var format: PCMFormat { tee.source.format }
        var tags: TrackTags { tee.source.tags }
        func read(frames: Int) -> [Int32] { tee.read(branch: index, frames: frames) }
    }
}
