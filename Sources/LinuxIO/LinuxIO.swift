internal import CLinuxIO
import Glibc

/// Linux calls the Swift Glibc module hides (they need `_GNU_SOURCE` or are not exported):
/// batched datagram reads, thread names, kernel time stamps, getrandom. The only importer of
/// the `CLinuxIO` shim; the audio path, the PTP follower and the crypto wrapper use it.
public enum LinuxIO {
    /// Names the calling thread (Linux keeps 15 bytes), as `top -H` and perf show it.
    public static func nameThread(_ name: String) {
        clinuxio_name_thread(name)
    }

    /// Fills `buffer` from the kernel's random generator (getrandom(2)). Returns how many bytes
    /// were written (short above 256 bytes), or nil with `errno` set (EINTR: try again).
    public static func randomBytes(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress else { return 0 }
        let count = clinuxio_getrandom(base, buffer.count)
        return count < 0 ? nil : count
    }

    /// Reads up to `count` (at most 16) datagrams without waiting, datagram i into
    /// `buffer + i * slot`, its length into `lengths[i]`, its source into `sources[i]`, and
    /// `truncated[i]` non-zero when it did not fit. Returns how many were read: 0 when none
    /// waited, -1 with `errno` set (a pending socket error, cleared by the read).
    public static func receiveBatch(descriptor: Int32, buffer: UnsafeMutableRawPointer, slot: Int, count: Int,
                                    sources: UnsafeMutablePointer<Glibc.sockaddr_storage>, lengths: UnsafeMutablePointer<Int>,
                                    truncated: UnsafeMutablePointer<Int32>) -> Int {
        Int(clinuxio_receive_batch(descriptor, buffer, slot, UInt32(count), sources, lengths, truncated))
    }

    /// Turns on kernel receive time stamps (`SO_TIMESTAMPNS`) on a datagram socket.
    @discardableResult
    public static func enableReceiveTimestamps(_ descriptor: Int32) -> Bool {
        clinuxio_enable_receive_timestamps(descriptor) == 0
    }

    /// Reads one datagram without waiting into `buffer`, its source into `source`. Returns its
    /// length (cut to the buffer) and the kernel's receive stamp (CLOCK_REALTIME nanoseconds, 0
    /// when none came), or nil when none waits or the read failed.
    public static func receiveTimestamped(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer,
                                          source: inout Glibc.sockaddr_storage) -> (length: Int, realtimeNanoseconds: Int64)? {
        var stamp: Int64 = 0
        let count = clinuxio_receive_timestamped(descriptor, buffer.baseAddress, buffer.count, &source, &stamp)
        return count < 0 ? nil : (count, stamp)
    }

    /// Asks the kernel for software transmit time stamps on a datagram socket
    /// (`SO_TIMESTAMPING`, `SOF_TIMESTAMPING_TX_SOFTWARE`, stamps only).
    @discardableResult
    public static func enableTransmitTimestamps(_ descriptor: Int32) -> Bool {
        clinuxio_enable_transmit_timestamps(descriptor) == 0
    }

    /// The kernel's transmit stamp of the datagram just sent (CLOCK_REALTIME nanoseconds),
    /// waiting up to `timeoutMilliseconds`; 0 when none came. Older stamps are dropped first.
    public static func transmitTimestamp(_ descriptor: Int32, timeoutMilliseconds: Int32) -> Int64 {
        clinuxio_transmit_timestamp(descriptor, timeoutMilliseconds)
    }
}
