/// Sums up how far from their meant time frames were played: mean, percentiles and worst case,
/// in constant memory (a histogram of 0.1 ms steps up to 100 ms).
public struct SyncErrorTally: Hashable, Sendable {
    private static let step = 0.0001
    private static let buckets = 1000
    private var histogram = [Int](repeating: 0, count: SyncErrorTally.buckets + 1)
    private var sum = 0.0
    private var sumOfMagnitudes = 0.0

    /// Packets measured.
    public private(set) var count = 0
    /// The largest error seen, in seconds (magnitude).
    public private(set) var worst = 0.0

    /// An empty tally.
    public init() {}

    /// Adds one error in seconds: positive when the frame played late.
    public mutating func add(_ error: Double) {
        guard error.isFinite else { return }
        count += 1
        sum += error
        sumOfMagnitudes += abs(error)
        worst = max(worst, abs(error))
        histogram[min(Self.buckets, Int(abs(error) / Self.step))] += 1
    }

    /// The mean error (signed: a steady bias shows here), in seconds.
    public var mean: Double { count == 0 ? 0 : sum / Double(count) }

    /// The mean magnitude, in seconds.
    public var meanMagnitude: Double { count == 0 ? 0 : sumOfMagnitudes / Double(count) }

    /// The magnitude that `fraction` of the errors stay under (to 0.1 ms), in seconds.
    public func percentile(_ fraction: Double) -> Double {
        guard count > 0 else { return 0 }
        let wanted = Int((Double(count) * fraction).rounded(.up))
        var seen = 0
        for (index, entries) in histogram.enumerated() {
            seen += entries
            if seen >= wanted { return min(Double(index + 1) * Self.step, worst) }
        }
        return worst
    }
}
