import AirPlayMedia
import Foundation

/// Raw S16LE PCM written to a file or FIFO (`audio_output = "raw:PATH"`), like shairport-sync's
/// pipe backend: for other programs on the box, and for tests. Writes are paced by the playout.
public final class RawPCMOutput: PCMOutput, @unchecked Sendable {
    private let path: String
    private var descriptor: Int32 = -1
    private let lock = NSLock()

    /// An output to a path; the file is opened (created, appended to) on the first write.
    public init(path: String) { self.path = path }

    deinit { close() }

    /// Writes interleaved samples; a FIFO with no reader drops them instead of blocking playout.
    public func write(_ samples: [Int16]) {
        lock.withLock {
            if descriptor < 0 {
                descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { return }
            }
            samples.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    /// Closes the file.
    public func close() {
        lock.withLock {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }
}
