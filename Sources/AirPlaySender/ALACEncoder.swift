/// Apple Lossless (ALAC) frames: stereo, 16-bit (RAOP, AirPlay 2 realtime) or 24-bit (AirPlay 2
/// buffered), 352 frames a packet, compressed.
///
/// Each frame is one channel pair element (ID_CPE) without stereo mixing. Each channel is sent
/// either as it is or predicted by its previous sample (the format's order-31 shortcut, which
/// decoders run as a first difference), whichever is smaller, and the residuals are written
/// with ALAC's adaptive Golomb code, whose
/// parameters (pb 40, mb 10, kb 14) are the ones announced in the `fmtp`. A frame that would not
/// come out smaller than the samples themselves is sent as an escape (uncompressed) frame, as
/// Apple's encoder does. Decoders run the same adaptation on their side, so every decision
/// here mirrors theirs bit for bit.
public struct ALACEncoder: Sendable {
    /// Frames in a full packet.
    public static let framesPerPacket = 352
    /// The `a=fmtp` parameters of CD audio after the payload type: frame length, compatible
    /// version, bit depth, pb, mb, kb, channels, max run, max frame bytes, average bit rate,
    /// sample rate.
    public static let fmtp = ALACEncoder().fmtp

    // The adaptive Golomb code's constants.
    private static let initialMean: UInt32 = 10     // mb
    private static let meanGain: UInt32 = 40        // pb (with pbFactor 4: 40 · 4 / 4)
    private static let maximumK: UInt32 = 14        // kb
    private static let escapePrefix = 9

    /// Bits per sample: 16 or 24.
    public let bitDepth: Int
    /// The sample rate the `fmtp` announces.
    public let sampleRate: Int
    /// Low bits sent as they are, beside the coded part: none for 16-bit, the low byte of a
    /// 24-bit sample (as Apple's encoder does). Those bits are close to noise and would only
    /// push the adaptive code past its largest parameter into escapes; the coded part is then
    /// 16 bits, what pb/mb/kb are tuned for.
    private var shiftedBits: Int { bitDepth - 16 }
    /// A pair's residuals carry one bit more than the coded part of a sample.
    private var channelBits: Int { bitDepth - shiftedBits + 1 }

    /// An encoder for samples of `bitDepth` (16 or 24) bits at `sampleRate` (it keeps no state
    /// between frames).
    public init(bitDepth: Int = 16, sampleRate: Int = 44100) {
        precondition(bitDepth == 16 || bitDepth == 24, "ALAC frames are 16- or 24-bit here")
        self.bitDepth = bitDepth
        self.sampleRate = sampleRate
    }

    /// The fmtp values (the ALACSpecificConfig of the magic cookie) for this depth and rate.
    public var fmtp: String { "352 0 \(bitDepth) 40 10 14 2 255 0 0 \(sampleRate)" }

    /// One ALAC frame for interleaved stereo samples (at most 352 frames) at `bitDepth`.
    public func encode(_ samples: [Int32]) -> [UInt8] {
        let frames = samples.count / 2
        precondition(frames <= Self.framesPerPacket, "an ALAC packet holds at most 352 frames")
        // One scratch area a packet: each channel's samples as they are, then their first
        // differences (the encoder runs for every packet of every stream).
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: max(1, 4 * frames)) { scratch in
            let shift = Int32(shiftedBits)
            // Each channel takes whichever codes smaller: its samples as they are (no predictor),
            // or their first differences (the order-31 shortcut, which costs 31 unused 16-bit
            // coefficients in the header).
            var residuals: [(order: UInt32, start: Int)] = []
            residuals.reserveCapacity(2)
            samples.withUnsafeBufferPointer { input in
                for channel in 0..<2 {
                    let plain = 2 * channel * frames, differences = plain + frames
                    var previous: Int32 = 0, plainMagnitude = 0, differenceMagnitude = 0
                    for frame in 0..<frames {
                        let sample = input[2 * frame + channel] >> shift
                        let difference = frame == 0 ? sample : sample &- previous
                        scratch[plain + frame] = sample
                        scratch[differences + frame] = difference
                        plainMagnitude += Int(sample.magnitude)
                        differenceMagnitude += Int(difference.magnitude)
                        previous = sample
                    }
                    // An adaptive Golomb code costs about log2 of the mean magnitude a value, so
                    // the smaller sum codes smaller; one pass instead of coding both.
                    let differencesWin = Self.codedBits(magnitude: differenceMagnitude, count: frames) + 31 * 16
                        < Self.codedBits(magnitude: plainMagnitude, count: frames)
                    residuals.append(differencesWin ? (31, differences) : (0, plain))
                }
            }
            let sampleBytes = bitDepth / 8
            var bits = BitWriter(capacity: 2 * sampleBytes * frames + 16)
            header(&bits, frames: frames, escaped: false, shiftedBytes: shiftedBits / 8)
            bits.write(0, 8)   // mixBits: channels are coded as they are
            bits.write(0, 8)   // mixRes
            for channel in residuals {
                bits.write(0, 4)   // prediction type 0 (the only one every decoder knows)
                bits.write(9, 4)   // denominator shift: unused by orders 0 and 31, but decoders refuse 0
                bits.write(4, 3)   // pbFactor: pb · 4 / 4
                bits.write(channel.order, 5)
                for _ in 0..<channel.order { bits.write(0, 16) }
            }
            if shiftedBits > 0 {
                // The shifted-out low bits, frame by frame, left then right.
                let mask = UInt32(1) << UInt32(shiftedBits) - 1
                for sample in samples.prefix(2 * frames) { bits.write(UInt32(bitPattern: sample) & mask, shiftedBits) }
            }
            for channel in residuals {
                Self.writeResiduals(UnsafeBufferPointer(rebasing: scratch[channel.start..<channel.start + frames]),
                                    escapeBits: channelBits, to: &bits)
            }
            bits.write(7, 3)   // ID_END
            let compressed = bits.finished()
            return compressed.count < 2 * sampleBytes * frames + 8 ? compressed : escaped(samples)
        }
    }

    /// The frame as an escape: the samples as they are, left and right interleaved.
    func escaped(_ samples: [Int32]) -> [UInt8] {
        var bits = BitWriter()
        header(&bits, frames: samples.count / 2, escaped: true, shiftedBytes: 0)
        for sample in samples { bits.write(UInt32(bitPattern: sample), bitDepth) }
        bits.write(7, 3)
        return bits.finished()
    }

    private func header(_ bits: inout BitWriter, frames: Int, escaped: Bool, shiftedBytes: Int) {
        let partial = frames != Self.framesPerPacket
        bits.write(1, 3)                    // ID_CPE: a channel pair
        bits.write(0, 4)                    // element instance tag
        bits.write(0, 12)                   // unused
        bits.write(partial ? 1 : 0, 1)      // the frame count follows when not the full 352
        bits.write(UInt32(shiftedBytes), 2) // low bytes sent as they are (escapes send whole samples)
        bits.write(escaped ? 1 : 0, 1)
        if partial {
            bits.write(UInt32(frames) >> 16, 16)
            bits.write(UInt32(frames) & 0xFFFF, 16)
        }
    }

    /// ALAC's adaptive Golomb code: the parameter k follows a running mean of the coded values,
    /// and after a stretch of small values a run of zeros is coded as one count.
    static func writeResiduals(_ residuals: UnsafeBufferPointer<Int32>, escapeBits: Int, to bits: inout BitWriter) {
        var mean = initialMean
        var afterZeros: UInt32 = 0
        var index = 0
        while index < residuals.count {
            let k = min(UInt32(31 - (mean >> 9 &+ 3).leadingZeroBitCount), maximumK)
            let residual = residuals[index]
            // Signs interleave: 0, -1, 1, -2, 2 … become 0, 1, 2, 3, 4 …
            let folded = residual >= 0 ? UInt32(residual) << 1 : (UInt32(-residual) << 1) - 1
            let code = folded - afterZeros
            writeCode(code, k: k, escapeBits: escapeBits, to: &bits)
            index += 1
            mean = meanGain &* (code &+ afterZeros) &+ mean &- ((meanGain &* mean) >> 9)
            if code > 0xFFFF { mean = 0xFFFF }
            afterZeros = 0
            if mean << 2 < 512, index < residuals.count {
                // Small values: the zeros that follow are coded as one run length.
                let runK = UInt32(mean.leadingZeroBitCount) - 24 + ((mean + 16) >> 6)
                var run = 0
                while index + run < residuals.count, residuals[index + run] == 0, run < 0xFFFF { run += 1 }
                writeCode(UInt32(run), k: runK, escapeBits: 16, to: &bits)
                index += run
                afterZeros = run >= 0xFFFF ? 0 : 1
                mean = 0
            }
        }
    }

    /// About how many bits `count` values of summed magnitude `magnitude` code to: a zero and
    /// log2(mean + 1) + 1 bits each (the Golomb parameter follows the mean).
    static func codedBits(magnitude: Int, count: Int) -> Int {
        guard count > 0 else { return 0 }
        let mean = UInt(2 * magnitude / count + 1)
        return count * (Int(UInt.bitWidth - mean.leadingZeroBitCount) + 1)
    }

    /// One value: q = value / (2^k − 1) ones and a zero, then the remainder r as r + 1 in k bits
    /// (or k − 1 zero bits when r is 0), all in one write (at most 9 + 14 bits). Nine ones escape
    /// to the value in `escapeBits` bits.
    static func writeCode(_ value: UInt32, k: UInt32, escapeBits: Int, to bits: inout BitWriter) {
        let divisor = (UInt32(1) << k) - 1
        let quotient = value / divisor
        guard quotient < UInt32(escapePrefix) else {
            bits.write((1 << escapePrefix) - 1, escapePrefix)
            bits.write(value, escapeBits)
            return
        }
        let remainder = value - quotient * divisor
        let (tail, tailBits) = remainder == 0 ? (UInt32(0), k - 1) : (remainder + 1, k)
        // q ones, a zero, then the tail.
        bits.write(((1 << quotient) - 1) << (tailBits + 1) | tail, Int(quotient + 1 + tailBits))
    }
}

/// Bits written most significant first, as ALAC reads them.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var pending: UInt64 = 0
    private var pendingCount = 0

    /// A writer with room for `capacity` bytes before it grows.
    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Appends the low `count` bits of `value` (count ≤ 32).
    mutating func write(_ value: UInt32, _ count: Int) {
        guard count > 0 else { return }
        pending = pending << UInt64(count) | UInt64(value) & ((1 << UInt64(count)) - 1)
        pendingCount += count
        while pendingCount >= 8 {
            pendingCount -= 8
            bytes.append(UInt8(truncatingIfNeeded: pending >> UInt64(pendingCount)))
        }
        pending &= (1 << UInt64(pendingCount)) - 1
    }

    /// Bits written so far.
    var bitCount: Int { bytes.count * 8 + pendingCount }

    /// The bytes, the last one padded with zero bits, without copying them (the writer is done).
    mutating func finished() -> [UInt8] {
        if pendingCount > 0 { bytes.append(UInt8(truncatingIfNeeded: pending << UInt64(8 - pendingCount))) }
        pendingCount = 0
        pending = 0
        return bytes
    }
}
