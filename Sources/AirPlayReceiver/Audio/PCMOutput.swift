import AirPlayMedia
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// Raw PCM written to a file or FIFO (`audio_output = "raw:PATH"`), like shairport-sync's pipe
/// backend: for other programs on the box, and for tests. Writes are paced by the playout.
///
/// The bytes are the stream's own format, never converted: interleaved little-endian, S16LE for
/// 16-bit streams and packed S24LE (3 bytes a sample) for 24-bit ones, at the stream's rate.
/// RAOP and AirPlay 2 realtime streams are always S16LE 44100 Hz stereo; the format of the
/// current session is in the log and in `GET /now-playing` (`format`).
public final class RawPCMOutput: PCMOutput, @unchecked Sendable {
    private let path: String
    private let format: PCMFormat
    private let frameSize: Int
    private var descriptor: Int32 = -1
    /// Bytes a full FIFO did not take yet; the next write sends them first. Always the rest of
    /// a frame begun, then whole frames: a reader never sees a frame cut or samples shifted.
    private var pending: [UInt8] = []
    /// Bytes written so far, modulo the frame size: where in a frame the pending bytes begin.
    private var partial = 0
    /// The last write's bytes, its storage reused by the next.
    private var scratch: [UInt8] = []
    private let lock = NIOLock()

    /// The most bytes kept for a reader that fell behind (about 0.37 s of CD audio); beyond
    /// that whole frames are dropped, oldest first, as a FIFO with no reader drops them all.
    static let maximumPending = 65536

    /// An output to a path for audio in `format`; the file is opened (created, appended to) on
    /// the first write.
    public init(path: String, format: PCMFormat = .cd) {
        self.path = path
        self.format = format
        frameSize = format.bytesPerSample * format.channels
    }

    /// A file has no clock and a FIFO's reader buffers far more than this: frames may arrive
    /// up to 30 ms before their time, so the playout writes four 352-frame packets a wake-up,
    /// in one call (the first on time): wake-ups and writes are most of what receiving a
    /// stream costs.
    public var writeAhead: Double { 0.030 }

    deinit { close() }

    /// Writes interleaved samples; a FIFO whose reader is behind or gone takes what it can, and
    /// never blocks the playout: what it did not take waits (bounded) or goes, in whole frames.
    public func write(_ samples: [Int32]) {
        lock.withLock {
            if descriptor < 0 {
                descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { return }
            }
            // The usual case, nothing pending: the samples go out from a buffer kept between
            // writes (one write a packet is most of what playing a stream costs).
            format.writeLittleEndianBytes(samples, into: &scratch)
            let bytes = pending.isEmpty ? scratch : pending + scratch
            let written = bytes.withUnsafeBytes { writeOut($0) }
            partial = (partial + written) % frameSize
            pending = written == bytes.count ? [] : Array(bytes[written...])
            Self.trim(&pending, partial: partial, frameSize: frameSize, limit: Self.maximumPending)
        }
    }

    /// Writes as much of `raw` as the file takes; how much that was.
    private func writeOut(_ raw: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < raw.count {
            let count = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if count > 0 {
                offset += count
            } else if count < 0, errno == EINTR {
                continue
            } else {
                break   // full (EAGAIN), no reader (EPIPE), or a disk error: try again next time
            }
        }
        return offset
    }

    /// Drops whole frames from the front of `pending` until it is within `limit`, keeping the
    /// rest of the frame a partial write began (`partial` bytes of it are out already).
    static func trim(_ pending: inout [UInt8], partial: Int, frameSize: Int, limit: Int) {
        guard pending.count > limit else { return }
        let restOfFrame = partial == 0 ? 0 : frameSize - partial
        let excess = pending.count - limit
        let frames = (excess + frameSize - 1) / frameSize
        let drop = min(frames * frameSize, (pending.count - restOfFrame) / frameSize * frameSize)
        pending.removeSubrange(restOfFrame..<restOfFrame + drop)
    }

    /// Closes the file.
    public func close() {
        lock.withLock {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
            pending = []
            partial = 0
        }
    }
}

/// An output built on the playout's thread the first time it is used, not where SETUP is
/// answered: a GStreamer sink is a pipeline to build and start, which must not hold up an event
/// loop. A build that fails is reported once through `failed`; writes then go nowhere.
///
/// `@unchecked Sendable`: `output` and `failure` are touched under `lock`; the playout calls
/// from its one thread.
final class DeferredPCMOutput: PCMOutput, @unchecked Sendable {
    private let make: () throws -> any PCMOutput
    private let failed: @Sendable (String) -> Void
    private let lock = NIOLock()
    private var output: (any PCMOutput)?
    private var failure: String?
    private var closed = false

    /// An output `make` builds on first use; `failed` hears why it could not be.
    init(make: @escaping () throws -> any PCMOutput, failed: @escaping @Sendable (String) -> Void) {
        self.make = make
        self.failed = failed
    }

    /// The built output, building it the first time (nil once building failed or after close).
    private func built() -> (any PCMOutput)? {
        var report: String?
        let output = lock.withLock { () -> (any PCMOutput)? in
            if let output = self.output { return output }
            guard failure == nil, !closed else { return nil }
            do {
                self.output = try make()
            } catch {
                failure = "audio output unavailable: \(error)"
                report = failure
            }
            return self.output
        }
        if let report { failed(report) }
        return output
    }

    /// The built output's delay (asked by the playout before its first write: it builds it).
    var presentationDelay: Double { built()?.presentationDelay ?? 0 }

    /// The built output's write-ahead (0 until it is built: on time is always safe).
    var writeAhead: Double { lock.withLock { output }?.writeAhead ?? 0 }

    /// The built output's clock (nil until it is built).
    func clockReading() -> OutputClockReading? { lock.withLock { output }?.clockReading() }

    /// Writes to the built output.
    func write(_ samples: [Int32]) { built()?.write(samples) }

    /// Closes the output if it was built.
    func close() {
        let output = lock.withLock { () -> (any PCMOutput)? in
            closed = true
            defer { self.output = nil }
            return self.output
        }
        output?.close()
    }
}
