import AirPlayReceiver
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers

/// A swift-log handler writing one line per event to stderr.
///
/// Under systemd (`JOURNAL_STREAM` set) each line starts with the syslog priority in angle
/// brackets (`<6>`), which journald turns into the entry's priority, and carries no timestamp
/// since the journal adds one. Elsewhere lines start with an ISO 8601 time and the level.
/// Newlines inside messages or metadata are escaped so one event is always one line.
public struct JournalAwareLogHandler: LogHandler {
    /// Metadata attached to every line of this logger (e.g. `peer`).
    public var metadata: Logger.Metadata = [:]
    /// The least severe level written.
    public var logLevel: Logger.Level
    private let label: String
    private let journal: Bool
    private let output: @Sendable (String) -> Void

    /// A handler; `journal` defaults to whether stderr is connected to the journal.
    public init(label: String, level: Logger.Level, journal: Bool? = nil,
                output: @escaping @Sendable (String) -> Void = JournalAwareLogHandler.writeToStandardError) {
        self.label = label
        self.logLevel = level
        self.journal = journal ?? (ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil)
        self.output = output
    }

    /// Reads or sets one metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Formats and writes one event.
    public func log(event: LogEvent) {
        emit(level: event.level, message: event.message, metadata: event.metadata)
    }

    /// Formats and writes one event (the entry point of swift-log before `LogEvent`).
    public func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        emit(level: level, message: message, metadata: explicit)
    }

    private func emit(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?) {
        var merged = metadata
        if let explicit { merged.merge(explicit) { _, new in new } }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.quote("\($0.value)"))" }
        let text = ([Self.escape("\(message)")] + fields).joined(separator: " ")
        if journal {
            output("<\(Self.syslogPriority(level))>\(text)\n")
        } else {
            output("\(Self.timestamp()) \(level.rawValue.uppercased()) \(label): \(text)\n")
        }
    }

    /// The syslog priority journald reads from the `<N>` prefix.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Writes to stderr without buffering, so lines interleave correctly across threads.
    public static let writeToStandardError: @Sendable (String) -> Void = { text in
        lock.withLock {
            var bytes = Array(text.utf8)
            bytes.withUnsafeMutableBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    private static let lock = NIOLock()

    /// Backslash, line ends (and, when quoting, double quotes) escaped, one pass over the bytes.
    private static func escape(_ text: String, quotes: Bool = false) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x0A || $0 == 0x0D || (quotes && $0 == 0x22) }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
            switch byte {
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x22 where quotes: out += [0x5C, 0x22]
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func quote(_ text: String) -> String {
        guard text.contains(" ") || text.isEmpty else { return escape(text) }
        return "\"\(escape(text, quotes: true))\""
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))T"
            + "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2)).\(padded(now.tv_nsec / 1_000_000, 3))Z"
    }
}
