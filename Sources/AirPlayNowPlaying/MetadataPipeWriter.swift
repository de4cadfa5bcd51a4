import Glibc
import NIOConcurrencyHelpers
import LinuxIO

/// Writes whole metadata items to a FIFO, never blocking the caller.
///
/// The FIFO is made when missing (mode 0666 less the umask, as shairport-sync does). It is
/// opened for writing without waiting, so with no reader nothing is opened and items are
/// dropped, as a reader that comes later expects (it starts at the next item). An item that
/// fits the pipe's atomic size goes straight in when nothing waits before it (the common case:
/// no thread hop). Others, and everything once the reader falls behind, go through a thread of
/// the writer's own that waits for the reader; what waits is bounded by `queueLimit` bytes and
/// the oldest whole items go first, so a reader never sees half an item.
final class MetadataPipeWriter: Sendable {
    /// Bytes that may wait for a slow reader (a few covers).
    static let queueLimit = 8 << 20
    /// Writes of at most this size to a pipe are atomic: all or nothing (Linux's PIPE_BUF).
    static let atomicSize = 4096

    private struct State {
        var items: [[UInt8]] = []
        var bytes = 0
        var dropped = 0
        var closed = false
        /// The FIFO open for writing (non-blocking), or -1.
        var descriptor: Int32 = -1
        /// The thread is inside an item: nothing may be written meanwhile.
        var writing = false
    }

    let path: String
    private let queue = ConditionLock(value: 0)
    private let state = NIOLockedValueBox(State())

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
            while let self, self.writeNext() {}
        }
    }

    deinit {
        state.withLockedValue { state in
            if state.descriptor >= 0 { Glibc.close(state.descriptor) }
            state.descriptor = -1
        }
    }

    /// Whole items dropped: no reader, or a reader too slow for `queueLimit`.
    var droppedItems: Int { state.withLockedValue { $0.dropped } }

    /// Writes one item now when it can go whole without waiting, else queues it for the thread.
    func write(_ item: [UInt8]) {
        let done = state.withLockedValue { state -> Bool in
            guard !state.closed else { return true }
            guard state.items.isEmpty, !state.writing, item.count <= Self.atomicSize else { return false }
            guard openIfNeeded(&state) else {
                state.dropped += 1
                return true
            }
            let written = item.withUnsafeBytes { Glibc.write(state.descriptor, $0.baseAddress, $0.count) }
            if written == item.count { return true }
            if written < 0, errno == EAGAIN { return false }  // the reader fell behind: the thread waits for it
            // The reader went away (EPIPE): this item is lost, the next opens the FIFO again.
            Glibc.close(state.descriptor)
            state.descriptor = -1
            state.dropped += 1
            return true
        }
        guard !done else { return }
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

    /// Stops the thread and closes the FIFO; queued items are dropped.
    func close() {
        queue.lock()
        state.withLockedValue { $0.closed = true }
        queue.unlock(withValue: 1)
    }

    /// Opens the FIFO when it is not open; false when nobody reads (ENXIO).
    private func openIfNeeded(_ state: inout State) -> Bool {
        if state.descriptor < 0 { state.descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) }
        return state.descriptor >= 0
    }

    /// Writes the next queued item, waiting for the reader as needed; false when closed.
    private func writeNext() -> Bool {
        guard queue.lock(whenValue: 1, timeoutSeconds: 1) else { return true }
        let (item, descriptor, closed) = state.withLockedValue { state -> ([UInt8]?, Int32, Bool) in
            guard !state.closed else {
                if state.descriptor >= 0 { Glibc.close(state.descriptor) }
                state.descriptor = -1
                return (nil, -1, true)
            }
            guard !state.items.isEmpty else { return (nil, -1, false) }
            let item = state.items.removeFirst()
            state.bytes -= item.count
            guard openIfNeeded(&state) else {
                state.dropped += 1
                return (nil, -1, false)
            }
            state.writing = true
            return (item, state.descriptor, false)
        }
        let empty = state.withLockedValue { $0.items.isEmpty }
        queue.unlock(withValue: empty ? 0 : 1)
        if closed { return false }
        guard let item else { return true }
        let whole = writeWhole(item, to: descriptor)
        state.withLockedValue { state in
            state.writing = false
            if !whole {
                // The reader went away or stalled: drop this item, open again for the next.
                if state.descriptor == descriptor { Glibc.close(descriptor); state.descriptor = -1 }
                state.dropped += 1
            }
        }
        return true
    }

    /// Writes all of `bytes`, waiting up to 2 s at a time for a reader that fell behind; false
    /// when the reader went away or stalled.
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
