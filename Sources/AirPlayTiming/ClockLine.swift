/// A remote clock seen from ours: its offset as a straight line over our time, fitted to noisy
/// one-way samples.
///
/// Each sample says "at our time `local`, the remote clock minus ours looked like `offset`",
/// where queueing on the way can only have made the message later, so the sample's offset is
/// too small by however long it waited. The fit therefore runs three times: through all samples,
/// then twice more through those at or above the median residual of the fit before (the
/// messages that waited least), the idea NTP's and PTP's "lucky packet" filters share, and is
/// finally raised through the quickest sixteenth (strays left out). Drift comes out as the
/// slope, when the samples can tell it: on a link so noisy that the slope's own uncertainty is
/// above `driftResolution` (milliseconds of jitter over a few seconds) and the plain fit does
/// not show it clearly, a slope would be noise that moves every frame's time, so the line is
/// level there and follows the clock by being refitted as the samples slide.
public struct ClockLine: Hashable, Sendable {
    /// Our time the line is anchored at, in nanoseconds.
    public var local: Int64
    /// Remote minus ours at `local`, in nanoseconds.
    public var offset: Double
    /// How much faster the remote clock runs than ours (remote seconds per our second, minus one).
    public var drift: Double
    /// The samples the line went through in the end.
    public var samples: Int
    /// The spread of those samples around the line (their root mean square residual), in nanoseconds.
    public var residual: Double

    /// The remote clock minus ours at our time `time`.
    public func offset(at time: Int64) -> Double { offset + drift * Double(time &- local) }

    /// The remote clock's time at our time `time`.
    public func remoteTime(at time: Int64) -> Int64 { time &+ Self.nanoseconds(offset(at: time)) }

    /// `value` rounded to whole nanoseconds, within ±`PTPFollower.largestOffset` (0 for NaN):
    /// a line read from a peer may hold anything, and converting it must not trap.
    public static func nanoseconds(_ value: Double) -> Int64 {
        guard value.isFinite else { return 0 }
        let limit = Double(PTPFollower.largestOffset)
        return Int64(min(limit, max(-limit, value)).rounded())
    }

    /// Drift beyond this is a broken clock, not a crystal.
    public static let maximumDrift = 500e-6
    /// The slope is only believed when its standard error is below this (20 ppm).
    public static let driftResolution = 20e-6

    /// The line through `samples` (our time, remote minus ours, both in nanoseconds), or nil
    /// with none. Fewer than three samples, or ones spanning less than `driftSpan`, give a
    /// level line (drift zero) through the quickest sixteenth of them (the best one, while
    /// there are fewer than 32): the same share the sloped line is raised through and the path
    /// delay is taken from, so a master that sends many Syncs early (our grandmaster's quick
    /// start: 128 in its first 2 s) sees no step when the slope takes over.
    public static func fit(_ samples: [(local: Int64, offset: Double)], driftSpan: Int64 = 2_000_000_000) -> ClockLine? {
        guard let first = samples.first, let last = samples.last else { return nil }
        guard samples.count >= 3, last.local - first.local >= driftSpan else {
            // Level through the best first, so the residuals averaged are small numbers.
            let best = samples.max { $0.offset < $1.offset }!
            let level = ClockLine(local: last.local, offset: best.offset, drift: 0, samples: quickestCount(of: samples.count), residual: 0)
            return level.raised(toQuickest: samples)
        }
        let sloped = luckyFit(samples, anchor: last.local, level: false)
        let span = Double(sloped.span)
        let slopeError = span > 0 ? sloped.line.residual * (12 / Double(sloped.line.samples)).squareRoot() / span : .infinity
        // A slope is believed when it is known to 20 ppm, or when the plain fit through every
        // sample shows it five of its own standard errors clear of zero: a sender hundreds of
        // ppm off, seen through a noisy link. (Eight fits a second would meet a three-error
        // fluke within minutes.) Only the plain fit's noise is honest here: the lucky passes
        // keep the samples that agree with the slope they fit, so on a jittery link their
        // small residual made noise look like hundreds of ppm.
        let plain = line(through: samples, anchor: last.local)
        let plainSpan = Double(last.local - first.local)
        let plainError = plain.residual * (12 / Double(samples.count)).squareRoot() / plainSpan
        let believed = slopeError <= driftResolution || abs(plain.drift) >= 5 * plainError
        let fitted = believed ? sloped.line : luckyFit(samples, anchor: last.local, level: true).line
        return fitted.raised(toQuickest: samples)
    }

    /// The same slope, moved up through the quickest sixteenth of `samples` (the mean of their
    /// residuals, strays left out): on a jittery link the quickest few of a window tell the
    /// clock far better than the quickest quarter, whose mean wanders by a millisecond as the
    /// window slides. The path delay is taken from the same share of Delay_Req answers, so the
    /// two biases left (the quickest are still a little late) cancel.
    func raised(toQuickest samples: [(local: Int64, offset: Double)]) -> ClockLine {
        let residuals = samples.map { $0.offset - offset(at: $0.local) }.sorted(by: >)
        let quickest = Self.quickestShare(ofQuickestFirst: residuals)
        var line = self
        line.offset += quickest.reduce(0, +) / Double(quickest.count)
        return line
    }

    /// How many of `count` samples count as the quickest: a sixteenth, at least one.
    public static func quickestCount(of count: Int) -> Int { max(1, count / 16) }

    /// The quickest sixteenth of `values` (nanoseconds, sorted quickest first), without the
    /// strays at its front: a sample further ahead of the next than four times the spread of
    /// the share after it (and by over 100 µs) did not travel quicker, it was stamped wrong. A
    /// Sync converted to our clock with an offset read across a preemption looks a time slice
    /// early, and a master that stamps a Follow_Up late does the same: one 16 ms stray in a
    /// 128-sample window raised its line by 2 ms, for the 16 s it stayed in it. Queueing never
    /// sets one sample that far apart: the quickest of a jittery link's are close together.
    static func quickestShare(ofQuickestFirst values: [Double]) -> ArraySlice<Double> {
        let share = quickestCount(of: values.count)
        var start = 0
        while start < max(1, share / 4), values.count - start >= 2 {
            let gap = values[start] - values[start + 1]
            let spread = values[start + 1] - values[min(values.count - 1, start + share)]
            guard gap > max(Self.strayFloor, 4 * spread) else { break }
            start += 1
        }
        return values[start..<min(values.count, start + share)]
    }

    /// The least a stray stands ahead of the rest (100 µs): one nearer moves a line by less
    /// than that, far inside the playout's 2 ms tolerance.
    static let strayFloor = 100_000.0

    /// Two passes: the first fit leans toward the queued samples, so the upper half of its
    /// residuals may still hold a few that waited a little; the second pass drops those. Returns
    /// the line and the time the samples it went through span.
    private static func luckyFit(_ samples: [(local: Int64, offset: Double)], anchor: Int64, level: Bool) -> (line: ClockLine, span: Int64) {
        var chosen = samples
        var fitted = line(through: chosen, anchor: anchor, level: level)
        for _ in 0..<2 {
            let residuals = chosen.map { $0.offset - fitted.offset(at: $0.local) }
            let median = residuals.sorted()[residuals.count / 2]
            let lucky = zip(chosen, residuals).filter { $0.1 >= median }.map(\.0)
            guard lucky.count >= 3 else { break }
            chosen = lucky
            fitted = line(through: chosen, anchor: anchor, level: level)
        }
        let times = chosen.map(\.local)
        return (fitted, (times.max() ?? 0) - (times.min() ?? 0))
    }

    /// Least squares through the samples (a level one when `level`), anchored at `anchor`.
    private static func line(through samples: [(local: Int64, offset: Double)], anchor: Int64, level: Bool = false) -> ClockLine {
        let count = Double(samples.count)
        let meanTime = samples.map { Double($0.local - anchor) }.reduce(0, +) / count
        let meanOffset = samples.map(\.offset).reduce(0, +) / count
        var covariance = 0.0, variance = 0.0
        for sample in samples {
            let time = Double(sample.local - anchor) - meanTime
            covariance += time * (sample.offset - meanOffset)
            variance += time * time
        }
        let slope = variance > 0 && !level ? min(max(covariance / variance, -maximumDrift), maximumDrift) : 0
        let offset = meanOffset - slope * meanTime
        var squares = 0.0
        for sample in samples {
            let error = sample.offset - (offset + slope * Double(sample.local - anchor))
            squares += error * error
        }
        return ClockLine(local: anchor, offset: offset, drift: slope, samples: samples.count, residual: (squares / count).squareRoot())
    }
}
