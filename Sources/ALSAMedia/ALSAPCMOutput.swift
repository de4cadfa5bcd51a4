import AirPlayMedia
internal import CALSA
import Glibc
import Synchronization
import LinuxIO

/// Received audio played straight to an ALSA device through alsa-lib (`audio_output =
/// "alsa:DEVICE"`, e.g. `alsa:hw:CARD=Device` or `alsa:default`), as media boxes play.
///
/// The samples reach the card untouched (no conversion, no software volume when the card's own
/// mixer is used): the stream's own depth as S16_LE or S24_3LE, or S32_LE with the samples
/// shifted into its top bits when a card takes only that (lossless). ALSA resamples nothing:
/// a `hw:` device that does not take the stream's rate is refused with a clear error, a
/// `plughw:` or `default` device converts as its configuration says.
///
/// The card's delay is read at every wake-up of the playout (`clockReading`), so the playout
/// follows the card's crystal. The card is kept holding `lead` seconds of audio (written
/// non-blocking, never waiting on the card). An underrun restarts the card (the next write
/// starts it again, on time); a card that disappears (a USB DAC pulled out) is closed and
/// opened again at most once a second, while writes go nowhere: the daemon and its other zones
/// play on. Each of those is said once through `events`.
public final class ALSAPCMOutput: PCMOutput, @unchecked Sendable {
    /// How the card takes samples.
    enum Container: Hashable, Sendable {
        case s16, s24Packed, s32

        var alsaFormat: snd_pcm_format_t {
            switch self {
            case .s16: SND_PCM_FORMAT_S16_LE
            case .s24Packed: SND_PCM_FORMAT_S24_3LE
            case .s32: SND_PCM_FORMAT_S32_LE
            }
        }

        var bytes: Int { self == .s16 ? 2 : self == .s24Packed ? 3 : 4 }
    }

    private struct Device {
        var pcm: OpaquePointer?
        var container: Container = .s16
        var written = 0
        /// When the write that started the card's current run returned (nil while stopped).
        var startTime: Double?
        var restarts = 0
        var lastOpenAttempt = -10.0
        var bytes: [UInt8] = []
        /// The card ran dry since the last write: said when the stream goes on (at a stream's
        /// end it is no news).
        var underran = false
    }

    /// The device name given (`hw:CARD=Device`).
    public let deviceName: String
    private let format: PCMFormat
    private let events: @Sendable (String) -> Void
    private let device: Mutex<Device>
    /// Seconds of audio the card is kept holding: enough that a late wake-up on a busy box never
    /// lets it run dry, little enough that a pause or a new stream is heard soon.
    public let lead: Double
    /// Seconds of buffer asked of the card (at least twice the lead).
    static let bufferSeconds = 0.25

    /// Opens `device` for `format`; throws when alsa-lib is missing, the device does not exist
    /// or refuses the format. `events` hears underruns, disappearances and reopenings.
    public init(device: String, format: PCMFormat = .cd, lead: Double = 0.1,
                events: @escaping @Sendable (String) -> Void = { _ in }) throws(MediaError) {
        deviceName = device
        self.format = format
        self.events = events
        if let missing = cairplay_alsa_load() {
            throw MediaError(code: -1, domain: "airplayd.alsa", message: "libasound.so.2 \(String(cString: missing))")
        }
        let (pcm, container) = try Self.open(device, format: format)
        // A card that gave less buffer than asked is kept at most half full.
        var buffer = snd_pcm_uframes_t(0), period = snd_pcm_uframes_t(0)
        let held = snd_pcm_get_params(pcm, &buffer, &period) >= 0 && buffer > 0 ? Double(buffer) / Double(format.sampleRate) : 2 * lead
        self.lead = min(lead, held / 2)
        self.device = Mutex(Device(pcm: pcm, container: container))
    }

    deinit { close() }

    /// The card is filled up to `lead` ahead: the playout's write-ahead.
    public var writeAhead: Double { lead }

    /// Opens and sets up a device: the stream's own container first, then S32_LE.
    private static func open(_ name: String, format: PCMFormat) throws(MediaError) -> (OpaquePointer, Container) {
        var handle: OpaquePointer?
        var result = snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard result >= 0, let pcm = handle else {
            throw MediaError(code: Int(result), domain: "airplayd.alsa", message: "ALSA device \"\(name)\" cannot be opened: \(errorText(result))")
        }
        let containers: [Container] = format.bytesPerSample == 2 ? [.s16, .s32] : [.s24Packed, .s32]
        var refusal = ""
        for container in containers {
            result = snd_pcm_set_params(pcm, container.alsaFormat, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(format.channels),
                                        UInt32(format.sampleRate), 0, UInt32(bufferSeconds * 1e6))
            if result >= 0 {
                // Start on the first write: the playout writes a run's first frame (after the
                // silence before it) exactly when the card must begin.
                var software: OpaquePointer?
                if snd_pcm_sw_params_malloc(&software) >= 0, let software {
                    if snd_pcm_sw_params_current(pcm, software) >= 0 {
                        _ = snd_pcm_sw_params_set_start_threshold(pcm, software, 1)
                        _ = snd_pcm_sw_params(pcm, software)
                    }
                    snd_pcm_sw_params_free(software)
                }
                return (pcm, container)
            }
            refusal = errorText(result)
        }
        snd_pcm_close(pcm)
        throw MediaError(code: Int(result), domain: "airplayd.alsa",
                         message: "ALSA device \"\(name)\" refuses \(format) (\(refusal)); name a plughw: device to have ALSA convert")
    }

    private static func errorText(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

    /// Writes the samples without waiting: an underrun restarts the card, a full card drops
    /// what it cannot take (the playout never gives more than it holds), a card gone is reopened.
    public func write(_ samples: [Int32]) {
        var report: String?
        device.withLock { device in
            guard let pcm = reopenedIfNeeded(&device, report: &report) else { return }
            if device.underran {
                // Counted when the card is started again: one that ran dry at a stream's end and
                // is never written again did not underrun anything.
                device.underran = false
                device.restarts += 1
                report = "ALSA device \"\(deviceName)\" underran; restarted"
            }
            Self.encode(samples, format: format, as: device.container, into: &device.bytes)
            let frames = samples.count / max(1, format.channels)
            var offset = 0, restarts = 0
            while offset < frames, restarts < 3 {   // a card that underruns at once is not retried forever
                let done = device.bytes.withUnsafeBytes { raw in
                    snd_pcm_writei(pcm, raw.baseAddress! + offset * device.container.bytes * format.channels,
                                   snd_pcm_uframes_t(frames - offset))
                }
                if done > 0 {
                    offset += done
                    device.written += done
                    // The card starts inside the write that gives it its first frame (start
                    // threshold 1): that moment is where its frame 0 left.
                    if device.startTime == nil, snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING { device.startTime = Self.now() }
                } else if done == -Int(EPIPE) || done == -Int(ESTRPIPE), restart(&device, pcm) {
                    restarts += 1
                    report = "ALSA device \"\(deviceName)\" underran; restarted"
                    device.underran = false
                    device.restarts += 1
                } else if done == -Int(EAGAIN) || done == 0 {
                    report = "ALSA device \"\(deviceName)\" was full; \(frames - offset) frames dropped"
                    break
                } else {
                    report = lost(&device, pcm, code: Int32(done))
                    break
                }
            }
        }
        if let report { events(report) }
    }

    /// The card's delay now, and the frames written since it started.
    public func clockReading() -> OutputClockReading? {
        var report: String?
        let reading = device.withLock { device -> OutputClockReading? in
            // A card gone holds nothing: the playout goes on writing in time (into nothing until
            // it is back), so it comes back at the right place in the stream.
            guard let pcm = device.pcm else {
                return Self.holdingNothing(device)
            }
            switch snd_pcm_state(pcm) {
            case SND_PCM_STATE_XRUN:
                if !restart(&device, pcm) {
                    report = lost(&device, pcm, code: -ENODEV)
                    return Self.holdingNothing(device)
                }
            case SND_PCM_STATE_DISCONNECTED:
                report = lost(&device, pcm, code: -ENODEV)
                return Self.holdingNothing(device)
            default:
                break
            }
            var available = snd_pcm_sframes_t(0), delay = snd_pcm_sframes_t(0), result: Int32 = 0
            let (time, _) = SystemClock().tightlyTimed { () -> Bool? in
                result = snd_pcm_avail_delay(pcm, &available, &delay)
                return result < 0 ? nil : true
            } ?? (Self.now(), true)
            if result < 0 {
                if result == -EPIPE || result == -ESTRPIPE, restart(&device, pcm) {
                    return Self.holdingNothing(device)
                }
                report = lost(&device, pcm, code: result)
                return Self.holdingNothing(device)
            }
            // A stopped or just prepared card holds nothing yet, whatever it says.
            let queued = snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING ? max(0, delay) : 0
            return OutputClockReading(time: time, writtenFrames: device.written, queuedFrames: queued,
                                      restarts: device.restarts, startTime: queued > 0 ? device.startTime : nil)
        }
        if let report { events(report) }
        return reading
    }

    /// Closes the device (what it holds is dropped).
    public func close() {
        device.withLock { device in
            if let pcm = device.pcm {
                snd_pcm_drop(pcm)
                snd_pcm_close(pcm)
            }
            device.pcm = nil
            device.lastOpenAttempt = .infinity   // closed for good: never reopened
        }
    }

    /// A reading of a card that holds nothing (gone, or just restarted): what is written now
    /// would start it.
    private static func holdingNothing(_ device: Device) -> OutputClockReading {
        OutputClockReading(time: now(), writtenFrames: 0, queuedFrames: 0, restarts: device.restarts)
    }

    /// Prepares the card again after an underrun; the next write starts it. False when the
    /// card will not be prepared (it is gone).
    private func restart(_ device: inout Device, _ pcm: OpaquePointer) -> Bool {
        guard snd_pcm_prepare(pcm) >= 0 else { return false }
        device.underran = true
        device.written = 0
        device.startTime = nil
        return true
    }

    /// A card that errors otherwise is gone (unplugged, or taken): closed, to be reopened.
    private func lost(_ device: inout Device, _ pcm: OpaquePointer, code: Int32) -> String {
        snd_pcm_close(pcm)
        device.pcm = nil
        device.written = 0
        device.startTime = nil
        device.restarts += 1
        device.lastOpenAttempt = Self.now()
        return "ALSA device \"\(deviceName)\" failed (\(Self.errorText(code))); closed, reopening"
    }

    /// The open device, opening it again (at most once a second) after it was lost.
    private func reopenedIfNeeded(_ device: inout Device, report: inout String?) -> OpaquePointer? {
        if let pcm = device.pcm { return pcm }
        let now = Self.now()
        guard now - device.lastOpenAttempt >= 1 else { return nil }
        device.lastOpenAttempt = now
        do {
            let (pcm, container) = try Self.open(deviceName, format: format)
            (device.pcm, device.container, device.written, device.startTime) = (pcm, container, 0, nil)
            report = "ALSA device \"\(deviceName)\" reopened"
            return pcm
        } catch {
            return nil
        }
    }

    /// Samples as the container's little-endian bytes: the stream's own depth as it is, or
    /// S32_LE with the samples in its top bits.
    static func encode(_ samples: [Int32], format: PCMFormat, as container: Container, into bytes: inout [UInt8]) {
        guard container == .s32 else { return format.writeLittleEndianBytes(samples, into: &bytes) }
        let shift = Int32(32 - format.bytesPerSample * 8)
        if bytes.count != samples.count * 4 { bytes = [UInt8](repeating: 0, count: samples.count * 4) }
        bytes.withUnsafeMutableBytes { out in
            for (index, sample) in samples.enumerated() {
                out.storeBytes(of: (sample << shift).littleEndian, toByteOffset: index * 4, as: Int32.self)
            }
        }
    }

    private static func now() -> Double { SystemClock().now() }
}
