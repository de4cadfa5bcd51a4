import AirPlayMedia
internal import CALSA
import Glibc
import Synchronization

/// A sound card's own volume control (`alsa_mixer = "PCM"`): the sender's volume set on the
/// card's mixer element, so the samples reach it bit-perfect (shairport-sync's
/// `mixer_control_name`).
///
/// AirPlay's volume is in dB (0 full, -30 its quietest step, -144 mute). An element that knows
/// its dB scale is set to that many dB, clamped to its range; one that does not is set along its
/// raw range in proportion to the amplitude. Mute turns the element's switch off where it has
/// one, else sets it to its least. The mixer is opened on first use and again after any failure
/// (a USB DAC plugged in later, or pulled out and back): each failure is said once through
/// `events`, and the stream plays on.
public final class ALSAMixer: HardwareVolume, @unchecked Sendable {
    /// The control device (`hw:1`) and the element (`PCM`).
    public let device: String
    /// The simple mixer element's name.
    public let element: String
    private let events: @Sendable (String) -> Void

    private struct Opened {
        var mixer: OpaquePointer?
        var element: OpaquePointer?
        var failure: String?
    }
    private let state = Mutex(Opened())

    /// The element `element` on control device `device`; nothing is opened until `open()` or
    /// the first `setVolume`.
    public init(device: String, element: String, events: @escaping @Sendable (String) -> Void = { _ in }) {
        self.device = device
        self.element = element
        self.events = events
    }

    deinit { state.withLock { Self.close(&$0) } }

    /// Opens the mixer now; nil when it is ready, else why not (also said through `events`).
    @discardableResult
    public func open() -> String? {
        state.withLock { opened in
            if opened.element != nil { return nil }
            return reopen(&opened)
        }
    }

    /// Sets the element for AirPlay's `decibels` (opening the mixer first if need be).
    public func setVolume(decibels: Double) {
        state.withLock { opened in
            if opened.element == nil, reopen(&opened) != nil { return }
            if let failure = apply(decibels, to: opened.element!) {
                Self.close(&opened)
                report("\(failure); reopening at the next volume change", in: &opened)
            } else if opened.failure != nil {
                opened.failure = nil
                events("ALSA mixer \"\(element)\" on \"\(device)\" works again")
            }
        }
    }

    /// What the element's range is, for the log: `-51.0 to 0.0 dB` or `0 to 255 (no dB scale)`.
    public var range: String? {
        state.withLock { opened in
            guard let element = opened.element else { return nil }
            var low = 0, high = 0
            if snd_mixer_selem_get_playback_dB_range(element, &low, &high) >= 0, high > low {
                return "\(Double(low) / 100) to \(Double(high) / 100) dB"
            }
            snd_mixer_selem_get_playback_volume_range(element, &low, &high)
            return "\(low) to \(high) (no dB scale)"
        }
    }

    private func reopen(_ opened: inout Opened) -> String? {
        if let missing = cairplay_alsa_load() { return report("libasound.so.2 \(String(cString: missing))", in: &opened) }
        var mixer: OpaquePointer?
        var result = snd_mixer_open(&mixer, 0)
        guard result >= 0, let mixer else { return report("cannot open a mixer: \(Self.text(result))", in: &opened) }
        result = snd_mixer_attach(mixer, device)
        if result >= 0 { result = snd_mixer_selem_register(mixer, nil, nil) }
        if result >= 0 { result = snd_mixer_load(mixer) }
        guard result >= 0 else {
            snd_mixer_close(mixer)
            return report("cannot open control device \"\(device)\": \(Self.text(result))", in: &opened)
        }
        var id: OpaquePointer?
        snd_mixer_selem_id_malloc(&id)
        defer { snd_mixer_selem_id_free(id) }
        snd_mixer_selem_id_set_index(id, 0)
        snd_mixer_selem_id_set_name(id, element)
        guard let found = snd_mixer_find_selem(mixer, id), snd_mixer_selem_has_playback_volume(found) != 0 else {
            snd_mixer_close(mixer)
            return report("control device \"\(device)\" has no playback volume named \"\(element)\"", in: &opened)
        }
        (opened.mixer, opened.element) = (mixer, found)
        if opened.failure != nil {
            opened.failure = nil
            events("ALSA mixer \"\(element)\" on \"\(device)\" opened")
        }
        return nil
    }

    /// Sets `element` for `decibels`; nil when done, else why not.
    private func apply(_ decibels: Double, to element: OpaquePointer) -> String? {
        let hasSwitch = snd_mixer_selem_has_playback_switch(element) != 0
        var low = 0, high = 0
        let knowsDecibels = snd_mixer_selem_get_playback_dB_range(element, &low, &high) >= 0 && high > low
        var result: Int32
        if decibels <= -144 {
            if hasSwitch {
                result = snd_mixer_selem_set_playback_switch_all(element, 0)
            } else if knowsDecibels {
                result = snd_mixer_selem_set_playback_dB_all(element, low, -1)
            } else {
                snd_mixer_selem_get_playback_volume_range(element, &low, &high)
                result = snd_mixer_selem_set_playback_volume_all(element, low)
            }
        } else {
            if knowsDecibels {
                let centibels = min(high, max(low, Int((decibels * 100).rounded())))
                result = snd_mixer_selem_set_playback_dB_all(element, centibels, -1)
            } else {
                result = snd_mixer_selem_get_playback_volume_range(element, &low, &high)
                let amplitude = pow(10, min(0, decibels) / 20)
                if result >= 0 { result = snd_mixer_selem_set_playback_volume_all(element, low + Int((Double(high - low) * amplitude).rounded())) }
            }
            if result >= 0, hasSwitch { result = snd_mixer_selem_set_playback_switch_all(element, 1) }
        }
        return result >= 0 ? nil : "ALSA mixer \"\(self.element)\" on \"\(device)\" failed: \(Self.text(result))"
    }

    /// Says `failure` once (until the mixer works again); returns it.
    @discardableResult
    private func report(_ failure: String, in opened: inout Opened) -> String {
        let text = failure.hasPrefix("ALSA mixer") ? failure : "ALSA mixer \"\(element)\" on \"\(device)\": \(failure)"
        if opened.failure == nil { events(text) }
        opened.failure = text
        return text
    }

    private static func close(_ opened: inout Opened) {
        if let mixer = opened.mixer { snd_mixer_close(mixer) }
        (opened.mixer, opened.element) = (nil, nil)
    }

    private static func text(_ code: Int32) -> String { String(cString: snd_strerror(code)) }
}
