internal import CLinuxIO
import Glibc

/// An eventfd one thread waits on and others signal: how a playout thread sleeps until its next
/// frame is due, a packet arrives or it is stopped, without an event loop.
public struct WakeEvent: Sendable {
    /// The eventfd (close-on-exec), or -1 when the process is out of descriptors; signalling
    /// and waiting on -1 do nothing but time out.
    public let descriptor: Int32

    /// What ended a `wait`.
    public struct Reason: OptionSet, Sendable {
        /// The raw bits: 1 signalled, 2 input readable.
        public let rawValue: Int32
        /// Makes a reason from its bits.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// `signal()` was called (the event is reset).
        public static let signalled = Reason(rawValue: 1)
        /// The input descriptor is readable.
        public static let input = Reason(rawValue: 2)
    }

    /// A new event; close it with `close()`.
    public init() {
        descriptor = clinuxio_eventfd()
    }

    /// Wakes a thread in `wait` (or its next `wait`).
    public func signal() {
        clinuxio_signal(descriptor)
    }

    /// Waits until signalled, `input` (a descriptor, or -1 for none) is readable, or
    /// `timeoutNanoseconds` pass. Empty on a time-out or an interrupted wait.
    @discardableResult
    public func wait(input: Int32 = -1, timeoutNanoseconds: Int64) -> Reason {
        Reason(rawValue: clinuxio_wait(descriptor, input, timeoutNanoseconds))
    }

    /// Closes the eventfd.
    public func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }
}
