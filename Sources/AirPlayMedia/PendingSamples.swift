/// Decoded samples waiting to be read, as every `PCMSource` that decodes in chunks holds them:
/// appended as they come, taken from the front. What was taken is dropped in large steps (one
/// move per 64 Ki samples, not one per packet).
public struct PendingSamples: Sendable {
    private var samples: [Int32] = []
    private var readIndex = 0

    /// Nothing waiting.
    public init() {}

    /// Samples waiting.
    public var count: Int { samples.count - readIndex }

    /// Makes room for `more` samples to come.
    public mutating func reserve(_ more: Int) { samples.reserveCapacity(samples.count + more) }

    /// Appends one sample.
    public mutating func append(_ sample: Int32) { samples.append(sample) }

    /// Appends samples.
    public mutating func append(contentsOf more: some Sequence<Int32>) { samples.append(contentsOf: more) }

    /// Appends `count` samples that `fill` writes in place (a decoder's whole block at once).
    public mutating func append(count: Int, _ fill: (UnsafeMutableBufferPointer<Int32>) -> Void) {
        let start = samples.count
        samples.append(contentsOf: repeatElement(0, count: count))
        samples.withUnsafeMutableBufferPointer { fill(UnsafeMutableBufferPointer(rebasing: $0[start...])) }
    }

    /// Up to `wanted` samples from the front (fewer when fewer wait).
    public mutating func take(_ wanted: Int) -> [Int32] {
        let count = min(wanted, self.count)
        let taken = Array(samples[readIndex..<readIndex + count])
        readIndex += count
        if readIndex > 65536 {
            samples.removeFirst(readIndex)
            readIndex = 0
        }
        return taken
    }
}
