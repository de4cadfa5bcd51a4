/// The AirPlay volume scale: -30 dB (quietest) to 0 dB (full), -144 muted. Senders' sliders
/// move linearly over it, so a linear 0...1 (MPRIS, a video's `/volume`, a 0-100 slider) maps
/// onto it directly.
public enum AirPlayVolume {
    /// 0...1 from AirPlay dB; muted and anything at or below -30 dB is 0.
    public static func linear(decibels: Double) -> Double {
        decibels > -30 ? min(1, (decibels + 30) / 30) : 0
    }

    /// AirPlay dB from 0...1; 0 mutes.
    public static func decibels(linear: Double) -> Double {
        linear <= 0 ? -144 : -30 + 30 * min(1, linear)
    }
}
