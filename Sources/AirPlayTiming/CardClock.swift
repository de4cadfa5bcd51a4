import AirPlayMedia

/// A sound card's crystal seen from our monotonic clock: when the frame written now will leave
/// the card, and how fast the card really plays (its rate in ppm off nominal), from readings of
/// its delay (`OutputClockReading`).
///
/// Each reading gives the count of frames that had left the card by its time (written minus
/// queued). Those counts lie on a straight line whose slope is the card's real rate. A card's
/// pointer moves in steps (a USB packet, a DMA burst), so a count is low by up to one step, and a
/// reading taken late (the reading thread preempted) looks low too: the line is fitted by least
/// squares through the last `window` seconds and then raised to the 95th percentile of its
/// residuals, the readings that were least late (the idea `ClockLine` uses for network samples).
///
/// The slope is believed as far as the readings can tell it: it is shrunk towards the nominal
/// rate by its own uncertainty against a prior of ±`priorPPM` (a few seconds of 1 ms steps say
/// little; half a minute says a crystal's rate to a few ppm). A restart of the card (an underrun,
/// a reopen) starts the line again.
public struct CardClock: Hashable, Sendable {
    /// What the line says, for logs, the diagnostics and the tests.
    public struct Estimate: Hashable, Sendable {
        /// The card's rate off nominal, in parts per million (positive: it plays fast).
        public var ppm: Double
        /// The uncertainty of `ppm` (one standard deviation), in parts per million.
        public var ppmUncertainty: Double
        /// Seconds of readings the line went through.
        public var span: Double
        /// The uncertainty of when the next frame leaves (one standard deviation, seconds): the
        /// line's height and slope as far as its readings tell them, at the newest reading.
        public var leaveTimeUncertainty: Double
    }

    /// Frames per second the card was opened at.
    public let nominalRate: Double
    /// Seconds of readings kept.
    public let window: Double
    /// How far off nominal a crystal is believed to run before readings say otherwise (one
    /// standard deviation, ppm): USB DACs, HDMI and I2S clocks are within a few hundred.
    public static let priorPPM = 300.0
    /// Readings closer together than this are not kept (the playout reads it about 30 times a second).
    static let spacing = 0.02

    private var times: [Double] = []
    private var played: [Double] = []
    private var restarts: Int?
    /// The line: `played = anchorPlayed + rate * (t - anchorTime)`.
    private var anchorTime = 0.0
    private var anchorPlayed = 0.0
    private var rate: Double
    private var fitted = false
    /// The estimate of the last fit.
    public private(set) var estimate: Estimate?

    /// A card opened at `nominalRate` frames per second, fitted over `window` seconds.
    public init(nominalRate: Double, window: Double = 20) {
        self.nominalRate = nominalRate
        self.window = window
        rate = nominalRate
    }

    /// Takes a reading; a new restart count drops what came before. Readings while the card
    /// holds nothing say nothing about its rate (it is stopped or starved) and are not kept.
    public mutating func add(_ reading: OutputClockReading) {
        if restarts != reading.restarts {
            restarts = reading.restarts
            times = []
            played = []
            fitted = false
            estimate = nil
            rate = nominalRate
        }
        guard reading.queuedFrames > 0, reading.writtenFrames >= reading.queuedFrames else { return }
        // The run's start, where the output knows it, is a reading without a pointer's steps:
        // frame 0 left then.
        if times.isEmpty, let start = reading.startTime, start < reading.time {
            times.append(start)
            played.append(0)
        }
        if let last = times.last, reading.time - last < Self.spacing { return }
        times.append(reading.time)
        played.append(Double(reading.writtenFrames - reading.queuedFrames))
        let oldest = reading.time - window
        if let first = times.firstIndex(where: { $0 >= oldest }), first > 0 {
            times.removeFirst(first)
            played.removeFirst(first)
        }
        fit()
    }

    /// The monotonic time at which frame `index` (counted like `writtenFrames`) leaves the card;
    /// nil before the first reading with frames queued.
    public func leaveTime(ofFrame index: Int) -> Double? {
        guard fitted else { return nil }
        return anchorTime + (Double(index) - anchorPlayed) / rate
    }

    /// Frames per second the card really plays, as far as known (nominal until readings tell).
    public var realRate: Double { rate }

    private mutating func fit() {
        let count = times.count
        guard count > 0 else { return }
        let meanTime = times.reduce(0, +) / Double(count)
        let meanPlayed = played.reduce(0, +) / Double(count)
        var spreadTime = 0.0, covariance = 0.0
        for index in 0..<count {
            let dt = times[index] - meanTime
            spreadTime += dt * dt
            covariance += dt * (played[index] - meanPlayed)
        }
        var slope = nominalRate, slopeVariance = Double.infinity, residualVariance = Double.infinity
        if count >= 3, spreadTime > 0 {
            let leastSquares = covariance / spreadTime
            var squares = 0.0
            for index in 0..<count {
                let residual = played[index] - meanPlayed - leastSquares * (times[index] - meanTime)
                squares += residual * residual
            }
            // The slope's own variance, with a floor for readings that fit too well to be true
            // (a pointer that moved in lockstep with our reads).
            residualVariance = max(squares / Double(count - 2), 1)
            slopeVariance = residualVariance / spreadTime
            let prior = Self.priorPPM * 1e-6 * nominalRate
            let weight = prior * prior / (prior * prior + slopeVariance)
            slope = nominalRate + (leastSquares - nominalRate) * weight
            slopeVariance = slopeVariance * weight
        }
        // Raised to the readings that were least late: the 95th percentile of the residuals
        // (a pointer in steps then reads a twentieth of a step low; the top 5 % are left to
        // readings whose time was taken early, by a preemption inside the call).
        var residuals = (0..<count).map { played[$0] - meanPlayed - slope * (times[$0] - meanTime) }
        let raise = Self.select(&residuals, rank: min(count - 1, Int(Double(count) * 0.95)))
        anchorTime = meanTime
        anchorPlayed = meanPlayed + raise
        rate = slope
        fitted = true
        let age = (times.last ?? meanTime) - meanTime
        let heightVariance = residualVariance / Double(count) + slopeVariance * age * age
        estimate = Estimate(ppm: (slope / nominalRate - 1) * 1e6,
                            ppmUncertainty: slopeVariance.isFinite ? slopeVariance.squareRoot() / nominalRate * 1e6 : Self.priorPPM,
                            span: (times.last ?? 0) - (times.first ?? 0),
                            leaveTimeUncertainty: heightVariance.isFinite ? heightVariance.squareRoot() / nominalRate : 0.001)
    }

    /// The value that sorting `values` would put at `rank` (0-based, ascending), found by
    /// selection (Hoare's), `values` reordered: the fit runs at every reading, through up to a
    /// thousand of them, and a whole sort there was the line's largest cost.
    static func select(_ values: inout [Double], rank: Int) -> Double {
        var low = 0, high = values.count - 1
        while low < high {
            let pivot = values[(low + high) / 2]
            var i = low, j = high
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j {
                    values.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if rank <= j {
                high = j
            } else if rank >= i {
                low = i
            } else {
                return values[rank]
            }
        }
        return values[rank]
    }
}
