/// The format a buffered (type 103) stream's RTP SSRC names. Apple's senders put a format code in
/// the SSRC of every buffered packet, and shairport-sync chooses its decoder by it alone: a packet
/// with any other SSRC is dropped as "Unrecognised SSRC", however the SETUP described the stream.
/// airplayd reads the format from the SETUP and takes any SSRC.
///
/// | SSRC | format | who sends it |
/// |---|---|---|
/// | `0x15000000` | ALAC 48 kHz 24-bit stereo | Apple's senders (lossless) |
/// | `0x16000000` | AAC-LC 44.1 kHz stereo | Apple's senders |
/// | `0x17000000` | AAC-LC 48 kHz stereo | Apple's senders |
/// | `0x27000000`, `0x28000000` | AAC-LC 48 kHz 5.1, 7.1 | Apple's senders (not sent here) |
/// | `0x0000FACE` | ALAC 44.1 kHz 16-bit stereo | shairport-sync's own code (no Apple sender) |
public enum BufferedFormatCode {
    /// ALAC 48 kHz 24-bit stereo.
    public static let alac48k24: UInt32 = 0x1500_0000
    /// AAC-LC 44.1 kHz stereo.
    public static let aacLC44k: UInt32 = 0x1600_0000
    /// AAC-LC 48 kHz stereo.
    public static let aacLC48k: UInt32 = 0x1700_0000
    /// ALAC 44.1 kHz 16-bit stereo, as shairport-sync knows it.
    public static let alac44k16: UInt32 = 0x0000_FACE

    /// The code for a stereo format (`compression` as in SETUP's `ct`: 2 ALAC, 4 AAC-LC), or nil
    /// when no receiver is known to read one for it.
    public static func ssrc(compression: Int, sampleRate: Int, bitsPerSample: Int) -> UInt32? {
        switch (compression, sampleRate, bitsPerSample) {
        case (2, 48000, 24): alac48k24
        case (2, 44100, 16): alac44k16
        case (4, 44100, _): aacLC44k
        case (4, 48000, _): aacLC48k
        default: nil
        }
    }

    /// The stereo format a code names, or nil for any other SSRC.
    public static func format(ofSSRC ssrc: UInt32) -> (compression: Int, sampleRate: Int, bitsPerSample: Int)? {
        switch ssrc {
        case alac48k24: (2, 48000, 24)
        case alac44k16: (2, 44100, 16)
        case aacLC44k: (4, 44100, 16)
        case aacLC48k: (4, 48000, 16)
        default: nil
        }
    }
}
