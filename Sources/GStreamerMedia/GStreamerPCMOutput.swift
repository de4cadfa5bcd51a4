import AirPlayMedia
internal import CGStreamer
import Dispatch
import Synchronization
import LinuxIO

/// Received audio played on a GStreamer sink (`autoaudiosink`, `alsasink device=hw:0`,
/// `pulsesink`, `pipewiresink`): a live app source in the stream's own format (S16LE or S24LE at
/// its rate), so a sink that takes 24-bit or 48 kHz audio gets it untouched; `audioconvert` and
/// `audioresample` act only where the sink's caps differ.
///
/// The sink's own clock is followed, as a sound card's is (`clockReading`): an audio sink is
/// the pipeline's clock, counting the samples its card played, and the buffers carry contiguous
/// timestamps from the first write on, so the sink plays them back to back at its card's pace,
/// never resampling or skipping to realign with another clock. What the card holds is the
/// written audio's end less the running time now and the pipeline's latency; the playout keeps
/// it about `lead` ahead and inserts or removes single frames to stay on the sender's timeline.
/// A sink left without audio (a pause, a stall) starts a new run of timestamps when written
/// again, counted as a restart.
public final class GStreamerPCMOutput: PCMOutput, @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let source: UnsafeMutablePointer<GstElement>
    private let latency = Mutex<(value: Double?, askedAt: Double)>((nil, -10))
    private let format: PCMFormat
    /// The run of timestamps: the first frame's running time, frames written since, restarts.
    /// `promised`: the running time a reading said a run's first frame would start at (the
    /// playout places that frame by it, so the write that follows keeps the promise).
    private let run = Mutex<(start: Int?, written: Int, restarts: Int, promised: Int?)>((nil, 0, 0, nil))
    /// Seconds of audio the sink is kept holding: at least what an audio sink's ring buffer
    /// holds, and 50 ms more.
    public let lead: Double
    /// How far ahead of the running time a run's first buffer is stamped, so it reaches the sink
    /// in time to be played whole.
    static let startMargin = 20_000_000

    /// Builds and starts the pipeline; throws when the sink description does not parse.
    public init(sink description: String, format: PCMFormat = .cd, lead: Double = 0.1) throws(MediaError) {
        GStreamerRuntime.initialize()
        self.format = format
        // Not live for an audio sink: the pipeline prerolls on the first buffer and then takes the
        // sink's own clock (a live source would leave it on the system clock, the sink slaving
        // its card to it by skipping or resampling).
        let launch = "appsrc name=raop format=time is-live=false do-timestamp=false "
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
        // An audio sink (alsasink, pulsesink) plays on its card's clock, which the pipeline takes
        // once it prerolled on the first buffer; its card starts once its ring buffer is full,
        // which the lead covers. Any other sink (a synced filesink) has no clock of its own: the
        // source is live, so the pipeline runs on the system clock from the start and a run's
        // first buffer is stamped exactly.
        let ringBuffer = Double(cairplay_sink_buffer_time(element)) / 1e6
        self.lead = max(lead, ringBuffer > 0 ? ringBuffer + 0.05 : 0)
        if ringBuffer == 0 {
            cairplay_set_bool(UnsafeMutableRawPointer(found), "is-live", 1)
            // Its latency fixed and known from the start (it would be learnt only once the
            // first buffer, stamped without it, reached the sink).
            gst_pipeline_set_latency(UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstPipeline.self), 0)
            latency.withLock { $0.value = 0 }
        }
        if gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE {
            // Every stored property is set, so `deinit` runs on this throw and releases them.
            throw MediaError(code: -4, domain: "airplayd.gstreamer", message: "audio output \"\(description)\" refused to start")
        }
    }

    /// Pushes samples as one buffer, in the source's format, stamped right after the last (a
    /// run's first buffer, or the first after the sink ran dry, a moment ahead of now).
    public func write(_ samples: [Int32]) {
        let frames = samples.count / max(1, format.channels)
        let rate = format.sampleRate
        let latency = Int(presentationDelay * 1e9)
        let stamp = run.withLock { run -> (pts: Int, duration: Int) in
            let now: Int = cairplay_running_time(pipeline)
            if let start = run.start {
                let next: Int = start + Self.nanoseconds(run.written, rate: rate)
                if now >= 0, next + latency < now {
                    // Heard by now if it had come: the sink ran dry. A new run starts.
                    (run.start, run.written) = (now + Self.startMargin, 0)
                    run.restarts += 1
                }
            } else if let promised = run.promised, promised > now {
                run.start = promised
            } else {
                run.start = max(0, now) + Self.startMargin
            }
            let start: Int = run.start!
            let pts: Int = start + Self.nanoseconds(run.written, rate: rate)
            run.written += frames
            let end: Int = start + Self.nanoseconds(run.written, rate: rate)
            return (pts, end - pts)
        }
        format.littleEndianBytes(samples).withUnsafeBytes { raw in
            _ = cairplay_push_samples_at(source, raw.baseAddress, gsize(raw.count), guint64(stamp.pts), guint64(stamp.duration))
        }
    }

    /// The duration of `frames` at `rate`, in nanoseconds, exact and without overflow for years.
    static func nanoseconds(_ frames: Int, rate: Int) -> Int {
        frames / rate * 1_000_000_000 + frames % rate * 1_000_000_000 / rate
    }

    /// The sink holds `lead` seconds ahead: the playout's write-ahead.
    public var writeAhead: Double { lead }

    /// What the sink holds now: the written audio's end less the running time and the latency
    /// (before the first write, what a first buffer would wait: the start margin and latency).
    public func clockReading() -> OutputClockReading? {
        guard let (time, now) = SystemClock().tightlyTimed({ () -> Int? in cairplay_running_time(pipeline) }) else { return nil }
        let latency = Int(presentationDelay * 1e9), rate = Double(format.sampleRate)
        return run.withLock { run in
            // Not playing yet (it prerolls on the first buffer): what is written now waits the
            // margin, after what was written.
            guard now >= 0 else {
                let waiting = Int(Double(Self.startMargin) / 1e9 * rate)
                return OutputClockReading(time: time, writtenFrames: 0, queuedFrames: run.written + waiting, restarts: run.restarts)
            }
            guard let start = run.start else {
                run.promised = now + Self.startMargin
                let waiting: Int = Self.startMargin + latency
                return OutputClockReading(time: time, writtenFrames: 0, queuedFrames: Int(Double(waiting) / 1e9 * rate), restarts: run.restarts)
            }
            let end: Int = start + Self.nanoseconds(run.written, rate: format.sampleRate)
            let ahead: Int = end + latency - now
            let queued = max(0, Int(Double(ahead) / 1e9 * rate))
            // More queued than written: the sink has not begun to play (the wait before a run's
            // first frame), which the reading says as it is.
            return OutputClockReading(time: time, writtenFrames: run.written, queuedFrames: queued, restarts: run.restarts)
        }
    }

    /// The pipeline's latency (what the sink adds between a buffer's time and its playing),
    /// asked until the pipeline answers, then kept: a sink that learned it later must not move
    /// the timestamps mid-run.
    public var presentationDelay: Double {
        latency.withLock { state in
            if let value = state.value { return value }
            let nanoseconds = cairplay_query_latency(pipeline)
            guard nanoseconds > 0 else { return 0 }
            state.value = Double(nanoseconds) / 1e9
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
