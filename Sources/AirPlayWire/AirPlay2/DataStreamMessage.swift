/// One message of an AirPlay 2 data stream (a type-130 stream, `Protocol/airplay2.md` §18), both
/// ways: a 32-byte header, then the payload (a binary plist, or nothing in a reply).
///
/// The header, big-endian: the message's whole size (header included, 4 bytes), its type (12
/// bytes: `sync` or `rply` and eight NULs), a command (4 bytes: `comm` in a `sync`, NULs in a
/// `rply`), a sequence number (8 bytes: a reply repeats its request's) and 4 bytes of zero.
/// Every `sync` is answered with a `rply` of the same number and no payload.
public struct DataStreamMessage: Hashable, Sendable {
    /// The header's size.
    public static let headerLength = 32
    /// The largest message read: an iPhone's now-playing with its cover is about 70 KB.
    public static let maximumLength = 1024 * 1024

    /// `sync` + 8 NULs (a request) or `rply` + 8 NULs (an answer).
    public var messageType: [UInt8]
    /// `comm`, or 4 NULs.
    public var command: [UInt8]
    /// The request's number; a reply repeats it.
    public var sequence: UInt64
    /// The last 4 header bytes (0).
    public var padding: UInt32
    /// The payload.
    public var payload: [UInt8]

    /// A message from its parts.
    public init(messageType: [UInt8], command: [UInt8], sequence: UInt64, padding: UInt32 = 0, payload: [UInt8]) {
        self.messageType = messageType
        self.command = command
        self.sequence = sequence
        self.padding = padding
        self.payload = payload
    }

    /// A request (`sync`, `comm`) carrying `payload`.
    public static func request(sequence: UInt64, payload: [UInt8]) -> DataStreamMessage {
        DataStreamMessage(messageType: Array("sync".utf8) + [UInt8](repeating: 0, count: 8), command: Array("comm".utf8),
                          sequence: sequence, payload: payload)
    }

    /// The answer to request number `sequence`: `rply`, no command, no payload.
    public static func reply(to sequence: UInt64) -> DataStreamMessage {
        DataStreamMessage(messageType: Array("rply".utf8) + [UInt8](repeating: 0, count: 8), command: [0, 0, 0, 0], sequence: sequence, payload: [])
    }

    /// Whether the message asks for a reply (its type starts with `sync`).
    public var isRequest: Bool { messageType.starts(with: Array("sync".utf8)) }

    /// The type's letters without the NULs, for logs.
    public var typeName: String { String(decoding: messageType.prefix { $0 != 0 }, as: UTF8.self) }

    /// The message's bytes.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerLength + payload.count)
        Self.appendBigEndian(UInt64(Self.headerLength + payload.count), bytes: 4, to: &bytes)
        bytes += (messageType + [UInt8](repeating: 0, count: 12)).prefix(12)
        bytes += (command + [0, 0, 0, 0]).prefix(4)
        Self.appendBigEndian(sequence, bytes: 8, to: &bytes)
        Self.appendBigEndian(UInt64(padding), bytes: 4, to: &bytes)
        return bytes + payload
    }

    private static func appendBigEndian(_ value: UInt64, bytes count: Int, to bytes: inout [UInt8]) {
        for shift in stride(from: (count - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// Why data-stream bytes cannot be read: the connection must close (it cannot be resynchronised).
    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// Reads messages from a data stream's (decrypted) bytes as they come, holding at most one
    /// message's worth.
    public struct Reader: Sendable {
        private var pending: [UInt8] = []

        /// A reader with nothing read.
        public init() {}

        /// Bytes waiting for the rest of their message.
        public var pendingCount: Int { pending.count }

        /// The messages `incoming` completes; throws on a size smaller than the header or over
        /// `maximumLength`.
        public mutating func read(_ incoming: [UInt8]) throws(Problem) -> [DataStreamMessage] {
            pending += incoming
            var messages: [DataStreamMessage] = []
            var start = 0
            while pending.count - start >= DataStreamMessage.headerLength {
                let size = Self.bigEndian(pending, at: start, count: 4)
                guard size >= UInt64(DataStreamMessage.headerLength), size <= UInt64(DataStreamMessage.maximumLength) else {
                    pending.removeAll()
                    throw Problem(description: "a data-stream message of \(size) bytes (at least 32, at most \(DataStreamMessage.maximumLength))")
                }
                guard pending.count - start >= Int(size) else { break }
                messages.append(DataStreamMessage(
                    messageType: Array(pending[(start + 4)..<(start + 16)]), command: Array(pending[(start + 16)..<(start + 20)]),
                    sequence: Self.bigEndian(pending, at: start + 20, count: 8),
                    padding: UInt32(truncatingIfNeeded: Self.bigEndian(pending, at: start + 28, count: 4)),
                    payload: Array(pending[(start + 32)..<(start + Int(size))])))
                start += Int(size)
            }
            pending.removeFirst(start)
            return messages
        }

        private static func bigEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> UInt64 {
            bytes[offset..<(offset + count)].reduce(0) { $0 << 8 | UInt64($1) }
        }
    }
}
