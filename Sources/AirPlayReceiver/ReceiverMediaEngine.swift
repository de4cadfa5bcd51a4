import AirPlayMedia

/// Everything the receiver needs from a media stack, so the receiver library depends on
/// AirPlayMedia's protocols only. `airplayd` (the composition root) wires GStreamer; tests may
/// wire fakes.
public protocol ReceiverMediaEngine: Sendable {
    /// The stack and its version, for the start-up log (`GStreamer 1.22.0`).
    var versionDescription: String { get }
    /// Whether URLs can be played at all (a playbin is installed).
    var canPlayURLs: Bool { get }
    /// Whether HLS can be played (an HLS demuxer is installed).
    var canPlayHLS: Bool { get }
    /// Whether AAC (LC and ELD) RAOP streams can be decoded.
    var canDecodeAAC: Bool { get }
    /// Whether an HLS codec (`avc1`, `hvc1`, `mp4a`, `ac-3`…) can be decoded.
    func canDecode(codec: String) -> Bool
    /// Checks a sink description (`video_sink`, `audio_output`) without playing; the error
    /// says what is wrong with it.
    func validateSink(_ description: String) throws(MediaError)
    /// A player for one `/play`, with the configured sinks; `classicPlaybin` asks for the
    /// player on GStreamer's classic playbin (trick play's I-frame playlists, progressive media); `followRedirects` false makes an HTTP redirect an error
    /// (`video_refuse_local_urls`: a redirect could lead to the box itself).
    func makePlayer(videoSink: String, audioOutput: String, classicPlaybin: Bool, followRedirects: Bool) throws(MediaError) -> any MediaPlayer
    /// The output an audio session plays to, for audio in `format` (`raw:PATH` is handled by
    /// the receiver itself).
    func makePCMOutput(sink: String, format: PCMFormat) throws(MediaError) -> any PCMOutput
    /// The decoders RAOP sessions use.
    var raopDecoders: any RAOPDecoderFactory { get }
}
