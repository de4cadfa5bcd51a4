/// Apple Lossless (ALAC) decoding in Swift: 16-, 20- and 24-bit streams of one or two channels
/// (RAOP's 16-bit, AirPlay 2's buffered 24-bit).
///
/// Why our own and not GStreamer's `avdec_alac`: a pipeline per session costs megabytes and a
/// thread hop per packet, and an answer has to be waited for. This decoder is a plain function
/// of the packet (microseconds, no allocation after the first packet) and reads what real
/// senders write, including frames without the closing END element (PulseAudio, PipeWire).
///
/// A frame is a list of elements, each 3 bits of type: a single channel (SCE), a channel pair
/// (CPE) or LFE, up to END. An element holds a 12-bit header (instance tag, unused bits), a
/// has-size bit (32-bit frame count follows), two bits of shifted bytes and an escape bit. An
/// escaped element holds its samples as they are; otherwise each channel is the output of an
/// adaptive FIR predictor run over residuals coded with ALAC's adaptive Golomb code, and a pair
/// is decorrelated with the mix bits and weight. The numbers below are the format's, as
/// documented by Apple's ALAC release and matched bit for bit against FFmpeg's decoder.
///
/// `@unchecked Sendable`: it may be handed between threads, but it keeps scratch buffers, so
/// its callers decode one packet at a time (the receiver holds a lock around it).
public final class ALACDecoder: AudioDecoder, @unchecked Sendable {
    /// The stream parameters an `a=fmtp:96` line (or an ALACSpecificConfig) carries.
    public struct Configuration: Hashable, Sendable {
        /// Frames in a full packet (352 for RAOP).
        public var frameLength: Int
        /// Bits per sample (16, 20 or 24).
        public var bitDepth: Int
        /// Rice history multiplier (pb, 40).
        public var historyMultiplier: UInt32
        /// Initial rice history (mb, 10).
        public var initialHistory: UInt32
        /// Largest rice parameter (kb, 14).
        public var riceLimit: Int
        /// Channels (1 or 2).
        public var channels: Int

        /// The parameters from the 11 fmtp values: frame length, compatible version, bit depth,
        /// pb, mb, kb, channels, max run, max frame bytes, average bit rate, sample rate.
        public init(fmtp: [Int]) throws(AudioDecodeError) {
            guard fmtp.count >= 11 else { throw .malformed("ALAC fmtp needs 11 values, got \(fmtp.count)") }
            guard (1...16384).contains(fmtp[0]) else { throw .unsupported("frame length \(fmtp[0])") }
            guard [16, 20, 24].contains(fmtp[2]) else { throw .unsupported("\(fmtp[2])-bit samples (16, 20 or 24 only)") }
            guard (1...2).contains(fmtp[6]) else { throw .unsupported("\(fmtp[6]) channels") }
            // FFmpeg writes zeros here for streams of escape frames only.
            guard (0...255).contains(fmtp[3]), (0...0xFFFF).contains(fmtp[4]), (0...31).contains(fmtp[5]) else {
                throw .malformed("rice parameters pb \(fmtp[3]) mb \(fmtp[4]) kb \(fmtp[5])")
            }
            frameLength = fmtp[0]
            bitDepth = fmtp[2]
            historyMultiplier = UInt32(fmtp[3])
            initialHistory = UInt32(fmtp[4])
            riceLimit = fmtp[5]
            channels = fmtp[6]
        }
    }

    private let configuration: Configuration
    /// Scratch reused for every packet, each channel's run at `channel * frameLength`:
    /// residuals, predicted samples, shifted-out bits.
    private struct Scratch {
        var residuals: [Int32]
        var samples: [Int32]
        var shifted: [UInt32]
    }
    private var scratch: Scratch

    /// A decoder for one stream.
    public init(configuration: Configuration) {
        self.configuration = configuration
        let count = 2 * configuration.frameLength
        scratch = Scratch(residuals: [Int32](repeating: 0, count: count), samples: [Int32](repeating: 0, count: count),
                          shifted: [UInt32](repeating: 0, count: count))
    }

    /// A decoder for a stream announced with these fmtp values.
    public convenience init(fmtp: [Int]) throws(AudioDecodeError) {
        self.init(configuration: try Configuration(fmtp: fmtp))
    }

    private enum Element: UInt32 {
        case single = 0, pair = 1, coupling = 2, lfe = 3, data = 4, program = 5, fill = 6, end = 7
    }

    /// The format decoded samples are in: 20-bit streams come out in 24 bits, as Apple's decoder
    /// writes them.
    public var outputBitsPerSample: Int { configuration.bitDepth == 16 ? 16 : 24 }

    /// Decodes one packet to interleaved samples (at `outputBitsPerSample`).
    ///
    /// Decoding is most of what receiving costs: the scratch is moved out of the object for the
    /// packet and its runs are worked on through buffer pointers, so the inner loops pay no
    /// exclusivity or copy-on-write checks (every index stays below the frame count, which is
    /// checked against the frame length the buffers hold).
    public func decode(_ packet: [UInt8]) throws(AudioDecodeError) -> [Int32] {
        var work = Scratch(residuals: [], samples: [], shifted: [])
        swap(&work, &scratch)
        defer { swap(&work, &scratch) }
        let configuration = configuration
        let widen = Int32(outputBitsPerSample - configuration.bitDepth)
        // (Array's pointer methods rethrow untyped: the result comes out as a value.)
        let decoded = packet.withUnsafeBytes { raw in
            work.residuals.withUnsafeMutableBufferPointer { residuals in
                work.samples.withUnsafeMutableBufferPointer { samples in
                    work.shifted.withUnsafeMutableBufferPointer { shifted in
                        var bits = BitReader(raw)
                        let buffers = Buffers(residuals: residuals, samples: samples, shifted: shifted, stride: configuration.frameLength)
                        return Result { () throws(AudioDecodeError) in try Self.decode(&bits, configuration: configuration, buffers: buffers, widen: widen) }
                    }
                }
            }
        }
        return try decoded.get()
    }

    /// The scratch's runs for one packet.
    private struct Buffers {
        let residuals: UnsafeMutableBufferPointer<Int32>
        let samples: UnsafeMutableBufferPointer<Int32>
        let shifted: UnsafeMutableBufferPointer<UInt32>
        /// Where channel 1's run starts (the frame length).
        let stride: Int

        func residuals(_ channel: Int) -> UnsafeMutableBufferPointer<Int32> { run(residuals, channel) }
        func samples(_ channel: Int) -> UnsafeMutableBufferPointer<Int32> { run(samples, channel) }
        func shifted(_ channel: Int) -> UnsafeMutableBufferPointer<UInt32> { run(shifted, channel) }

        private func run<T>(_ buffer: UnsafeMutableBufferPointer<T>, _ channel: Int) -> UnsafeMutableBufferPointer<T> {
            UnsafeMutableBufferPointer(rebasing: buffer[channel * stride..<(channel + 1) * stride])
        }
    }

    private static func decode(_ bits: inout BitReader, configuration: Configuration, buffers: Buffers, widen: Int32) throws(AudioDecodeError) -> [Int32] {
        var output: [Int32] = []
        var channel = 0
        var frames = 0
        // Some senders leave out the END element when the last bits do not fit it.
        while bits.remaining >= 3 {
            guard let element = Element(rawValue: try bits.read(3)) else { throw .malformed("element type") }
            if element == .end { break }
            let count: Int
            switch element {
            case .single, .lfe: count = 1
            case .pair: count = 2
            default: throw .unsupported("element \(element)")
            }
            guard channel + count <= configuration.channels else { throw .malformed("more channels than announced") }
            let elementFrames = try decodeElement(&bits, channels: count, configuration: configuration, buffers: buffers)
            if channel == 0 {
                frames = elementFrames
                output = [Int32](repeating: 0, count: frames * configuration.channels)
            } else if elementFrames != frames {
                throw .malformed("elements of \(frames) and \(elementFrames) frames")
            }
            let channels = configuration.channels
            output.withUnsafeMutableBufferPointer { output in
                for offset in 0..<count {
                    let source = buffers.samples(offset)
                    for frame in 0..<frames { output[frame * channels + channel + offset] = source[frame] << widen }
                }
            }
            channel += count
            if channel == configuration.channels { break }
        }
        guard channel == configuration.channels else { throw .truncated }
        return output
    }

    /// One SCE or CPE: its frames are left in the samples' runs `0..<channels`; returns the
    /// frame count.
    private static func decodeElement(_ bits: inout BitReader, channels: Int, configuration: Configuration,
                                      buffers: Buffers) throws(AudioDecodeError) -> Int {
        _ = try bits.read(4)   // element instance tag
        guard try bits.read(12) == 0 else { throw .malformed("unused header bits set") }
        let hasSize = try bits.read(1) == 1
        let shiftedBits = Int(try bits.read(2)) * 8
        let escaped = try bits.read(1) == 1
        var frames = configuration.frameLength
        if hasSize {
            let count = Int(try bits.read(32))
            guard (1...configuration.frameLength).contains(count) else { throw .malformed("\(count) frames in a packet") }
            frames = count
        }
        guard shiftedBits < configuration.bitDepth else { throw .malformed("\(shiftedBits) shifted bits") }
        if escaped {
            for frame in 0..<frames {
                for channel in 0..<channels {
                    buffers.samples(channel)[frame] = signExtend(try bits.read(configuration.bitDepth), bits: configuration.bitDepth)
                }
            }
            return frames
        }
        let mixShift = Int(try bits.read(8))
        let mixWeight = Int32(try bits.read(8))
        var predictors: [(mode: UInt32, quantization: Int, multiplier: UInt32, coefficients: [Int32])] = []
        for _ in 0..<channels {
            let mode = try bits.read(4)
            let quantization = Int(try bits.read(4))
            let multiplier = try bits.read(3)
            let order = Int(try bits.read(5))
            guard quantization > 0, order < configuration.frameLength else { throw .malformed("predictor order \(order)") }
            var coefficients = [Int32](repeating: 0, count: order)
            // Stored newest-first so the filter can walk the history forwards.
            for index in stride(from: order - 1, through: 0, by: -1) {
                coefficients[index] = signExtend(try bits.read(16), bits: 16)
            }
            predictors.append((mode, quantization, multiplier, coefficients))
        }
        if shiftedBits > 0 {
            for frame in 0..<frames {
                for channel in 0..<channels { buffers.shifted(channel)[frame] = try bits.read(shiftedBits) }
            }
        }
        // A pair's channels carry one bit more than a sample (the side channel's range).
        let sampleBits = configuration.bitDepth - shiftedBits + channels - 1
        for channel in 0..<channels {
            let predictor = predictors[channel]
            let residuals = buffers.residuals(channel)
            try readResiduals(&bits, into: residuals, frames: frames, sampleBits: sampleBits, configuration: configuration,
                              multiplier: predictor.multiplier * configuration.historyMultiplier / 4)
            if predictor.mode == 15 {
                // Mode 15 runs the first-difference filter over the residuals before the real one.
                for index in 1..<max(frames, 1) {
                    residuals[index] = signExtend(residuals[index - 1] &+ residuals[index], bits: sampleBits)
                }
            } else if predictor.mode != 0 {
                throw .unsupported("prediction mode \(predictor.mode)")
            }
            var coefficients = predictor.coefficients
            coefficients.withUnsafeMutableBufferPointer { coefficients in
                predict(residuals, into: buffers.samples(channel), frames: frames, sampleBits: sampleBits,
                        coefficients: coefficients, quantization: predictor.quantization)
            }
        }
        if channels == 2, mixWeight != 0 {
            let (left, right) = (buffers.samples(0), buffers.samples(1))
            for frame in 0..<frames {
                let first = left[frame], second = right[frame]
                let difference = first &- ((second &* mixWeight) >> Int32(mixShift))
                left[frame] = difference &+ second
                right[frame] = difference
            }
        }
        if shiftedBits > 0 {
            for channel in 0..<channels {
                let (samples, shifted) = (buffers.samples(channel), buffers.shifted(channel))
                for frame in 0..<frames {
                    samples[frame] = samples[frame] << Int32(shiftedBits) | Int32(bitPattern: shifted[frame])
                }
            }
        }
        return frames
    }

    /// The adaptive Golomb code: k follows a running history of the values; after small values
    /// a run of zeros is coded as one count, and the value after such a run is one less.
    private static func readResiduals(_ bits: inout BitReader, into residuals: UnsafeMutableBufferPointer<Int32>, frames: Int,
                                      sampleBits: Int, configuration: Configuration, multiplier: UInt32) throws(AudioDecodeError) {
        var history = configuration.initialHistory
        var signModifier: UInt32 = 0
        var index = 0
        let limit = configuration.riceLimit
        while index < frames {
            let k = min(log2(history >> 9 &+ 3), limit)
            let value = try readScalar(&bits, k: k, escapeBits: sampleBits) &+ signModifier
            signModifier = 0
            residuals[index] = Int32(bitPattern: value >> 1) ^ -Int32(bitPattern: value & 1)
            if value > 0xFFFF {
                history = 0xFFFF
            } else {
                history = history &+ value &* multiplier &- ((history &* multiplier) >> 9)
            }
            if history < 128, index + 1 < frames {
                let runK = min(7 - log2(history) + Int((history + 16) >> 6), limit)
                let coded = Int(try readScalar(&bits, k: runK, escapeBits: 16))
                // A run past the frame is cut at its end (FFmpeg does the same).
                let run = min(coded, frames - index - 1)
                if run > 0 {
                    for zero in (index + 1)...(index + run) { residuals[zero] = 0 }
                    index += run
                }
                if coded <= 0xFFFF { signModifier = 1 }
                history = 0
            }
            index += 1
        }
    }

    /// One Golomb value: up to 8 ones then a zero give q; then k bits whose value r (if above
    /// one) adds r − 1 to q·(2^k − 1), else only k − 1 bits are taken. Nine ones escape to the
    /// value in `escapeBits` bits.
    private static func readScalar(_ bits: inout BitReader, k: Int, escapeBits: Int) throws(AudioDecodeError) -> UInt32 {
        // The unary prefix: up to nine 1 bits, ended by a 0 unless all nine are there (the
        // escape), counted from one peek rather than bit by bit.
        let available = min(9, bits.remaining)
        let prefix = try bits.peek(available)
        let zeros = ~prefix & ((1 << UInt32(available)) &- 1)
        let ones = zeros == 0 ? available : available - 1 - (31 - zeros.leadingZeroBitCount)
        if ones == 9 {
            bits.skip(9)
            return try bits.read(escapeBits)
        }
        guard ones < available else { throw .truncated }
        bits.skip(ones + 1)
        let quotient = UInt32(ones)
        guard k > 1 else { return quotient }
        var value = (quotient << UInt32(k)) &- quotient
        let extra = try bits.peek(k)
        if extra > 1 {
            value &+= extra - 1
            bits.skip(k)
        } else {
            bits.skip(k - 1)
        }
        return value
    }

    /// The adaptive FIR predictor (order 31 is the first-difference shortcut): rebuilds samples
    /// from residuals and adapts its coefficients by the sign of each residual, as the encoder did.
    private static func predict(_ residuals: UnsafeMutableBufferPointer<Int32>, into output: UnsafeMutableBufferPointer<Int32>,
                                frames: Int, sampleBits: Int, coefficients: UnsafeMutableBufferPointer<Int32>, quantization: Int) {
        let order = coefficients.count
        guard frames > 0 else { return }
        output[0] = residuals[0]
        guard frames > 1 else { return }
        if order == 0 {
            for index in 1..<frames { output[index] = residuals[index] }
            return
        }
        if order == 31 {
            for index in 1..<frames { output[index] = signExtend(output[index - 1] &+ residuals[index], bits: sampleBits) }
            return
        }
        var index = 1
        while index <= order, index < frames {
            output[index] = signExtend(output[index - 1] &+ residuals[index], bits: sampleBits)
            index += 1
        }
        let rounding = Int64(1) << (quantization - 1)
        while index < frames {
            let base = index - order - 1
            let anchor = output[base]
            var sum: Int32 = 0
            for tap in 0..<order { sum = sum &+ (output[base + 1 + tap] &- anchor) &* coefficients[tap] }
            let prediction = Int32(truncatingIfNeeded: (Int64(sum) + rounding) >> Int64(quantization))
            var error = UInt32(bitPattern: residuals[index])
            output[index] = signExtend(prediction &+ anchor &+ Int32(bitPattern: error), bits: sampleBits)
            let errorSign = sign(Int32(bitPattern: error))
            if errorSign != 0 {
                var tap = 0
                while tap < order, Int32(bitPattern: error &* UInt32(bitPattern: errorSign)) > 0 {
                    var delta = anchor &- output[base + 1 + tap]
                    let direction = sign(delta) &* errorSign
                    coefficients[tap] &-= direction
                    delta = delta &* direction
                    error = error &- UInt32(bitPattern: delta >> Int32(quantization)) &* UInt32(tap + 1)
                    tap += 1
                }
            }
            index += 1
        }
    }

    private static func sign(_ value: Int32) -> Int32 { value > 0 ? 1 : (value < 0 ? -1 : 0) }

    /// floor(log2(value)), 0 for 0.
    private static func log2(_ value: UInt32) -> Int { value == 0 ? 0 : 31 - value.leadingZeroBitCount }

    /// The low `bits` bits of a value, sign-extended.
    private static func signExtend(_ value: UInt32, bits: Int) -> Int32 {
        Int32(bitPattern: value << UInt32(32 - bits)) >> Int32(32 - bits)
    }

    private static func signExtend(_ value: Int32, bits: Int) -> Int32 { signExtend(UInt32(bitPattern: value), bits: bits) }
}

/// Bits read most significant first, with every read bounds-checked, over a packet's bytes
/// for the length of one decode.
struct BitReader {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Bits not yet read.
    var remaining: Int { bytes.count * 8 - position }

    /// The next `count` bits (at most 32) without consuming them.
    func peek(_ count: Int) throws(AudioDecodeError) -> UInt32 {
        guard count > 0 else { return 0 }
        guard count <= remaining else { throw .truncated }
        var at = position >> 3
        if at + 8 <= bytes.count {
            // The usual case, away from the end: eight bytes at once, the bits wanted shifted to
            // the top and down again (at most 7 + 32 of the 64 are used).
            let word = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
            return UInt32(truncatingIfNeeded: (word << UInt64(position & 7)) >> UInt64(64 - count))
        }
        var value: UInt64 = 0
        let end = (position + count + 7) >> 3
        while at < end {
            value = value << 8 | UInt64(bytes[at])
            at += 1
        }
        let used = (end - (position >> 3)) * 8
        let shift = used - (position & 7) - count
        return UInt32(truncatingIfNeeded: (value >> UInt64(shift)) & ((1 << UInt64(count)) - 1))
    }

    /// Consumes `count` bits (already checked by a `peek`).
    mutating func skip(_ count: Int) { position += count }

    /// Reads `count` bits (at most 32).
    mutating func read(_ count: Int) throws(AudioDecodeError) -> UInt32 {
        let value = try peek(count)
        position += count
        return value
    }
}
