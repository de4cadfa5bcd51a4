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
    /// L16: big-endian samples, converted where they arrive.
    case l16
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
    func decode(_ payload: [UInt8]) -> Result<[Int16], AudioDecodeError> {
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
    func decode(_ payload: [UInt8], deliver: @escaping @Sendable (Result<[Int16], AudioDecodeError>) -> Void) -> Bool {
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

    private func decodeNow(_ payload: [UInt8]) -> Result<[Int16], AudioDecodeError> {
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
    /// L16 is big-endian on the wire.
    static func l16Samples(_ payload: [UInt8]) -> [Int16] { payload.withUnsafeBytes(l16Samples) }

    /// L16 from bytes read in place.
    static func l16Samples(_ payload: UnsafeRawBufferPointer) -> [Int16] {
        [Int16](unsafeUninitializedCapacity: payload.count / 2) { samples, count in
            for index in 0..<payload.count / 2 {
                samples[index] = Int16(bitPattern: UInt16(payload[2 * index]) << 8 | UInt16(payload[2 * index + 1]))
            }
            count = payload.count / 2
        }
    }
}
