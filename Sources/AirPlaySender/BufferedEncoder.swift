import AirPlayMedia

/// The codec of a buffered stream, as `airplay stream --codec` names it.
public enum BufferedCodec: String, Sendable, CaseIterable {
    /// Apple Lossless: bit-exact at the file's depth and rate (16 or 24 bits, 44.1 or 48 kHz).
    case alac
    /// AAC-LC at 256 kb/s: what Apple's senders use for music, 16-bit only.
    case aac
}

/// What a buffered stream's packets are made with: samples in, payloads out, each with the
/// frames it carries (its RTP time advances by that much).
protocol BufferedEncoder: AnyObject {
    /// Frames read for each call of `encode`.
    var framesPerPacket: Int { get }
    /// The packets ready after these samples (an AAC encoder holds a few back).
    func encode(_ samples: [Int32]) -> [(payload: [UInt8], frames: Int)]
    /// The packets still held once the source has ended.
    func finish() -> [(payload: [UInt8], frames: Int)]
}

/// ALAC, one frame per packet of up to 352 frames, nothing held back.
final class ALACBufferedEncoder: BufferedEncoder {
    private let alac: ALACEncoder
    let framesPerPacket = ALACEncoder.framesPerPacket

    init(format: PCMFormat) { alac = ALACEncoder(bitDepth: format.bitsPerSample, sampleRate: format.sampleRate) }

    func encode(_ samples: [Int32]) -> [(payload: [UInt8], frames: Int)] { [(alac.encode(samples), samples.count / 2)] }
    func finish() -> [(payload: [UInt8], frames: Int)] { [] }
}

/// AAC-LC (or another fixed-size format) through an encoder the caller handed in: access units
/// of its `framesPerPacket` frames (the last padded with silence).
final class PacketBufferedEncoder: BufferedEncoder {
    private let encoder: any AudioEncoder
    let framesPerPacket: Int

    init(_ encoder: any AudioEncoder) {
        self.encoder = encoder
        framesPerPacket = encoder.framesPerPacket
    }

    func encode(_ samples: [Int32]) -> [(payload: [UInt8], frames: Int)] { encoder.encode(samples).map { ($0, framesPerPacket) } }
    func finish() -> [(payload: [UInt8], frames: Int)] { encoder.finish().map { ($0, framesPerPacket) } }
}
