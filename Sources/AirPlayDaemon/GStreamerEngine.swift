import AirPlayHLSGateway
import AirPlayMedia
import AirPlayReceiver
import AirPlayWire
import GStreamerMedia
import Logging

/// The media stack airplayd plays with: GStreamer for URLs, AAC and audio sinks, our own
/// decoder for ALAC. The only place the daemon meets GStreamer.
///
/// What GStreamer can do is asked once, in a child process (`MediaProbe`): the daemon
/// initialises GStreamer itself only when the first session needs a pipeline, so an idle box
/// does not carry GStreamer's registry and plugins.
package struct GStreamerEngine: ReceiverMediaEngine {
    private let probe: MediaProbe
    /// Video players run in a process of their own (`VideoPlayerHost`): a crash in GStreamer or
    /// the media ends that video, not the daemon.
    private let videoPlayers: VideoPlayerHost
    private let logger: Logger

    /// An engine whose capabilities and `sinks` (the configured sink descriptions) are checked
    /// in a child process, or here if the child cannot be run.
    package init(sinks: [String], logger: Logger = Logger(label: "airplayd")) {
        probe = MediaProbe.inChild(sinks: sinks) ?? MediaProbe.here(sinks: sinks)
        videoPlayers = VideoPlayerHost(logger: logger)
        self.logger = logger
    }

    package var versionDescription: String { probe.version }
    package var canPlayURLs: Bool { has("playbin") }
    package var canPlayHLS: Bool { has("hlsdemux") || has("hlsdemux2") }
    package var canDecodeAAC: Bool { has("avdec_aac") }

    package func canDecode(codec: String) -> Bool {
        (VariantPolicy.decoders[codec] ?? []).contains(where: has)
    }

    private func has(_ element: String) -> Bool {
        probe.elements[element] ?? GStreamerRuntime.hasElement(element)
    }

    package func validateSink(_ description: String) throws(MediaError) {
        if probe.checkedSinks.contains(description) {
            if let message = probe.sinkErrors[description] { throw MediaError(code: -2, domain: "airplayd.gstreamer", message: message) }
            return
        }
        try PlaybinPlayer.checkSink(description)
    }

    /// A player in the video player process. playbin's hlsdemux plays the I-frame chunks of
    /// trick play, where playbin3's hlsdemux2 stalls; and progressive media, where playbin3 1.22
    /// can crash on stop (VideoSessions): `classicPlaybin`.
    package func makePlayer(videoSink: String, audioOutput: String, classicPlaybin: Bool, followRedirects: Bool) throws(MediaError) -> any MediaPlayer {
        videoPlayers.makePlayer(PlayerMessage.Setup(videoSink: videoSink, audioOutput: audioOutput, classic: classicPlaybin,
                                                    followRedirects: followRedirects))
    }

    package func makePCMOutput(sink: String, format: PCMFormat) throws(MediaError) -> any PCMOutput {
        try GStreamerPCMOutput(sink: sink, format: format)
    }

    package var raopDecoders: any RAOPDecoderFactory { NativeAndGStreamerDecoders(canDecodeAAC: canDecodeAAC, logger: logger) }
}

/// The decoders airplayd plays RAOP with: ALAC in Swift (no pipeline, bit-exact with FFmpeg),
/// AAC-LC and AAC-ELD through GStreamer's `avdec_aac` in a process of its own per stream
/// (`ChildAudioDecoder`).
struct NativeAndGStreamerDecoders: RAOPDecoderFactory {
    /// Whether `avdec_aac` is installed (from the probe: answering ANNOUNCE builds nothing).
    let canDecodeAAC: Bool
    /// Where a decoder process says it ended.
    let logger: Logger

    func validate(_ stream: RAOPStreamDescription) throws(AudioDecodeError) {
        switch stream.codec {
        case .pcm:
            return
        case .alac(let fmtp):
            _ = try ALACDecoder.Configuration(fmtp: fmtp)
        case .aacLC, .aacELD:
            // A missing AudioSpecificConfig is the receiver's 400 before this is asked.
            guard canDecodeAAC else { throw .unsupported("no AAC decoder: install gstreamer1.0-libav") }
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
                return try ChildAudioDecoder(stream: ChildAudioDecoder.Stream(config: config, sampleRate: stream.sampleRate, channels: stream.channels),
                                             logger: logger)
            } catch {
                throw .unsupported(error.message)
            }
        }
    }
}

/// The video player process's entry (`airplayd --video-player`, started by the daemon).
package enum VideoPlayerProcess {
    /// Serves the daemon's players until it goes away.
    package static func run() -> Never { VideoPlayerChild.run() }
}

/// The audio decoder process's entry (`airplayd --audio-decoder`, started by the daemon).
package enum AudioDecoderProcess {
    /// Decodes one stream's packets for the daemon until it goes away.
    package static func run() -> Never { AudioDecoderChild.run() }
}
