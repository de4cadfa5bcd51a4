import AirPlayMedia
import NIOConcurrencyHelpers

/// Several files played one after another as one source, gaplessly: `airplay stream A B C`.
/// Remote control moves through them (`skip(by:)`, DACP `nextitem`/`previtem`). Every file
/// must decode to the first one's format; one that does not is left out with a warning.
public final class PlaylistSource: PCMSource {
    /// Opens one file of the list.
    public typealias Opener = @Sendable (String) throws -> any PCMSource

    private struct State {
        var index: Int
        var current: any PCMSource
        /// Frames handed out before the current item began (where it starts on the stream).
        var itemStartFrame = 0
        var framesRead = 0
        var skipped: [String] = []
    }

    private let paths: [String]
    private let open: Opener
    private let state: NIOLockedValueBox<State>
    /// The first file's format; the stream's.
    public let format: PCMFormat

    /// A playlist starting with the already opened `first` (the file `paths[0]`).
    public init(paths: [String], first: any PCMSource, open: @escaping Opener) {
        self.paths = paths
        self.open = open
        format = first.format
        state = NIOLockedValueBox(State(index: 0, current: first))
    }

    /// The current item's tags.
    public var tags: TrackTags { state.withLockedValue { $0.current.tags } }

    /// Which file plays (0-based), and how many there are.
    public var position: (index: Int, count: Int, startFrame: Int) {
        state.withLockedValue { ($0.index, paths.count, $0.itemStartFrame) }
    }

    /// The current file's path.
    public var currentPath: String { state.withLockedValue { paths[$0.index] } }

    /// Files left out (they would not open, or decode to another format), with why.
    public func takeSkipped() -> [String] { state.withLockedValue { state in defer { state.skipped = [] }; return state.skipped } }

    /// Reads on through the list: the next file starts when one ends.
    public func read(frames: Int) -> [Int32] {
        state.withLockedValue { state in
            while true {
                let samples = state.current.read(frames: frames)
                if !samples.isEmpty {
                    state.framesRead += samples.count / 2
                    return samples
                }
                guard move(to: state.index + 1, in: &state) else { return [] }
            }
        }
    }

    /// Moves `by` items (1 next, -1 previous: the start of the item before); false at either end.
    @discardableResult
    public func skip(by offset: Int) -> Bool {
        state.withLockedValue { state in move(to: max(0, state.index + offset), in: &state) }
    }

    /// Opens item `index` (or the first openable one after it) and makes it current.
    private func move(to index: Int, in state: inout State) -> Bool {
        var candidate = index
        while candidate < paths.count {
            do {
                let next = try open(paths[candidate])
                guard next.format == format else {
                    state.skipped.append("\(paths[candidate]): \(next.format), not the stream's \(format)")
                    candidate += 1
                    continue
                }
                state.current = next
                state.index = candidate
                state.itemStartFrame = state.framesRead
                return true
            } catch {
                state.skipped.append("\(paths[candidate]): \(error)")
                candidate += 1
            }
        }
        return false
    }
}
