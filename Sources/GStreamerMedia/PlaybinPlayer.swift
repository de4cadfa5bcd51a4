import AirPlayMedia
internal import CGStreamer
import FoundationEssentials
import Dispatch
import Glibc
import Synchronization
import LinuxIO

/// Plays one URL through GStreamer's playbin3 (playbin when 3 is missing), headless or on a display.
///
/// A bus thread per player turns pipeline messages into `MediaStatus` changes; control calls
/// come from any thread. Only http and https sources are ever created: a playlist that points
/// a segment at `file:` or another scheme fails with an error instead of reading the box's files.
/// A load that does not preroll within `loadTimeout` ends in `failed`, never in a hung pipeline.
public final class PlaybinPlayer: MediaPlayer, @unchecked Sendable {
    /// How a player is set up.
    public struct Configuration: Sendable {
        /// A GStreamer sink description for video (`autovideosink`, `kmssink`, `fakesink sync=true`).
        public var videoSink: String
        /// A sink description for audio, or `raw:PATH` for S16LE 44.1 kHz stereo PCM.
        public var audioOutput: String
        /// Seconds a load may take before it fails.
        public var loadTimeout: Double
        /// Seconds of network inactivity before an HTTP source gives up.
        public var networkTimeout: UInt32
        /// Whether HTTP sources follow redirects (false: a redirect fails the load).
        public var followRedirects = true
        /// The playbin element: playbin3 normally; playbin (whose hlsdemux plays the I-frame
        /// chunks of trick play, where hlsdemux2 stalls).
        public var element: String = "playbin3"

        /// A configuration from its parts.
        public init(videoSink: String, audioOutput: String, loadTimeout: Double = 20, networkTimeout: UInt32 = 10) {
            self.videoSink = videoSink
            self.audioOutput = audioOutput
            self.loadTimeout = loadTimeout
            self.networkTimeout = networkTimeout
        }
    }

    /// Source elements allowed to run: HTTP(S) only.
    static let allowedSources: Set<String> = ["souphttpsrc", "curlhttpsrc"]

    private struct Inner {
        var state: MediaState = .idle
        var wantPaused = false
        var pendingSeek: Double?
        /// A rate asked for before the media loaded, applied once it has (trick play starts so).
        var pendingRate: Double?
        var pendingFraction: Double?
        var prerolled = false
        /// A start position was sought after the first preroll; the state waits for that seek.
        var awaitingStartSeek = false
        /// The target of a flushing seek until it settles: positions read meanwhile are meaningless.
        var seekTarget: Double?
        var buffering = false
        var bufferPercent = 100
        var rate: Double = 1
        var error: MediaError?
        var loadDeadline: Double?
        var handlers: [@Sendable (MediaStatus) -> Void] = []
        var running = false
    }

    private let configuration: Configuration
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let inner = Mutex(Inner())
    private let answers = Mutex<PipelineAnswers?>(nil)
    private let busDone = DispatchSemaphore(value: 0)

    /// Builds the pipeline with its sinks; throws when a sink description does not parse.
    public init(configuration: Configuration) throws(MediaError) {
        GStreamerRuntime.initialize()
        self.configuration = configuration
        guard let element = gst_element_factory_make(configuration.element, "airplay-player")
                ?? gst_element_factory_make("playbin3", "airplay-player")
                ?? gst_element_factory_make("playbin", "airplay-player") else {
            throw MediaError(code: -1, domain: "airplayd.gstreamer", message: "no playbin element: install gstreamer1.0-plugins-base")
        }
        pipeline = element
        gst_object_ref_sink(UnsafeMutableRawPointer(element))
        do {
            let video = try Self.makeSink(configuration.videoSink)
            cairplay_set_object(UnsafeMutableRawPointer(pipeline), "video-sink", UnsafeMutableRawPointer(video))
            let audio = try Self.makeSink(Self.audioDescription(configuration.audioOutput))
            cairplay_set_object(UnsafeMutableRawPointer(pipeline), "audio-sink", UnsafeMutableRawPointer(audio))
        } catch {
            gst_object_unref(UnsafeMutableRawPointer(pipeline))
            throw error
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = cairplay_connect_deep_element_added(UnsafeMutableRawPointer(pipeline), { _, _, element, data in
            guard let element, let data else { return }
            Unmanaged<PlaybinPlayer>.fromOpaque(data).takeUnretainedValue().elementAdded(element)
        }, me)
        _ = cairplay_connect_source_setup(UnsafeMutableRawPointer(pipeline), { _, source, data in
            guard let source, let data else { return }
            Unmanaged<PlaybinPlayer>.fromOpaque(data).takeUnretainedValue().sourceSetup(source)
        }, me)
    }

    deinit {
        stopBusThread()
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }

    /// The audio sink description for an `audio_output` setting (`raw:PATH` becomes a paced PCM file sink).
    public static func audioDescription(_ output: String) -> String {
        guard output.hasPrefix("raw:") else { return output }
        let path = String(output.dropFirst(4)).replacing("\"", with: "\\\"")
        return "audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=44100,channels=2 ! filesink location=\"\(path)\" sync=true"
    }

    /// Checks that a sink description (an `audio_output` or `video_sink` setting) builds; the
    /// error names the description.
    public static func checkSink(_ description: String) throws(MediaError) {
        gst_object_unref(UnsafeMutableRawPointer(try makeSink(audioDescription(description))))
    }

    /// Parses a sink description into a bin; the error names the description.
    static func makeSink(_ description: String) throws(MediaError) -> UnsafeMutablePointer<GstElement> {
        GStreamerRuntime.initialize()
        var error: UnsafeMutablePointer<GError>?
        let bin = gst_parse_bin_from_description(description, 1, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
            throw MediaError(code: -2, domain: "airplayd.gstreamer", message: "sink \"\(description)\": \(message)")
        }
        guard let bin else { throw MediaError(code: -2, domain: "airplayd.gstreamer", message: "sink \"\(description)\" is empty") }
        return bin
    }

    // MARK: MediaPlayer

    /// Starts loading; the bus thread takes it from there.
    public func load(url: String, start: StartPosition, paused: Bool) throws(MediaError) {
        forgetAnswers()
        guard let scheme = URL(string: url)?.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            throw MediaError(code: -3, domain: "airplayd.url", message: "only http and https URLs are played")
        }
        inner.withLock {
            $0.state = .loading
            $0.wantPaused = paused
            switch start {
            case .seconds(let seconds):
                $0.pendingSeek = seconds > 0 ? seconds : nil
                $0.pendingFraction = nil
            case .fraction(let fraction):
                $0.pendingSeek = nil
                $0.pendingFraction = fraction > 0 ? min(fraction, 1) : nil
            }
            $0.prerolled = false
            $0.error = nil
            $0.rate = 1
            $0.bufferPercent = 0
            $0.seekTarget = nil
            $0.awaitingStartSeek = false
            $0.loadDeadline = Self.now() + configuration.loadTimeout
        }
        cairplay_set_string(UnsafeMutableRawPointer(pipeline), "uri", url)
        startBusThread()
        // Preroll first; the bus thread seeks and starts playing once the first frame is ready.
        if gst_element_set_state(pipeline, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            fail(MediaError(code: -4, domain: "airplayd.gstreamer", message: "the pipeline refused to start"))
        }
        notify()
    }

    /// Plays at rate 1.
    public func play() {
        forgetAnswers()
        let prerolled = inner.withLock { inner -> Bool in
            inner.wantPaused = false
            return inner.prerolled
        }
        if prerolled, status.rate != 1 { try? setRate(1) }
        if prerolled { gst_element_set_state(pipeline, GST_STATE_PLAYING) }
    }

    /// Pauses.
    public func pause() {
        forgetAnswers()
        inner.withLock { $0.wantPaused = true }
        gst_element_set_state(pipeline, GST_STATE_PAUSED)
    }

    /// The furthest a seek goes, in seconds (about 31 years): a sender may name any position,
    /// a live stream has no duration to bound it, and GStreamer counts nanoseconds in a gint64
    /// (1e10 s of them overflowed it and trapped the daemon).
    public static let furthestSeek = 1e9

    /// Seeks accurately (decoding from the previous keyframe up to the target).
    public func seek(to seconds: Double) throws(MediaError) {
        forgetAnswers()
        let ready = inner.withLock { inner -> Bool in
            if !inner.prerolled { inner.pendingSeek = min(max(0, seconds), Self.furthestSeek) }
            return inner.prerolled
        }
        guard ready else { return }
        var target = min(max(0, seconds), Self.furthestSeek)
        if let duration = currentDuration(), duration.isFinite { target = min(target, duration) }
        let rate = inner.withLock { inner -> Double in
            inner.seekTarget = target
            return inner.rate
        }
        let ok = gst_element_seek(pipeline, rate, GST_FORMAT_TIME,
                                  GstSeekFlags(GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue),
                                  GST_SEEK_TYPE_SET, gint64(target * 1e9), GST_SEEK_TYPE_NONE, -1)
        guard ok != 0 else {
            inner.withLock { $0.seekTarget = nil }
            throw MediaError(code: -5, domain: "airplayd.seek", message: "the media cannot seek to \(target) s")
        }
    }

    /// Changes the rate with a flushing seek at the current position; 0 pauses, 1 plays.
    public func setRate(_ rate: Double) throws(MediaError) {
        forgetAnswers()
        if rate == 0 { pause(); return }
        guard rate.isFinite, abs(rate) <= 32 else {
            throw MediaError(code: -6, domain: "airplayd.rate", message: "rate \(rate) is out of range")
        }
        let (ready, oldRate) = inner.withLock { ($0.prerolled, $0.rate) }
        if !ready {
            // Applied once the media has loaded.
            inner.withLock {
                $0.wantPaused = false
                $0.pendingRate = rate == 1 ? nil : rate
            }
            return
        }
        if rate != oldRate {
            let position = gint64(currentPosition() * 1e9)
            // Fast rates (4x and more) decode key frames only and drop audio, so a modest box
            // keeps up instead of stalling.
            let trick = abs(rate) >= 4
                ? GST_SEEK_FLAG_TRICKMODE.rawValue | GST_SEEK_FLAG_TRICKMODE_KEY_UNITS.rawValue | GST_SEEK_FLAG_TRICKMODE_NO_AUDIO.rawValue
                : GST_SEEK_FLAG_ACCURATE.rawValue
            let flags = GstSeekFlags(GST_SEEK_FLAG_FLUSH.rawValue | trick)
            let ok = rate > 0
                ? gst_element_seek(pipeline, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, position, GST_SEEK_TYPE_NONE, -1)
                : gst_element_seek(pipeline, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, 0, GST_SEEK_TYPE_SET, position)
            guard ok != 0 else {
                throw MediaError(code: -6, domain: "airplayd.rate", message: "this media cannot play at rate \(rate)")
            }
            inner.withLock { $0.rate = rate }
        }
        inner.withLock { $0.wantPaused = false }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
    }

    /// Sets playbin's linear volume.
    public func setVolume(_ volume: Double) {
        cairplay_set_double(UnsafeMutableRawPointer(pipeline), "volume", min(1, max(0, volume)))
    }

    /// Stops and releases the media; the player can load again afterwards.
    public func stop() {
        forgetAnswers()
        stopBusThread()
        gst_element_set_state(pipeline, GST_STATE_NULL)
        let changed = inner.withLock { inner -> Bool in
            defer { inner.state = inner.state == .failed ? .failed : .stopped }
            return inner.state != .stopped && inner.state != .failed
        }
        if changed { notify() }
    }

    /// Registers a state-change handler.
    public func onStateChange(_ handler: @escaping @Sendable (MediaStatus) -> Void) {
        inner.withLock { $0.handlers.append(handler) }
    }

    /// A snapshot from the pipeline: position and duration clamped, ranges from a seeking query.
    public var status: MediaStatus {
        let snapshot = inner.withLock { $0 }
        guard [.loading, .playing, .paused, .ended].contains(snapshot.state) else {
            return MediaStatus(state: snapshot.state, error: snapshot.error)
        }
        let answers = pipelineAnswers(playing: snapshot.state == .playing && !snapshot.buffering ? snapshot.rate : 0)
        let (duration, seekable) = (answers.duration, answers.seekable)
        var seconds = answers.position
        if let duration, duration.isFinite { seconds = min(seconds, duration) }
        if snapshot.state == .ended, let duration, duration.isFinite { seconds = duration }
        let loaded: [TimeRange] = duration.map { [TimeRange(start: 0, duration: $0.isFinite ? $0 : seconds)] } ?? []
        let rate: Double = snapshot.state == .playing && !snapshot.buffering ? snapshot.rate : 0
        return MediaStatus(state: snapshot.state, position: seconds, duration: duration, rate: rate,
                           bufferPercent: snapshot.bufferPercent, loadedRanges: loaded, seekableRanges: seekable,
                           error: snapshot.error)
    }

    // MARK: Bus thread

    /// What the pipeline said of its position, duration and seekable range, and when.
    private struct PipelineAnswers {
        var at: Double
        var position: Double
        var duration: Double?
        var seekable: [TimeRange]
    }

    /// Answers younger than this are reused (the position moved on by the rate): three queries
    /// walk the pipeline under its locks, and 64 senders polling `/playback-info` at once
    /// would otherwise queue behind a streaming thread for each request.
    static let answerReuse = 0.025

    /// The pipeline's answers, queried anew or reused; `playing` is the rate the position
    /// moves at (0 when paused).
    private func pipelineAnswers(playing rate: Double) -> PipelineAnswers {
        let now = Self.now()
        if var reused = answers.withLock({ $0 }), now - reused.at < Self.answerReuse, inner.withLock({ $0.seekTarget == nil }) {
            reused.position += rate * (now - reused.at)
            return reused
        }
        let duration = currentDuration()
        var seekable: [TimeRange] = []
        if let query = gst_query_new_seeking(GST_FORMAT_TIME) {
            if gst_element_query(pipeline, query) != 0 {
                var canSeek: gboolean = 0
                var start: gint64 = 0
                var end: gint64 = 0
                gst_query_parse_seeking(query, nil, &canSeek, &start, &end)
                if canSeek != 0, start >= 0 {
                    let endSeconds = end > 0 ? Double(end) / 1e9 : (duration ?? 0)
                    seekable = [TimeRange(start: Double(start) / 1e9, duration: max(0, endSeconds - Double(start) / 1e9))]
                }
            }
            gst_query_unref(query)
        }
        let fresh = PipelineAnswers(at: now, position: currentPosition(), duration: duration, seekable: seekable)
        answers.withLock { $0 = fresh }
        return fresh
    }

    /// Forgets the pipeline's last answers (a seek, rate or state change makes them stale).
    private func forgetAnswers() { answers.withLock { $0 = nil } }

    /// The position in seconds; while a seek settles, its target (the pipeline reports nothing useful then).
    private func currentPosition() -> Double {
        if let target = inner.withLock({ $0.seekTarget }) { return target }
        var position: gint64 = 0
        guard gst_element_query_position(pipeline, GST_FORMAT_TIME, &position) != 0, position >= 0 else { return 0 }
        return Double(position) / 1e9
    }

    private func currentDuration() -> Double? {
        var duration: gint64 = 0
        guard gst_element_query_duration(pipeline, GST_FORMAT_TIME, &duration) != 0 else { return nil }
        return duration > 0 ? Double(duration) / 1e9 : nil
    }

    private static func now() -> Double { SystemClock().now() }

    private func startBusThread() {
        let alreadyRunning = inner.withLock { inner -> Bool in
            defer { inner.running = true }
            return inner.running
        }
        guard !alreadyRunning else { return }
        DedicatedThread.start(name: "gst-bus") { [self] in
            runBus()
            busDone.signal()
        }
    }

    private func stopBusThread() {
        let wasRunning = inner.withLock { inner -> Bool in
            defer { inner.running = false }
            return inner.running
        }
        if wasRunning { busDone.wait() }
    }

    private func runBus() {
        guard let bus = gst_element_get_bus(pipeline) else { return }
        defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
        let wanted = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue
            | GST_MESSAGE_STATE_CHANGED.rawValue | GST_MESSAGE_BUFFERING.rawValue | GST_MESSAGE_ASYNC_DONE.rawValue
            | GST_MESSAGE_DURATION_CHANGED.rawValue)
        while inner.withLock({ $0.running }) {
            if let message = gst_bus_timed_pop_filtered(bus, 50_000_000, wanted) {
                handle(message)
                gst_message_unref(message)
            }
            let timedOut = inner.withLock { inner -> Bool in
                guard !inner.prerolled, inner.state == .loading, let deadline = inner.loadDeadline else { return false }
                return Self.now() > deadline
            }
            if timedOut {
                fail(MediaError(code: -1001, domain: "airplayd.timeout",
                                message: "the media did not load within \(Int(configuration.loadTimeout)) s"))
            }
        }
    }

    private func handle(_ message: UnsafeMutablePointer<GstMessage>) {
        switch cairplay_message_type(message) {
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            let domain = error.map { String(cString: g_quark_to_string($0.pointee.domain)) } ?? "gstreamer"
            let code = Int(error?.pointee.code ?? 0)
            if let error { g_error_free(error) }
            g_free(debug)
            fail(MediaError(code: -(2000 + code), domain: domain, message: text))
        case GST_MESSAGE_EOS:
            inner.withLock { $0.state = .ended }
            notify()
        case GST_MESSAGE_ASYNC_DONE:
            asyncDone()
        case GST_MESSAGE_BUFFERING:
            var percent: gint = 0
            gst_message_parse_buffering(message, &percent)
            buffering(Int(percent))
        case GST_MESSAGE_STATE_CHANGED:
            guard cairplay_message_source(message) == UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstObject.self) else { return }
            var old = GST_STATE_NULL
            var new = GST_STATE_NULL
            var pending = GST_STATE_NULL
            gst_message_parse_state_changed(message, &old, &new, &pending)
            pipelineStateChanged(new)
        default:
            break
        }
    }

    private func asyncDone() {
        let (firstPreroll, seek, paused) = inner.withLock { inner -> (Bool, Double?, Bool) in
            // The preroll after the start seek is the one that counts as "ready".
            let first = !inner.prerolled || inner.awaitingStartSeek
            inner.awaitingStartSeek = false
            inner.seekTarget = nil
            // Prerolled media has what it needs to start, whether or not the source reports buffering.
            if !inner.buffering { inner.bufferPercent = 100 }
            inner.prerolled = true
            var seek = inner.pendingSeek
            if seek == nil, let fraction = inner.pendingFraction, let duration = currentDuration(), duration.isFinite {
                seek = fraction * duration
            }
            inner.pendingSeek = nil
            inner.pendingFraction = nil
            return (first, seek, inner.wantPaused)
        }
        if let seek, firstPreroll, (try? self.seek(to: seek)) != nil {
            inner.withLock { $0.awaitingStartSeek = true }
            return
        }
        if let seek { try? self.seek(to: seek) }
        if firstPreroll {
            let rate = inner.withLock { inner -> Double? in
                defer { inner.pendingRate = nil }
                return inner.pendingRate
            }
            if paused {
                inner.withLock { $0.state = .paused }
                notify()
            } else if let rate, rate != 1 {
                try? setRate(rate)
            } else {
                gst_element_set_state(pipeline, GST_STATE_PLAYING)
            }
        }
    }

    private func buffering(_ percent: Int) {
        let action = inner.withLock { inner -> GstState? in
            inner.bufferPercent = percent
            guard inner.prerolled, !inner.wantPaused, inner.state != .ended else { return nil }
            if percent < 100, !inner.buffering {
                inner.buffering = true
                return GST_STATE_PAUSED
            }
            if percent >= 100, inner.buffering {
                inner.buffering = false
                return GST_STATE_PLAYING
            }
            return nil
        }
        if let action { gst_element_set_state(pipeline, action) }
    }

    private func pipelineStateChanged(_ new: GstState) {
        let changed = inner.withLock { inner -> Bool in
            let old = inner.state
            switch new {
            case GST_STATE_PLAYING where !inner.awaitingStartSeek:
                inner.state = .playing
            case GST_STATE_PAUSED where inner.prerolled && !inner.awaitingStartSeek && inner.state != .ended:
                inner.state = inner.wantPaused ? .paused : (inner.buffering ? .loading : inner.state)
            default:
                break
            }
            return old != inner.state
        }
        if changed { notify() }
    }

    private func fail(_ error: MediaError) {
        let first = inner.withLock { inner -> Bool in
            guard inner.state != .failed else { return false }
            inner.state = .failed
            inner.error = error
            inner.running = false
            return true
        }
        guard first else { return }
        // Leave the bus thread first (it is the caller or will stop within 50 ms), then tear down.
        DispatchQueue.global().async { [self] in
            gst_element_set_state(pipeline, GST_STATE_NULL)
        }
        notify()
    }

    private func notify() {
        let handlers = inner.withLock { $0.handlers }
        guard !handlers.isEmpty else { return }
        let snapshot = status
        for handler in handlers { handler(snapshot) }
    }

    // MARK: Signals (streaming threads)

    private func elementAdded(_ element: UnsafeMutablePointer<GstElement>) {
        // Only elements that fetch a URI matter; bins such as urisourcebin merely wrap them.
        guard cairplay_is_uri_source(element) != 0,
              let factory = cairplay_element_factory_name(element).map({ String(cString: $0) }) else { return }
        if Self.allowedSources.contains(factory) {
            if !configuration.followRedirects, cairplay_has_property(UnsafeMutableRawPointer(element), "automatic-redirect") != 0 {
                cairplay_set_bool(UnsafeMutableRawPointer(element), "automatic-redirect", 0)
            }
            return
        }
        if cairplay_has_property(UnsafeMutableRawPointer(element), "location") != 0 {
            cairplay_set_string(UnsafeMutableRawPointer(element), "location", "/nonexistent/airplayd-refused")
        }
        fail(MediaError(code: -3, domain: "airplayd.url", message: "refused a \(factory) source: only http and https are fetched"))
    }

    private func sourceSetup(_ source: UnsafeMutablePointer<GstElement>) {
        let object = UnsafeMutableRawPointer(source)
        if cairplay_has_property(object, "timeout") != 0 { cairplay_set_uint(object, "timeout", configuration.networkTimeout) }
        if cairplay_has_property(object, "user-agent") != 0 { cairplay_set_string(object, "user-agent", "airplayd/1.0 AppleCoreMedia/1.0") }
    }
}
