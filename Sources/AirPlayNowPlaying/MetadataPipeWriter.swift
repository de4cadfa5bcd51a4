import AirPlayMedia
import Glibc
import NIOConcurrencyHelpers

/// Writes whole metadata items to a FIFO on a thread of its own, never blocking the caller.
///
/// The FIFO is made when missing (mode 0666 less the umask, as shairport-sync does). It is
/// opened for writing without waiting, so with no reader nothing is opened and items are
/// dropped, as a reader that comes later expects (it starts at the next item). A reader that
/// stops reading fills the pipe; what waits is bounded by `queueLimit` bytes and the oldest
/// whole items go first, so a reader never sees half an item.
final class MetadataPipeWriter: Sendable {
    /// Bytes that may wait for a slow reader (a few covers).
    static let queueLimit = 8 << 20

    let path: String
    private let queue = ConditionLock(value: 0)
    private let state = NIOLockedValueBox<(items: [[UInt8]], bytes: Int, dropped: Int, closed: Bool)>(([], 0, 0, false))

    /// A writer for `path`; fails when something other than a FIFO is there or none can be made.
    init(path: String) throws(MetadataPipeError) {
        self.path = path
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFIFO else { throw MetadataPipeError("\(path) exists and is not a FIFO") }
        } else if mkfifo(path, 0o666) != 0 {
            throw MetadataPipeError("cannot make the FIFO \(path): \(String(cString: strerror(errno)))")
        }
        // A reader that goes away must not kill the daemon: write then fails with EPIPE.
        signal(SIGPIPE, SIG_IGN)
        DedicatedThread.start(name: "metadata-pipe") { [weak self] in
            var descriptor: Int32 = -1
            while let self, self.writeNext(&descriptor) {}
            if descriptor >= 0 { Glibc.close(descriptor) }
        }
    }

    /// Whole items dropped: no reader, or a reader too slow for `queueLimit`.
    var droppedItems: Int { state.withLockedValue { $0.dropped } }

    /// Queues one item's bytes.
    func write(_ item: [UInt8]) {
        queue.lock()
        state.withLockedValue { state in
            state.items.append(item)
            state.bytes += item.count
            while state.bytes > Self.queueLimit, state.items.count > 1 {
                state.bytes -= state.items.removeFirst().count
                state.dropped += 1
            }
        }
        queue.unlock(withValue: 1)
    }

    /// Stops the thread; queued items are dropped.
    func close() {
        queue.lock()
        state.withLockedValue { $0.closed = true }
        queue.unlock(withValue: 1)
    }

    /// Writes the next item, opening the FIFO first if needed; false when closed.
    private func writeNext(_ descriptor: inout Int32) -> Bool {
        guard queue.lock(whenValue: 1, timeoutSeconds: 1) else { return true }
        let (item, closed) = state.withLockedValue { state -> ([UInt8]?, Bool) in
            guard !state.closed, !state.items.isEmpty else { return (nil, state.closed) }
            let item = state.items.removeFirst()
            state.bytes -= item.count
            return (item, false)
        }
        let empty = state.withLockedValue { $0.items.isEmpty }
        queue.unlock(withValue: empty ? 0 : 1)
        if closed { return false }
        guard let item else { return true }
        if descriptor < 0 {
            descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            // ENXIO: nobody reads. The item is dropped; the next one tries again.
            guard descriptor >= 0 else {
                state.withLockedValue { $0.dropped += 1 }
                return true
            }
        }
        if !writeWhole(item, to: descriptor) {
            Glibc.close(descriptor)
            descriptor = -1
            state.withLockedValue { $0.dropped += 1 }
        }
        return true
    }

    /// Writes all of `bytes`, waiting up to 2 s at a time for a reader that fell behind; false
    /// when the reader went away or stalled (the pipe is reopened for the next item).
    private func writeWhole(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EINTR else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            guard poll(&poller, 1, 2000) > 0, poller.revents & Int16(POLLERR | POLLHUP) == 0 else { return false }
        }
        return true
    }
}

/// Why the metadata pipe cannot be written.
struct MetadataPipeError: Error, CustomStringConvertible {
    /// What is wrong.
    let description: String
    init(_ description: String) { self.description = description }
}
