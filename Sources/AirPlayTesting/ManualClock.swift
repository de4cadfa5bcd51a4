import AirPlayMedia
import Synchronization
import LinuxIO

/// A clock tests move by hand: expiries, back-offs and time-outs without sleeping.
public final class ManualClock: MonotonicClock {
    private let time: Mutex<Double>

    /// A clock reading `start`.
    public init(start: Double = 1000) { time = Mutex(start) }

    /// The time it reads.
    public func now() -> Double { time.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: Double) { time.withLock { $0 += seconds } }
}
