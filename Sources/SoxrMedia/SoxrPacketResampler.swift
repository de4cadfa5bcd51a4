import AirPlayMedia
import CSoxr

/// `audio_drift_correction = "resample"`: a packet played one frame longer or shorter through
/// libsoxr (the resampler SoX, shairport-sync and PulseAudio use), at its very-high quality.
///
/// The packet is resampled with a packet's worth of frames on each side: N frames of what was
/// heard before, the packet's N, and N of what follows, 3N frames in all, taken to 3M (M = N ± 1).
/// At that ratio input frame N lands exactly on output frame M and input frame 2N on output
/// frame 2M, so the middle M frames start where the packet starts and end where the next one
/// begins: no seam on either side. The filter's edges (where soxr sees silence beyond its
/// input) fall in the context, which is thrown away.
public struct SoxrPacketResampler: PacketResampler {
    /// A resampler; throws when libsoxr is missing (with what to install).
    public init() throws(SoxrError) {
        if let reason = cairplay_soxr_load() { throw SoxrError(reason: String(cString: reason)) }
    }

    /// `packet` as exactly `frames` frames (at most 1 % from its own count), joined to `before`
    /// and `after`; nil when the packet is malformed or libsoxr fails (the caller stuffs).
    public func resample(_ packet: [Int32], to frames: Int, before: ArraySlice<Int32>, after: ArraySlice<Int32>,
                         channels: Int, maximumSample: Int32) -> [Int32]? {
        guard channels > 0, packet.count % channels == 0 else { return nil }
        let count = packet.count / channels
        guard count >= 2, frames > 0, abs(frames - count) <= max(1, count / 100) else { return nil }
        let scale = Double(maximumSample) + 1
        // Context of exactly a packet on each side (the alignment needs it), padded with silence
        // at its far end when less was heard or has come.
        var input = [Double](repeating: 0, count: 3 * packet.count)
        let heard = before.suffix(min(before.count - before.count % channels, packet.count))
        for (offset, sample) in heard.enumerated() { input[packet.count - heard.count + offset] = Double(sample) / scale }
        for (offset, sample) in packet.enumerated() { input[packet.count + offset] = Double(sample) / scale }
        for (offset, sample) in after.prefix(packet.count).enumerated() { input[2 * packet.count + offset] = Double(sample) / scale }

        var output = [Double](repeating: 0, count: 3 * frames * channels + channels)
        var used = 0, made = 0
        var io = soxr_io_spec(SOXR_FLOAT64_I, SOXR_FLOAT64_I)
        var quality = soxr_quality_spec(UInt(SOXR_VHQ), 0)
        let error = input.withUnsafeBytes { inputBytes in
            output.withUnsafeMutableBytes { outputBytes in
                soxr_oneshot(Double(count), Double(frames), UInt32(channels), inputBytes.baseAddress, 3 * count, &used,
                             outputBytes.baseAddress, 3 * frames + 1, &made, &io, &quality, nil)
            }
        }
        guard error == nil, made >= 2 * frames else { return nil }
        let limit = Double(maximumSample)
        return output[(frames * channels)..<(2 * frames * channels)].map {
            Int32(max(-limit - 1, min(limit, ($0 * scale).rounded())))
        }
    }
}

/// libsoxr could not be loaded.
public struct SoxrError: Error, CustomStringConvertible {
    /// Why, with what to install.
    public let reason: String
    /// The reason, as logs show it.
    public var description: String { reason }
}
