import AirPlayMedia
internal import CGStreamer

/// AAC-LC for AirPlay 2's buffered mode, the codec Apple's senders use for music: interleaved
/// 16-bit stereo in, raw access units (no ADTS) of 1024 frames out, through GStreamer's
/// `voaacenc` (VisualOn's encoder, gst-plugins-bad), else `avenc_aac` (FFmpeg's). VisualOn's
/// first: FFmpeg's native encoder swings a steady tone's level by ±15 % block to block even at
/// 256 kb/s (measured: RMS 6000-8500 for an 8485 tone), VisualOn's holds it within 1 %.
///
/// An AAC encoder holds frames back (its look-ahead and the 1024 frames of priming every
/// decoder drops, or here plays as a moment of silence): `encode` returns what has come out so
/// far, and `finish` the rest. Calls come from one thread (the streamer's).
public final class GStreamerAACEncoder: @unchecked Sendable {
    /// Frames in one access unit.
    public static let framesPerPacket = 1024

    private let pipeline: GStreamerAppPipeline
    private let format: PCMFormat
    private var pushed = 0
    private var pulled = 0

    /// An encoder for 16-bit stereo at 44100 or 48000 Hz, at `bitRate` bits a second.
    public init(format: PCMFormat, bitRate: Int = 256_000) throws(MediaError) {
        guard format.bitsPerSample == 16, format.channels == 2, [44100, 48000].contains(format.sampleRate) else {
            throw MediaError(code: -7, domain: "airplay.aac", message: "AAC-LC is sent from 16-bit stereo at 44.1 or 48 kHz, not \(format)")
        }
        GStreamerRuntime.initialize()
        guard let element = ["voaacenc", "avenc_aac"].first(where: GStreamerRuntime.hasElement) else {
            throw MediaError(code: -7, domain: "airplay.aac", message: "no AAC encoder: install gstreamer1.0-plugins-bad or gstreamer1.0-libav")
        }
        // avenc_aac takes float samples, which audioconvert makes exactly; voaacenc takes these.
        let launch = "appsrc name=in format=time caps=audio/x-raw,format=S16LE,layout=interleaved,rate=\(format.sampleRate),channels=2 "
            + "! audioconvert ! \(element) bitrate=\(bitRate) ! audio/mpeg,mpegversion=4,stream-format=raw ! appsink name=out sync=false"
        pipeline = try GStreamerAppPipeline(launch: launch, domain: "airplay.aac")
        self.format = format
    }

    /// The AudioSpecificConfig of the stream: AAC-LC, the rate's index, 2 channels.
    public var audioSpecificConfig: [UInt8] { format.sampleRate == 48000 ? [0x11, 0x90] : [0x12, 0x10] }

    /// Takes up to 1024 frames (a short last chunk is padded with silence) and returns the
    /// access units ready: none at first, then about one per call.
    public func encode(_ samples: [Int32]) -> [[UInt8]] {
        var chunk = samples
        if chunk.count < 2 * Self.framesPerPacket { chunk += [Int32](repeating: 0, count: 2 * Self.framesPerPacket - chunk.count) }
        // Stamped on a continuous timeline: unstamped buffers are discontinuities to an encoder.
        let duration = UInt64(Self.framesPerPacket) * 1_000_000_000 / UInt64(format.sampleRate)
        let time = UInt64(pushed) * UInt64(Self.framesPerPacket) * 1_000_000_000 / UInt64(format.sampleRate)
        pipeline.push(format.littleEndianBytes(chunk), stamp: (time, duration))
        pushed += 1
        var units: [[UInt8]] = []
        // Wait for what must have come out by now (the encoder keeps at most two back), then
        // take whatever else is ready.
        while let unit = pull(timeout: pulled + 2 < pushed ? 1_000_000_000 : 0) { units.append(unit) }
        return units
    }

    /// Ends the stream and returns the access units still held.
    public func finish() -> [[UInt8]] {
        pipeline.endOfStream()
        var units: [[UInt8]] = []
        for _ in 0..<16 {
            guard let unit = pull(timeout: 1_000_000_000) else { break }
            units.append(unit)
        }
        return units
    }

    private func pull(timeout: UInt64) -> [UInt8]? {
        guard let unit = pipeline.pull(capacity: 8192, timeout: timeout) else { return nil }
        pulled += 1
        return unit
    }
}

extension GStreamerAACEncoder: AudioEncoder {
    /// Frames in one access unit (1024).
    public var framesPerPacket: Int { Self.framesPerPacket }

    /// Makes AAC-LC encoders at 256 kb/s: what `airplay` hands the sender for `--codec aac`.
    public static let factory: AudioEncoderFactory = { format throws(MediaError) in try GStreamerAACEncoder(format: format) }
}
