/// Turns interleaved PCM samples into packets of a compressed format whose every packet holds
/// `framesPerPacket` frames (AAC-LC's access units of 1024). The sender takes encoders from
/// whoever links a media engine (`airplay` hands in GStreamer's AAC encoder), so the sender's
/// library depends on none.
///
/// An encoder may hold frames back (look-ahead, priming): `encode` returns what has come out so
/// far and `finish` the rest. Calls come from one thread, in order.
public protocol AudioEncoder: AnyObject {
    /// Frames in each packet, and the most `encode` takes at once (a shorter last chunk is padded).
    var framesPerPacket: Int { get }
    /// The packets ready after these interleaved samples: none at first, then about one per call.
    func encode(_ samples: [Int32]) -> [[UInt8]]
    /// Ends the stream and returns the packets still held.
    func finish() -> [[UInt8]]
}

/// Makes an encoder for a source's format, or says why there is none for it.
public typealias AudioEncoderFactory = @Sendable (PCMFormat) throws(MediaError) -> any AudioEncoder
