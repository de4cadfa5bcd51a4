/// Another source's audio at another rate and depth: a 44.1 kHz/16-bit file sent as the
/// 48 kHz/24-bit ALAC that Apple's senders send and every AirPlay 2 receiver takes, when a
/// receiver takes nothing closer to the file (`RationalResampler` for the rate). A change of
/// depth alone is exact (a shift); with a rate change the filter's output is rounded to the
/// target depth. Calls come from one thread (the streamer's).
public final class ResampledPCMSource: PCMSource, @unchecked Sendable {
    /// The source's frames read per round.
    static let chunkFrames = 4096

    private let inner: any PCMSource
    private var resampler: RationalResampler?
    /// The format of what `read` returns.
    public let format: PCMFormat
    private var pending = PendingSamples()
    private var ended = false

    /// `inner`'s audio at `format`'s rate and depth (both stereo).
    public init(_ inner: any PCMSource, to format: PCMFormat) throws(MediaError) {
        guard inner.format.channels == 2, format.channels == 2, inner.format.bitsPerSample <= 24, format.bitsPerSample <= 24 else {
            throw MediaError(code: -7, domain: "airplay.resample", message: "resampling is for stereo up to 24 bits, not \(inner.format) to \(format)")
        }
        self.inner = inner
        self.format = format
        if inner.format.sampleRate != format.sampleRate {
            resampler = RationalResampler(from: inner.format.sampleRate, to: format.sampleRate)
        }
    }

    /// The source's tags: the track is the same.
    public var tags: TrackTags { inner.tags }

    /// The next `frames` frames in `format`; fewer at the end, empty after it.
    public func read(frames: Int) -> [Int32] {
        while pending.count < frames * 2 && !ended { pump() }
        return pending.take(frames * 2)
    }

    /// One chunk of the source through the resampler (or the shift), or its end.
    private func pump() {
        let samples = inner.read(frames: Self.chunkFrames)
        if samples.isEmpty { ended = true }
        let shift = format.bitsPerSample - inner.format.bitsPerSample
        guard resampler != nil else {
            pending.append(contentsOf: samples.map { shift >= 0 ? $0 << shift : $0 >> -shift })
            return
        }
        // In place: a copy of the resampler would copy its history on every chunk.
        let out = ended ? resampler!.finish() : resampler!.process(samples)
        let scale = Double(1 << max(0, shift)) / Double(1 << max(0, -shift))
        let largest = Double(format.maximumSample), smallest = -largest - 1
        pending.reserve(out.count)
        for value in out { pending.append(Int32(min(largest, max(smallest, (value * scale).rounded())))) }
    }
}
