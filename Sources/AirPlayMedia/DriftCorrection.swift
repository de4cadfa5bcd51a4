/// How a playout keeps its output on the sender's timeline when the two clocks drift apart
/// (`audio_drift_correction`): the sound card's crystal against the sender's, or the system
/// clock against the sender's where there is no card to read.
public enum DriftCorrection: Sendable {
    /// One frame added or removed per packet at its quietest point, the new frame the average of
    /// its neighbours (the default: bit-exact between corrections, nearly free).
    case stuff
    /// The packet played one frame longer or shorter through a real resampler, so no single
    /// frame is duplicated or dropped (costlier; for listeners who hear a stuffed frame).
    case resample(any PacketResampler)
    /// No gradual correction: only jumps past 20 ms are followed (cut or silence), and a drifting
    /// card or sender slowly moves the room off time. For outputs already slaved elsewhere.
    case off

    /// As the configuration names it: `stuff`, `resample` or `off`.
    public var name: String {
        switch self {
        case .stuff: "stuff"
        case .resample: "resample"
        case .off: "off"
        }
    }
}

/// Plays one packet as a frame more or a frame fewer, by resampling it (soxr in airplayd).
///
/// The packet is resampled with what was heard just before it and what comes just after it as
/// context, so the result joins both without a seam: its first frame is the packet's first
/// instant and its end the next packet's first instant, only the time between is stretched.
public protocol PacketResampler: Sendable {
    /// `packet` (interleaved, `channels` a frame, samples within ±`maximumSample`) resampled to
    /// exactly `frames` frames. `before` is up to a packet of frames heard just before it (the
    /// most recent last) and `after` up to a packet of frames that follow; either may be shorter
    /// or empty. Nil when resampling failed (the caller stuffs instead).
    func resample(_ packet: [Int32], to frames: Int, before: ArraySlice<Int32>, after: ArraySlice<Int32>,
                  channels: Int, maximumSample: Int32) -> [Int32]?
}

/// A volume control outside the samples: a sound card's own mixer (`alsa_mixer`). While a box
/// has one, the sender's volume goes there and the samples reach the card untouched.
public protocol HardwareVolume: AnyObject, Sendable {
    /// Sets the volume in dB as AirPlay gives it: 0 is full, -30 the quietest step, -144 or
    /// less mutes. Failures are the control's to report; the stream plays on regardless.
    func setVolume(decibels: Double)
}
