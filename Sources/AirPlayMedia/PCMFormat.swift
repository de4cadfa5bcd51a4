/// The shape of decoded audio: sample rate, channels and bits per sample.
///
/// Inside both programs samples travel as `Int32`, interleaved, each holding the value at the
/// stream's own depth (a 16-bit sample stays within ±32767, a 24-bit one within ±8388607): one
/// sample type for every format, and no scaling on the way. Only an output turns them into
/// bytes, at the stream's depth (`littleEndianBytes`), so 24-bit audio reaches a file or a sink
/// as 24 bits and 16-bit audio as 16.
public struct PCMFormat: Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Int
    /// Samples per frame.
    public var channels: Int
    /// Significant bits per sample: 16 or 24 (ALAC also knows 20, carried as 24).
    public var bitsPerSample: Int

    /// A format; `bitsPerSample` above 16 is carried (and written) as 24.
    public init(sampleRate: Int, channels: Int, bitsPerSample: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
    }

    /// CD audio, what RAOP and AirPlay 2's realtime streams carry: 44.1 kHz, stereo, 16-bit.
    public static let cd = PCMFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)

    /// Bytes one sample takes in the raw format: 2 (S16LE) or 3 (S24LE, packed).
    public var bytesPerSample: Int { bitsPerSample <= 16 ? 2 : 3 }

    /// The largest sample value at this depth.
    public var maximumSample: Int32 { Int32((1 << (bytesPerSample * 8 - 1)) - 1) }

    /// The GStreamer raw-audio format name of the bytes an output writes: `S16LE` or `S24LE`.
    public var gstreamerName: String { bytesPerSample == 2 ? "S16LE" : "S24LE" }

    /// As logs and status pages show it: `S24LE 48000 Hz 2 ch`.
    public var description: String { "\(gstreamerName) \(sampleRate) Hz \(channels) ch" }

    /// Samples as the raw format's bytes: little-endian, 2 or 3 bytes each, interleaved as given.
    public func littleEndianBytes(_ samples: [Int32]) -> [UInt8] {
        var bytes: [UInt8] = []
        writeLittleEndianBytes(samples, into: &bytes)
        return bytes
    }

    /// `littleEndianBytes` into `bytes`, whose storage is reused when it is large enough and
    /// not shared.
    public func writeLittleEndianBytes(_ samples: [Int32], into bytes: inout [UInt8]) {
        let width = bytesPerSample, count = samples.count * width
        if bytes.count != count { bytes = [UInt8](repeating: 0, count: count) }
        bytes.withUnsafeMutableBufferPointer { out in
            samples.withUnsafeBufferPointer { input in
                var at = 0
                for sample in input {
                    let bits = UInt32(bitPattern: sample)
                    out[at] = UInt8(truncatingIfNeeded: bits)
                    out[at + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                    if width == 3 { out[at + 2] = UInt8(truncatingIfNeeded: bits >> 16) }
                    at += width
                }
            }
        }
    }

    /// The reverse of `littleEndianBytes`: raw bytes (a whole number of samples) as samples.
    public func samples(littleEndian bytes: [UInt8]) -> [Int32] {
        let width = bytesPerSample, count = bytes.count / width
        return [Int32](unsafeUninitializedCapacity: count) { samples, written in
            for index in 0..<count {
                let at = index * width
                if width == 2 {
                    samples[index] = Int32(Int16(bitPattern: UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8))
                } else {
                    let bits = UInt32(bytes[at]) << 8 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 24
                    samples[index] = Int32(bitPattern: bits) >> 8
                }
            }
            written = count
        }
    }
}
