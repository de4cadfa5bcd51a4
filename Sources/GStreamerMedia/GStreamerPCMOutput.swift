import AirPlayMedia
internal import CGStreamer
import Dispatch
import Synchronization

/// Received audio played on a GStreamer sink (`autoaudiosink`, `alsasink device=hw:0`,
/// `pulsesink`, `pipewiresink`): a live app source in the stream's own format (S16LE or S24LE at
/// its rate), so a sink that takes 24-bit or 48 kHz audio gets it untouched; `audioconvert` and
/// `audioresample` act only where the sink's caps differ. Buffers are stamped when pushed; the
/// playout pushes them when due.
public final class GStreamerPCMOutput: PCMOutput, @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let source: UnsafeMutablePointer<GstElement>
    private let latency = Mutex<(value: Double?, askedAt: Double)>((nil, -10))
    private let format: PCMFormat

    /// Builds and starts the pipeline; throws when the sink description does not parse.
    public init(sink description: String, format: PCMFormat = .cd) throws(MediaError) {
        GStreamerRuntime.initialize()
        self.format = format
        let launch = "appsrc name=raop format=time is-live=true do-timestamp=true "
            + "caps=audio/x-raw,format=\(format.gstreamerName),layout=interleaved,rate=\(format.sampleRate),channels=\(format.channels) "
            + "! queue max-size-time=2000000000 ! audioconvert ! audioresample ! \(description)"
        let built: (pipeline: UnsafeMutablePointer<GstElement>, elements: [UnsafeMutablePointer<GstElement>])
        do {
            built = try GStreamerRuntime.launch(launch, named: ["raop"], domain: "airplayd.gstreamer")
        } catch {
            throw MediaError(code: error.code, domain: error.domain, message: "audio output \"\(description)\": \(error.message)")
        }
        let (element, found) = (built.pipeline, built.elements[0])
        pipeline = element
        source = found
        if gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE {
            // Every stored property is set, so `deinit` runs on this throw and releases them.
            throw MediaError(code: -4, domain: "airplayd.gstreamer", message: "audio output \"\(description)\" refused to start")
        }
    }

    /// Pushes samples as one buffer, in the source's format.
    public func write(_ samples: [Int32]) {
        format.littleEndianBytes(samples).withUnsafeBytes { raw in _ = cairplay_push_samples(source, raw.baseAddress, gsize(raw.count)) }
    }

    /// The pipeline's latency, asked once, on the first call (from the playout, outside its
    /// lock). A sink that has not prerolled yet answers 0: the schedule then ignores the sink's
    /// latency (a few tens of milliseconds) rather than moving mid-stream when it learns it.
    public var presentationDelay: Double {
        latency.withLock { state in
            if let value = state.value { return value }
            let nanoseconds = cairplay_query_latency(pipeline)
            state.value = nanoseconds > 0 ? Double(nanoseconds) / 1e9 : 0
            return state.value!
        }
    }

    /// Stops the pipeline.
    public func close() {
        gst_element_set_state(pipeline, GST_STATE_NULL)
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(source))
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }
}
