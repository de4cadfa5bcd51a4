import AirPlayMedia
import Foundation
import Synchronization
import LinuxIO

/// A `PCMOutput` that keeps what it is given, with the time of each write: for unit tests of
/// the playout, in place of a sound card.
public final class RecordingPCMOutput: PCMOutput, Sendable {
    /// One `write`.
    public struct Write: Sendable {
        /// Monotonic seconds (`SystemClock`) when it came.
        public var time: Double
        /// The interleaved samples.
        public var samples: [Int32]
    }

    private let state = Mutex<(writes: [Write], closed: Bool)>(([], false))
    /// What `presentationDelay` answers.
    public let presentationDelay: Double

    /// What `writeAhead` answers.
    public let writeAhead: Double

    /// How long each `write` takes (a slow sink), in seconds.
    public let writeDuration: Double

    /// An output reporting `presentationDelay` seconds of latency, taking writes up to
    /// `writeAhead` seconds early, each write taking `writeDuration` seconds.
    public init(presentationDelay: Double = 0, writeAhead: Double = 0, writeDuration: Double = 0) {
        self.presentationDelay = presentationDelay
        self.writeAhead = writeAhead
        self.writeDuration = writeDuration
    }

    /// Records the samples (with the time the write began), then takes `writeDuration`.
    public func write(_ samples: [Int32]) {
        let now = SystemClock().now()
        state.withLock { $0.writes.append(Write(time: now, samples: samples)) }
        if writeDuration > 0 { usleep(UInt32(writeDuration * 1e6)) }
    }

    /// Records that the output was closed.
    public func close() { state.withLock { $0.closed = true } }

    /// The writes so far.
    public var writes: [Write] { state.withLock { $0.writes } }
    /// Every sample written so far, in order.
    public var samples: [Int32] { state.withLock { $0.writes.flatMap(\.samples) } }
    /// Whether `close()` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }
}
