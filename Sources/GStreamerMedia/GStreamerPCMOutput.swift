import AirPlayMedia
import CGStreamer
import Synchronization

/// Received audio played on a GStreamer sink (`autoaudiosink`, `alsasink device=hw:0`,
/// `pulsesink`, `pipewiresink`): a live app source, converted and resampled for the sink.
/// Buffers are stamped when pushed; the playout pushes them when due.
public final class GStreamerPCMOutput: PCMOutput, @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let source: UnsafeMutablePointer<GstElement>
    private let latency = Mutex<Double?>(nil)

    /// Builds and starts the pipeline; throws when the sink description does not parse.
    public init(sink description: String, sampleRate: Int = 44100, channels: Int = 2) throws(MediaError) {
        GStreamerRuntime.initialize()
        let launch = "appsrc name=raop format=time is-live=true do-timestamp=true "
            + "caps=audio/x-raw,format=S16LE,layout=interleaved,rate=\(sampleRate),channels=\(channels) "
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
            gst_object_unref(UnsafeMutableRawPointer(source))
            gst_object_unref(UnsafeMutableRawPointer(pipeline))
            throw MediaError(code: -4, domain: "airplayd.gstreamer", message: "audio output \"\(description)\" refused to start")
        }
    }

    /// Pushes samples as one buffer.
    public func write(_ samples: [Int16]) {
        samples.withUnsafeBytes { raw in _ = cairplay_push_samples(source, raw.baseAddress, gsize(raw.count)) }
    }

    /// The pipeline's latency, asked once it has settled (a live sink knows it after its first buffers).
    public var presentationDelay: Double {
        latency.withLock { cached in
            if let cached { return cached }
            let nanoseconds = cairplay_query_latency(pipeline)
            guard nanoseconds >= 0 else { return 0 }
            cached = Double(nanoseconds) / 1e9
            return cached!
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
