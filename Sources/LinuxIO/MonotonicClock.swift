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

extension SystemClock {
    /// `measure`'s value and the moment it was taken: read between two reads of the clock, up to
    /// `attempts` times, keeping the tightest bracket (its middle is the moment). A reading
    /// preempted halfway would otherwise be placed up to half the preemption off: a sound card's
    /// count read at the wrong moment looks like the card jumping (under load, hundreds of µs).
    /// nil when `measure` gives nothing.
    public func tightlyTimed<Value>(attempts: Int = 3, tightEnough: Double = 0.00005, _ measure: () -> Value?) -> (time: Double, value: Value)? {
        var best: (time: Double, value: Value, width: Double)?
        for _ in 0..<max(1, attempts) {
            let before = now()
            guard let value = measure() else { return nil }
            let after = now()
            if best == nil || after - before < best!.width { best = ((before + after) / 2, value, after - before) }
            if after - before <= tightEnough { break }
        }
        return best.map { ($0.time, $0.value) }
    }
}
