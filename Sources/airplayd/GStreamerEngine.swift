import AirPlayMedia
import AirPlayReceiver
import AirPlayWire
import GStreamerMedia

/// The media stack airplayd plays with: GStreamer for URLs, AAC and audio sinks, our own
/// decoder for ALAC. The only place the daemon meets GStreamer.
struct GStreamerEngine: ReceiverMediaEngine {
    var versionDescription: String { GStreamerRuntime.version }
    var canPlayURLs: Bool { GStreamerRuntime.hasElement("playbin") }
    var canPlayHLS: Bool { GStreamerRuntime.hasElement("hlsdemux") || GStreamerRuntime.hasElement("hlsdemux2") }
    var canDecodeAAC: Bool { GStreamerRuntime.hasElement("avdec_aac") }

    func canDecode(codec: String) -> Bool {
        (VariantPolicy.decoders[codec] ?? []).contains(where: GStreamerRuntime.hasElement)
    }

    func validateSink(_ description: String) throws(MediaError) {
        _ = try PlaybinPlayer.makeSink(PlaybinPlayer.audioDescription(description))
    }

    func makePlayer(videoSink: String, audioOutput: String, trickPlay: Bool) throws(MediaError) -> any MediaPlayer {
        var configuration = PlaybinPlayer.Configuration(videoSink: videoSink, audioOutput: audioOutput)
        // playbin's hlsdemux plays the I-frame chunks of trick play, where playbin3's hlsdemux2 stalls.
        if trickPlay { configuration.element = "playbin" }
        return try PlaybinPlayer(configuration: configuration)
    }

    func makePCMOutput(sink: String) throws(MediaError) -> any PCMOutput {
        try GStreamerPCMOutput(sink: sink)
    }

    var raopDecoders: any RAOPDecoderFactory { NativeAndGStreamerDecoders() }
}

/// The decoders airplayd plays RAOP with: ALAC in Swift (no pipeline, bit-exact with FFmpeg),
/// AAC-LC and AAC-ELD through GStreamer's `avdec_aac`.
struct NativeAndGStreamerDecoders: RAOPDecoderFactory {
    func validate(_ stream: RAOPStreamDescription) throws(AudioDecodeError) {
        switch stream.codec {
        case .pcm:
            return
        case .alac(let fmtp):
            _ = try ALACDecoder.Configuration(fmtp: fmtp)
        case .aacLC, .aacELD:
            // A missing AudioSpecificConfig is the receiver's 400 before this is asked.
            guard GStreamerRuntime.hasElement("avdec_aac") else { throw .unsupported("no AAC decoder: install gstreamer1.0-libav") }
        }
    }

    func decodesWithoutWaiting(_ stream: RAOPStreamDescription) -> Bool {
        if case .alac = stream.codec { return true }
        return false
    }

    func makeDecoder(for stream: RAOPStreamDescription) throws(AudioDecodeError) -> (any AudioDecoder)? {
        switch stream.codec {
        case .pcm:
            return nil
        case .alac(let fmtp):
            return try ALACDecoder(fmtp: fmtp)
        case .aacLC, .aacELD:
            guard let config = stream.aacConfig else { throw .malformed("no AudioSpecificConfig") }
            do {
                return try GStreamerAudioDecoder(aacConfig: config, sampleRate: stream.sampleRate, channels: stream.channels)
            } catch {
                throw .unsupported(error.message)
            }
        }
    }
}
