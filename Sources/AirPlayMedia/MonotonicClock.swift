import Glibc

/// Where the session layer reads the time: the system's monotonic clock in production, a
/// `ManualClock` (AirPlayTesting) in tests that drive expiries and back-offs without waiting.
public protocol MonotonicClock: Sendable {
    /// Seconds on a clock that never jumps (its zero is arbitrary).
    func now() -> Double
}

/// CLOCK_MONOTONIC.
public struct SystemClock: MonotonicClock {
    /// The system clock.
    public init() {}

    /// Seconds since an arbitrary point (boot), never going back.
    public func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
