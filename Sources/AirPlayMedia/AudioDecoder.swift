/// Turns one encoded audio packet into interleaved PCM samples at the stream's depth (see
/// `PCMFormat`).
///
/// A decoder is fed from one session's decode queue, one packet at a time and in order; it may
/// block that queue (a GStreamer decoder waits for its pipeline), never an event loop.
public protocol AudioDecoder: AnyObject, Sendable {
    /// The packet's frames, interleaved by channel.
    func decode(_ packet: [UInt8]) throws(AudioDecodeError) -> [Int32]
}

/// Why a packet did not decode: a value, so the session can count and log it.
public struct AudioDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case truncated
        case malformed(String)
        case unsupported(String)
        case noOutput
    }

    private let kind: Kind

    /// The packet ended before its frame did.
    public static let truncated = AudioDecodeError(kind: .truncated)
    /// The decoder produced nothing for the packet in time.
    public static let noOutput = AudioDecodeError(kind: .noOutput)
    /// The bits break the format's rules.
    public static func malformed(_ reason: String) -> AudioDecodeError { AudioDecodeError(kind: .malformed(reason)) }
    /// A valid feature this decoder does not implement.
    public static func unsupported(_ reason: String) -> AudioDecodeError { AudioDecodeError(kind: .unsupported(reason)) }

    /// A short reason for logs and drop counters.
    public var description: String {
        switch kind {
        case .truncated: "truncated frame"
        case .malformed(let reason): "malformed frame: \(reason)"
        case .unsupported(let reason): "unsupported: \(reason)"
        case .noOutput: "decoder gave no output"
        }
    }
}
