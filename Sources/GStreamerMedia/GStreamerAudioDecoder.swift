import AirPlayMedia
internal import CGStreamer

/// Decodes compressed packets (AAC to 16 bits; ALAC, for cross-checks, at its own depth) to
/// interleaved samples, one packet in, its frames out, through GStreamer's decoders (`avdec_aac`, `avdec_alac` from gst-libav).
///
/// Building the pipeline and each `decode` wait on GStreamer's threads: call them from a
/// session's decode queue, never from an event loop. Calls are serialised by that queue.
public final class GStreamerAudioDecoder: AudioDecoder, @unchecked Sendable {
    private let pipeline: GStreamerAppPipeline
    private let maximumBytes: Int
    private let format: PCMFormat

    /// A decoder for ALAC with the stream's `fmtp` parameters (frame length, bit depth, rice
    /// parameters, channels, max run, max frame bytes, average bit rate, sample rate).
    public convenience init(alacFmtp fmtp: [Int]) throws(MediaError) {
        guard fmtp.count >= 11, [16, 24].contains(fmtp[2]) else {
            throw MediaError(code: -7, domain: "airplayd.alac", message: "ALAC needs 11 fmtp values and 16- or 24-bit samples")
        }
        GStreamerRuntime.initialize()
        guard GStreamerRuntime.hasElement("avdec_alac") else {
            throw MediaError(code: -7, domain: "airplayd.alac", message: "no ALAC decoder: install gstreamer1.0-libav")
        }
        let cookie = Self.magicCookie(fmtp)
        let hex = cookie.map(Self.hexByte).joined()
        try self.init(caps: "audio/x-alac,rate=\(fmtp[10]),channels=\(fmtp[6]),codec_data=(buffer)\(hex)", decoder: "avdec_alac",
                      maximumFrames: fmtp[0], format: PCMFormat(sampleRate: fmtp[10], channels: fmtp[6], bitsPerSample: fmtp[2]))
    }

    /// A byte as two lower-case hex digits, as GStreamer caps spell `codec_data`.
    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    /// A decoder for AAC (LC or ELD) with the AudioSpecificConfig from the fmtp's `config=`.
    public convenience init(aacConfig config: [UInt8], sampleRate: Int, channels: Int) throws(MediaError) {
        GStreamerRuntime.initialize()
        guard GStreamerRuntime.hasElement("avdec_aac") else {
            throw MediaError(code: -7, domain: "airplayd.aac", message: "no AAC decoder: install gstreamer1.0-libav")
        }
        let hex = config.map(Self.hexByte).joined()
        try self.init(caps: "audio/mpeg,mpegversion=4,stream-format=raw,rate=\(sampleRate),channels=\(channels),codec_data=(buffer)\(hex)",
                      decoder: "avdec_aac", maximumFrames: 2048,
                      format: PCMFormat(sampleRate: sampleRate, channels: channels, bitsPerSample: 16))
    }

    private init(caps: String, decoder: String, maximumFrames: Int, format: PCMFormat) throws(MediaError) {
        // No dithering: the conversion to the output depth must be deterministic.
        let launch = "appsrc name=in format=time caps=\(caps) ! \(decoder) ! audioconvert dithering=none noise-shaping=none "
            + "! audio/x-raw,format=\(format.gstreamerName),layout=interleaved ! appsink name=out sync=false"
        pipeline = try GStreamerAppPipeline(launch: launch, domain: "airplayd.decoder")
        maximumBytes = max(1, maximumFrames) * format.channels * format.bytesPerSample
        self.format = format
    }

    /// The decoded samples of one packet; throws `noOutput` when nothing comes out in 200 ms.
    public func decode(_ packet: [UInt8]) throws(AudioDecodeError) -> [Int32] {
        let samples = decodeOrEmpty(packet)
        guard !samples.isEmpty else { throw .noOutput }
        return samples
    }

    /// The decoded samples of one packet; empty when the packet does not decode in time.
    public func decodeOrEmpty(_ packet: [UInt8]) -> [Int32] {
        pipeline.push(packet)
        guard let bytes = pipeline.pull(capacity: maximumBytes, timeout: 200_000_000) else { return [] }
        return format.samples(littleEndian: bytes)
    }

    /// The ALAC "magic cookie" decoders take: an `alac` atom (size, tag, version) holding the
    /// 24-byte ALACSpecificConfig built from the SDP's fmtp values.
    public static func magicCookie(_ fmtp: [Int]) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian, Array.init) }
        func be16(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian, Array.init) }
        let config = be32(fmtp[0]) + [UInt8(fmtp[1] & 0xFF), UInt8(fmtp[2] & 0xFF), UInt8(fmtp[3] & 0xFF),
                                     UInt8(fmtp[4] & 0xFF), UInt8(fmtp[5] & 0xFF), UInt8(fmtp[6] & 0xFF)]
            + be16(fmtp[7]) + be32(fmtp[8]) + be32(fmtp[9]) + be32(fmtp[10])
        return be32(12 + config.count) + Array("alac".utf8) + [0, 0, 0, 0] + config
    }
}
