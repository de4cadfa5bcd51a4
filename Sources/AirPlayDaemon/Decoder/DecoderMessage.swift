/// What airplayd and its audio decoder process say to each other (`ChildAudioDecoder`,
/// `AudioDecoderChild`), one message per datagram: a tag byte, then the fields, integers
/// big-endian, samples as 32-bit little-endian. One codec both ways; anything out of bounds
/// reads as nil (the child's answers are as untrusted as the media it decoded).
enum DecoderMessage: Hashable, Sendable {
    /// The stream to decode (first, once): AAC with its AudioSpecificConfig.
    case configure(config: [UInt8], sampleRate: Int, channels: Int)
    /// One compressed packet, numbered by the daemon.
    case packet(sequence: UInt32, bytes: [UInt8])
    /// The child's answer to `configure`: nil when it decodes, else why not.
    case ready(error: String?)
    /// A packet's frames, interleaved by channel.
    case samples(sequence: UInt32, [Int32])
    /// A packet that gave nothing, and why.
    case failed(sequence: UInt32, reason: String)

    /// The largest packet sent (a RAOP packet is at most a datagram: far less).
    static let maximumPacketBytes = 1 << 16
    /// The most samples an answer carries: 2048 frames of 8 channels.
    static let maximumSamples = 2048 * 8
    /// The largest datagram either side reads.
    static let maximumBytes = 5 + maximumPacketBytes
    /// The longest AudioSpecificConfig and reason taken.
    static let maximumConfigBytes = 64
    static let maximumReasonBytes = 512

    private enum Tag: UInt8 {
        case configure = 1, packet, ready, samples, failed
    }

    /// The datagram sent.
    var bytes: [UInt8] {
        switch self {
        case .configure(let config, let sampleRate, let channels):
            return [Tag.configure.rawValue] + Self.be32(UInt32(truncatingIfNeeded: sampleRate)) + [UInt8(truncatingIfNeeded: channels)]
                + config.prefix(Self.maximumConfigBytes)
        case .packet(let sequence, let bytes):
            return [Tag.packet.rawValue] + Self.be32(sequence) + bytes.prefix(Self.maximumPacketBytes)
        case .ready(let error):
            return [Tag.ready.rawValue] + Array((error ?? "").utf8.prefix(Self.maximumReasonBytes))
        case .samples(let sequence, let samples):
            var out = [Tag.samples.rawValue] + Self.be32(sequence)
            out.reserveCapacity(5 + 4 * min(samples.count, Self.maximumSamples))
            for sample in samples.prefix(Self.maximumSamples) {
                withUnsafeBytes(of: sample.littleEndian) { out.append(contentsOf: $0) }
            }
            return out
        case .failed(let sequence, let reason):
            return [Tag.failed.rawValue] + Self.be32(sequence) + Array(reason.utf8.prefix(Self.maximumReasonBytes))
        }
    }

    /// Reads a datagram; nil when it is not one of these or breaks a bound.
    init?(bytes: [UInt8]) {
        guard let first = bytes.first, let tag = Tag(rawValue: first), bytes.count <= Self.maximumBytes else { return nil }
        let body = bytes.dropFirst()
        switch tag {
        case .configure:
            guard body.count >= 5, body.count - 5 <= Self.maximumConfigBytes else { return nil }
            let sampleRate = Int(Self.readBE32(body))
            let channels = Int(body[body.startIndex + 4])
            guard (8000...192_000).contains(sampleRate), (1...8).contains(channels) else { return nil }
            self = .configure(config: Array(body.dropFirst(5)), sampleRate: sampleRate, channels: channels)
        case .packet:
            guard body.count >= 4 else { return nil }
            self = .packet(sequence: Self.readBE32(body), bytes: Array(body.dropFirst(4)))
        case .ready:
            guard body.count <= Self.maximumReasonBytes else { return nil }
            self = .ready(error: body.isEmpty ? nil : String(decoding: body, as: UTF8.self))
        case .samples:
            guard body.count >= 4, (body.count - 4) % 4 == 0, (body.count - 4) / 4 <= Self.maximumSamples else { return nil }
            let payload = Array(body.dropFirst(4))
            let samples = [Int32](unsafeUninitializedCapacity: payload.count / 4) { buffer, written in
                payload.withUnsafeBytes { raw in
                    for index in 0..<(payload.count / 4) {
                        buffer[index] = Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * index, as: Int32.self))
                    }
                }
                written = payload.count / 4
            }
            self = .samples(sequence: Self.readBE32(body), samples)
        case .failed:
            guard body.count >= 4, body.count - 4 <= Self.maximumReasonBytes else { return nil }
            self = .failed(sequence: Self.readBE32(body), reason: String(decoding: body.dropFirst(4), as: UTF8.self))
        }
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func readBE32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        let start = bytes.startIndex
        return UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
    }
}
