import AirPlayMedia
import CGStreamer

/// Decodes any file GStreamer can read (WAV, FLAC, MP3, M4A/AAC, Ogg) to interleaved S16LE
/// PCM at 44.1 kHz stereo, the format RAOP receivers accept, as fast as it is pulled.
public final class GStreamerPCMSource: @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let sink: UnsafeMutablePointer<GstElement>
    private var pending: [Int16] = []
    private var finished = false

    /// Opens a file; throws when GStreamer cannot build the pipeline or the file does not decode.
    public init(path: String) throws(MediaError) {
        GStreamerRuntime.initialize()
        let escaped = path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        let launch = "filesrc location=\"\(escaped)\" ! decodebin ! audioconvert dithering=none ! audioresample "
            + "! audio/x-raw,format=S16LE,layout=interleaved,rate=44100,channels=2 ! appsink name=out sync=false max-buffers=64"
        let built = try GStreamerRuntime.launch(launch, named: ["out"], domain: "airplay.source")
        let (element, sink) = (built.pipeline, built.elements[0])
        pipeline = element
        self.sink = sink
        if gst_element_set_state(pipeline, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            throw MediaError(code: -8, domain: "airplay.source", message: "\(path) cannot be read")
        }
        // Wait for the preroll: a file that is not audio fails here instead of mid-stream.
        var state = GST_STATE_NULL
        let result = gst_element_get_state(pipeline, &state, nil, 10_000_000_000)
        guard result != GST_STATE_CHANGE_FAILURE, state == GST_STATE_PAUSED else {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            throw MediaError(code: -8, domain: "airplay.source", message: "\(path) is not audio GStreamer can decode")
        }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(sink))
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }

    /// The next `frames` stereo frames; fewer at the end of the file, empty after it.
    public func read(frames: Int) -> [Int16] {
        while pending.count < frames * 2 && !finished {
            var chunk = [Int16](repeating: 0, count: 131_072)
            let count = chunk.withUnsafeMutableBytes { raw in
                cairplay_pull_bytes(sink, raw.baseAddress, gsize(raw.count), 5_000_000_000)
            }
            if count <= 0 {
                finished = true
            } else {
                pending += chunk.prefix(Int(count) / 2)
            }
        }
        let taken = Array(pending.prefix(frames * 2))
        pending.removeFirst(taken.count)
        return taken
    }
}
