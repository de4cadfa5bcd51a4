import FoundationEssentials
import Glibc
import LinuxIO
import NIOConcurrencyHelpers

/// A bound UDP socket read in batches, in place, by whoever drains it: a RAOP stream's audio
/// port (125 datagrams a second for as long as it plays), read by the session's playout thread
/// when it wakes anyway to write the next packet, so receiving costs no thread wake-up of its
/// own and no event loop.
///
/// Measured on the event loop, each datagram cost an `epoll_wait` wake-up, a `recvmsg` that
/// found nothing more, the source address formatted as text, an envelope and a pipeline pass:
/// a third of the receiver's CPU. Here one `recvmmsg` reads up to `batch` datagrams into
/// buffers allocated once, and the source host is compared as bytes.
///
/// `@unchecked Sendable`: `drain` is called from one thread at a time (the playout's); the
/// rest is immutable.
final class UDPDatagramSocket: PlayoutInput, @unchecked Sendable {
    /// Gets each datagram (valid only during the call) and whether it came from the expected host.
    typealias Handler = @Sendable (_ datagram: UnsafeRawBufferPointer, _ fromExpectedHost: Bool) -> Void

    /// Datagrams read per system call at most.
    static let batch = 8
    /// Room for one datagram: more than the largest RAOP audio packet (4096 ALAC frames, about
    /// 16 KiB). A larger datagram is not handed on; `truncated` is told instead.
    static let slotSize = 32 * 1024

    /// The socket (polled by the playout while it waits for data).
    let descriptor: Int32
    private let expectedHost: [UInt8]?
    private let handle: Handler
    private let truncated: @Sendable () -> Void
    private let buffer: UnsafeMutableRawPointer
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private let lengths: UnsafeMutablePointer<Int>
    private let truncatedFlags: UnsafeMutablePointer<Int32>
    private let closed = NIOLock()
    private var isClosed = false

    /// Takes over `descriptor` (a bound UDP socket, closed by `close()`). `expectedHost` is 4
    /// (IPv4, also as IPv4-mapped IPv6) or 16 bytes; nil accepts every host. `truncated` is told
    /// of each datagram too large for a slot.
    init(descriptor: Int32, expectedHost: [UInt8]?, handle: @escaping Handler, truncated: @escaping @Sendable () -> Void) {
        self.descriptor = descriptor
        self.expectedHost = expectedHost
        self.handle = handle
        self.truncated = truncated
        buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.batch * Self.slotSize, alignment: 16)
        names = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: Self.batch)
        lengths = UnsafeMutablePointer<Int>.allocate(capacity: Self.batch)
        truncatedFlags = UnsafeMutablePointer<Int32>.allocate(capacity: Self.batch)
    }

    deinit {
        close()
        buffer.deallocate(); names.deallocate(); lengths.deallocate(); truncatedFlags.deallocate()
    }

    /// Reads every datagram waiting, without blocking, and hands each to the handler.
    func drain() {
        while true {
            let count = LinuxIO.receiveBatch(descriptor: descriptor, buffer: buffer, slot: Self.slotSize, count: Self.batch,
                                             sources: names, lengths: lengths, truncated: truncatedFlags)
            // 0: nothing waits; < 0: a pending socket error (an ICMP answer), reported once and cleared.
            guard count > 0 else { return }
            for slot in 0..<count {
                if truncatedFlags[slot] != 0 {
                    truncated()
                    continue
                }
                handle(UnsafeRawBufferPointer(start: buffer + slot * Self.slotSize, count: lengths[slot]),
                       Self.host(of: names + slot, is: expectedHost))
            }
            if count < Self.batch { return }
        }
    }

    /// Closes the socket (once).
    func close() {
        closed.withLock {
            guard !isClosed else { return }
            isClosed = true
            Glibc.close(descriptor)
        }
    }

    /// Whether a source address is `expected` (bytes as `RAOPPorts.hostBytes` gives them),
    /// compared in place.
    static func host(of name: UnsafePointer<sockaddr_storage>, is expected: [UInt8]?) -> Bool {
        guard let expected else { return true }
        switch Int32(name.pointee.ss_family) {
        case AF_INET:
            return name.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                withUnsafeBytes(of: address.pointee.sin_addr) { $0.elementsEqual(expected) }
            }
        case AF_INET6:
            return name.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                withUnsafeBytes(of: address.pointee.sin6_addr) { bytes in
                    RAOPPorts.isIPv4Mapped(bytes) ? bytes.suffix(4).elementsEqual(expected) : bytes.elementsEqual(expected)
                }
            }
        default:
            return false
        }
    }
}
