import AirPlayWire
internal import CAvahi
import Glibc

/// An error from the Avahi client library.
public struct AvahiError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Avahi error code (`AVAHI_ERR_*`).
    public let code: Int
    /// What was being done.
    public let operation: String

    /// An error for a code returned by an Avahi call.
    public init(code: Int, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// True when the daemon (or the system bus) is not reachable.
    public var isDaemonUnavailable: Bool {
        code == AVAHI_ERR_NO_DAEMON || code == AVAHI_ERR_DBUS_ERROR || code == AVAHI_ERR_DISCONNECTED
            || code == AVAHI_ERR_BAD_STATE
    }

    /// `operation: avahi's message`.
    public var description: String { "\(operation): \(String(cString: avahi_strerror(Int32(code))))" }
}

/// Turns an Avahi return code into a Swift error.
@discardableResult
func checkAvahi(_ result: Int32, _ operation: String) throws -> Int32 {
    guard result >= 0 else { throw AvahiError(code: Int(result), operation: operation) }
    return result
}

/// Builds an `AvahiStringList` in record order; the caller frees it with `avahi_string_list_free`.
func makeStringList(_ txt: TXTRecord) -> UnsafeMutablePointer<AvahiStringList>? {
    var list: UnsafeMutablePointer<AvahiStringList>?
    for item in txt.strings { list = avahi_string_list_add(list, item) }
    return avahi_string_list_reverse(list)
}

/// Reads an `AvahiStringList` into TXT strings, in record order.
func readStringList(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
    var result: [String] = []
    var node = list
    while let current = node {
        let size = avahi_string_list_get_size(current)
        if let text = avahi_string_list_get_text(current) {
            let bytes = UnsafeBufferPointer(start: text, count: size)
            result.append(String(decoding: bytes, as: UTF8.self))
        }
        node = avahi_string_list_get_next(current)
    }
    return result
}

/// A `timeval` `milliseconds` from now, as Avahi timeouts want it.
func avahiDeadline(afterMilliseconds milliseconds: Int) -> timeval {
    var tv = timeval()
    avahi_elapse_time(&tv, UInt32(milliseconds), 0)
    return tv
}
