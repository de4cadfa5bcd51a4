import AirPlayMedia

/// A 16-bit source carried as 24-bit: every sample shifted up by 8 bits, which loses nothing.
/// Buffered ALAC goes out at 48 kHz/24-bit, the format Apple's senders use and every AirPlay 2
/// receiver reads (`BufferedFormatCode`); a 48 kHz/16-bit file is widened to it.
public final class WidenedPCMSource: PCMSource {
    private let source: any PCMSource
    /// The source's format at 24 bits.
    public let format: PCMFormat

    /// Widens `source` (16-bit) to 24 bits.
    public init(_ source: any PCMSource) {
        self.source = source
        format = PCMFormat(sampleRate: source.format.sampleRate, channels: source.format.channels, bitsPerSample: 24)
    }

    /// The source's tags.
    public var tags: TrackTags { source.tags }

    /// The next frames, widened.
    public func read(frames: Int) -> [Int32] { source.read(frames: frames).map { $0 << 8 } }
}
