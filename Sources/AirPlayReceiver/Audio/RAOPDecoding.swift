import AirPlayMedia
import AirPlayWire
import FoundationEssentials
import Dispatch
import NIOConcurrencyHelpers
import Synchronization

/// Makes the decoder a RAOP stream needs. The receiver knows only this protocol; the daemon
/// wires the real one (native ALAC, GStreamer AAC).
public protocol RAOPDecoderFactory: Sendable {
    /// Checks at ANNOUNCE, without building anything, that the stream can be decoded here.
    func validate(_ stream: RAOPStreamDescription) throws(AudioDecodeError)
    /// Builds the decoder, nil for L16. May wait (a GStreamer pipeline): it is called on the
    /// session's decode queue, never on an event loop, unless `decodesWithoutWaiting` says so.
    func makeDecoder(for stream: RAOPStreamDescription) throws(AudioDecodeError) -> (any AudioDecoder)?
    /// True when building the decoder and decoding are plain computation of a few microseconds
    /// (our ALAC decoder): packets are then decoded where they arrive, with no thread hop.
    func decodesWithoutWaiting(_ stream: RAOPStreamDescription) -> Bool
}

/// How a session turns its packets into PCM.
enum RAOPPacketDecoding: Sendable {
    /// PCM: big-endian samples of 2 (L16) or 3 bytes, converted where they arrive.
    case bigEndianPCM(bytesPerSample: Int)
    /// A decoder that never waits, run where packets arrive (audio and control ports may be on
    /// different event loops, so calls are serialised).
    case inline(InlineDecoder)
    /// A decoder that may wait, on the session's own queue.
    case queued(RAOPDecodeQueue)
}

/// A decoder whose calls are serialised by a lock (uncontended: one packet at a time arrives).
final class InlineDecoder: Sendable {
    private let decoder: NIOLockedValueBox<any AudioDecoder>

    init(_ decoder: any AudioDecoder) { self.decoder = NIOLockedValueBox(decoder) }

    /// Decodes one packet.
    func decode(_ payload: [UInt8]) -> Result<[Int32], AudioDecodeError> {
        decoder.withLockedValue { decoder in Result { () throws(AudioDecodeError) in try decoder.decode(payload) } }
    }
}

/// Decodes one session's packets in arrival order, off the event loops: a serial queue, a
/// decoder built on it when the first packet comes, and a bound on the packets waiting.
///
/// `@unchecked Sendable`: `decoder` and `failure` are touched only on `queue`; the rest is
/// immutable or a `Mutex`.
final class RAOPDecodeQueue: @unchecked Sendable {
    /// Packets allowed to wait for the decoder (about 0.5 s of audio): beyond this the decoder
    /// cannot keep up and new packets are dropped rather than queued without bound.
    static let maximumWaiting = 64

    private let queue: DispatchQueue
    private let stream: RAOPStreamDescription
    private let factory: any RAOPDecoderFactory
    private let waiting = Mutex(0)
    // Touched only on `queue`.
    private var decoder: (any AudioDecoder)?
    private var failure: AudioDecodeError?

    init(session: Int, stream: RAOPStreamDescription, factory: any RAOPDecoderFactory) {
        queue = DispatchQueue(label: "raop-decode-\(session)")
        self.stream = stream
        self.factory = factory
    }

    /// Decodes `payload` on the queue and hands the samples (or the reason they are missing) to
    /// `deliver` there. Returns false, without queueing, when too many packets already wait.
    func decode(_ payload: [UInt8], deliver: @escaping @Sendable (Result<[Int32], AudioDecodeError>) -> Void) -> Bool {
        let admitted = waiting.withLock { count -> Bool in
            guard count < Self.maximumWaiting else { return false }
            count += 1
            return true
        }
        guard admitted else { return false }
        queue.async { [self] in
            defer { waiting.withLock { $0 -= 1 } }
            deliver(decodeNow(payload))
        }
        return true
    }

    /// Decodes `payload` on the queue and waits for it, for a caller on a thread of its own that
    /// may block: a buffered stream's reader, whose waiting holds the sender back through TCP
    /// (its packets come seconds ahead, in bursts far beyond `maximumWaiting`).
    func decodeAndWait(_ payload: [UInt8]) -> Result<[Int32], AudioDecodeError> {
        queue.sync { decodeNow(payload) }
    }

    private func decodeNow(_ payload: [UInt8]) -> Result<[Int32], AudioDecodeError> {
        if let failure { return .failure(failure) }
        if decoder == nil {
            do {
                decoder = try factory.makeDecoder(for: stream)
            } catch {
                failure = error
                return .failure(error)
            }
        }
        // The queue is only made for compressed streams, whose factory always gives a decoder.
        guard let decoder else { return .failure(.unsupported("no decoder for this stream")) }
        return Result { () throws(AudioDecodeError) in try decoder.decode(payload) }
    }
}

extension RAOPPacketDecoding {
    /// Big-endian PCM of `width` bytes a sample (2 for L16, 3 for 24-bit) as samples; a
    /// trailing partial sample is dropped.
    static func bigEndianSamples(_ payload: [UInt8], width: Int) -> [Int32] {
        payload.withUnsafeBytes { bigEndianSamples($0, width: width) }
    }

    /// Big-endian PCM read in place.
    static func bigEndianSamples(_ payload: UnsafeRawBufferPointer, width: Int) -> [Int32] {
        let count = payload.count / width
        return [Int32](unsafeUninitializedCapacity: count) { samples, written in
            if width == 2 {
                for index in 0..<count {
                    samples[index] = Int32(Int16(bitPattern: UInt16(payload[2 * index]) << 8 | UInt16(payload[2 * index + 1])))
                }
            } else {
                for index in 0..<count {
                    let at = 3 * index
                    let bits = UInt32(payload[at]) << 24 | UInt32(payload[at + 1]) << 16 | UInt32(payload[at + 2]) << 8
                    samples[index] = Int32(bitPattern: bits) >> 8
                }
            }
            written = count
        }
    }

    /// The samples of a PCM payload (only for `.bigEndianPCM`; empty otherwise).
    func pcmSamples(_ payload: UnsafeRawBufferPointer) -> [Int32] {
        guard case .bigEndianPCM(let width) = self else { return [] }
        return Self.bigEndianSamples(payload, width: width)
    }
}

extension RAOPStreamDescription {
    /// The PCM the stream decodes to: its rate and channels, at 16 or 24 bits.
    public var pcmFormat: PCMFormat { PCMFormat(sampleRate: sampleRate, channels: channels, bitsPerSample: bitsPerSample) }
}
