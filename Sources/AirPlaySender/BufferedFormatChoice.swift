import AirPlayMedia

/// Which format a buffered stream goes out in, from the file's and what the receivers take
/// (`supportedFormats.bufferStream` in their `GET /info` answers).
///
/// The file's own format when every receiver takes it, so lossless stays bit-exact; else the
/// first of Apple's own formats every receiver takes (ALAC 48 kHz/24-bit, then CD; AAC-LC at
/// 44.1 then 48 kHz), which the sender converts to. A receiver that did not say what it takes
/// is taken to take anything, as before it was asked; if no format suits every receiver, the
/// file's goes out and a receiver that cannot decode it refuses the SETUP and says why.
public enum BufferedFormatChoice {
    /// Apple's lossless format, which every AirPlay 2 receiver takes (bit 21).
    public static let appleLossless = PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24)

    /// The format to send `file` in with `codec` to receivers offering `offers` (nil: unknown);
    /// `rate`, when given (`--rate`), forces 44.1 kHz (16-bit) or 48 kHz (ALAC 24-bit, AAC 16-bit).
    public static func format(for file: PCMFormat, codec: BufferedCodec, offers: [UInt64?], rate: Int? = nil) -> PCMFormat {
        let own = sendable(file, codec: codec)
        if let rate { return forced(rate, codec: codec) }
        let known = offers.compactMap { $0 }
        let candidates = [own] + (codec == .aac ? [forced(44100, codec: .aac), forced(48000, codec: .aac)]
                                                : [appleLossless, PCMFormat.cd])
        return candidates.first { candidate in
            let bit = ReceiverLink.formatBit(candidate, codec: codec)
            return known.allSatisfy { $0 & bit != 0 }
        } ?? own
    }

    /// The nearest format a buffered stream carries: AAC is 16-bit at 44.1 or 48 kHz; ALAC
    /// 16 or 24 bits at 44.1 or 48 kHz, and 48 kHz/16-bit goes as 24-bit (no code names it).
    static func sendable(_ file: PCMFormat, codec: BufferedCodec) -> PCMFormat {
        let rate = [44100, 48000].contains(file.sampleRate) ? file.sampleRate : (file.sampleRate % 44100 == 0 ? 44100 : 48000)
        if codec == .aac { return PCMFormat(sampleRate: rate, channels: 2, bitsPerSample: 16) }
        let bits = rate == 48000 || file.bitsPerSample > 16 ? 24 : 16
        return PCMFormat(sampleRate: rate, channels: 2, bitsPerSample: bits)
    }

    static func forced(_ rate: Int, codec: BufferedCodec) -> PCMFormat {
        rate == 48000 && codec == .alac ? appleLossless : PCMFormat(sampleRate: rate == 48000 ? 48000 : 44100, channels: 2, bitsPerSample: 16)
    }
}
