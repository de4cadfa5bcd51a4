import AirPlayMedia
internal import CGStreamer

/// A pipeline run one buffer at a time: fed through an app source named `in`, drained through
/// an app sink named `out` (a decoder, an encoder). It holds the three references and sets the
/// pipeline playing, and to null when it goes.
///
/// `@unchecked Sendable`: GStreamer's app elements are thread-safe; callers push and pull from
/// one thread at a time.
final class GStreamerAppPipeline: @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let source: UnsafeMutablePointer<GstElement>
    private let sink: UnsafeMutablePointer<GstElement>

    /// Builds and starts `launch`, which must name an `appsrc` `in` and an `appsink` `out`.
    init(launch: String, domain: String) throws(MediaError) {
        let built = try GStreamerRuntime.launch(launch, named: ["in", "out"], domain: domain)
        (pipeline, source, sink) = (built.pipeline, built.elements[0], built.elements[1])
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(source))
        gst_object_unref(UnsafeMutableRawPointer(sink))
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }

    /// Pushes bytes as one buffer, stamped with a time and duration (nanoseconds) when given.
    func push(_ bytes: [UInt8], stamp: (time: UInt64, duration: UInt64)? = nil) {
        bytes.withUnsafeBytes { raw in
            if let stamp {
                _ = cairplay_push_samples_at(source, raw.baseAddress, gsize(raw.count), guint64(stamp.time), guint64(stamp.duration))
            } else {
                _ = cairplay_push_samples(source, raw.baseAddress, gsize(raw.count))
            }
        }
    }

    /// The next buffer out (at most `capacity` bytes of it), waiting up to `timeout`
    /// nanoseconds; nil when none came.
    func pull(capacity: Int, timeout: UInt64) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: capacity)
        let count = bytes.withUnsafeMutableBytes { cairplay_pull_bytes(sink, $0.baseAddress, gsize($0.count), GstClockTime(timeout)) }
        return count > 0 ? Array(bytes.prefix(count)) : nil
    }

    /// No more buffers come: the pipeline drains what it holds.
    func endOfStream() {
        _ = cairplay_end_of_stream(source)
    }
}
