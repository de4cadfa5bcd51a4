import AirPlaySender
import AirPlayWire
import Foundation

/// Keys on a terminal, read without echo or line buffering: space, +, -, n, p, q.
final class KeyReader: @unchecked Sendable {
    private var saved = termios()

    init(_ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) {
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
        let thread = Thread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) == 1 {
                switch byte {
                case UInt8(ascii: " "): continuation.yield(.togglePause)
                case UInt8(ascii: "+"), UInt8(ascii: "="): continuation.yield(.volume(5))
                case UInt8(ascii: "-"): continuation.yield(.volume(-5))
                case UInt8(ascii: "q"), UInt8(ascii: "Q"): continuation.yield(.quit)
                case UInt8(ascii: "n"): continuation.yield(.skip(1))
                case UInt8(ascii: "p"): continuation.yield(.skip(-1))
                default: continue
                }
            }
        }
        thread.start()
    }

    /// Gives the terminal back as it was.
    func restore() { tcsetattr(0, TCSANOW, &saved) }
}

/// Ctrl-C and SIGTERM end the stream with a clean TEARDOWN instead of killing the process.
final class InterruptWatch: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(_ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(.quit) }
            source.resume()
            return source
        }
    }

    func cancel() { for source in sources { source.cancel() } }
}

/// What the user sees: a live line on a terminal, plain lines otherwise, or JSON lines.
final class StreamDisplay: @unchecked Sendable {
    private let json: Bool
    private let live = isatty(1) == 1
    private var title = ""
    private var receivers = ""
    private var duration: Double?

    init(json: Bool) { self.json = json }

    func started(title: String, artist: String?, receivers: [String], duration: Double?) {
        self.title = artist.map { "\($0) – \(title)" } ?? title
        self.receivers = receivers.joined(separator: ", ")
        self.duration = duration
        if json {
            emit(["event": "started", "title": title, "artist": artist ?? NSNull(), "receivers": receivers,
                  "duration": duration ?? NSNull()])
        } else {
            print("streaming \(self.title) to \(self.receivers)")
        }
        fflush(nil)
    }

    func progress(elapsed: Double, paused: Bool, volume: Double) {
        let shown = max(0, elapsed)
        if json {
            // Once a second for the whole stream: our own JSON writer, not Foundation's.
            let line: JSONValue = ["event": "progress", "elapsed": .number((shown * 10).rounded() / 10), "state": .string(paused ? "paused" : "playing")]
            print(String(decoding: line.bytes, as: UTF8.self))
        } else if live {
            let total = duration.map { " / \(Self.clock($0))" } ?? ""
            print("\r\u{1B}[K\(paused ? "⏸" : "▶") \(title)  \(Self.clock(shown))\(total)  → \(receivers)  vol \(Int(volume))",
                  terminator: "")
        }
        fflush(nil)
    }

    func state(_ text: String) {
        if json { emit(["event": "state", "state": text]) } else if !live { print(text) }
        fflush(nil)
    }

    func warn(_ text: String) {
        FileHandle.standardError.write(Data("airplay: warning: \(text)\n".utf8))
    }

    func finish(_ summary: [String: Any]) {
        if live && !json { print("") }
        var object = summary
        object["ok"] = true
        if json {
            emit(object)
        } else {
            let seconds = summary["seconds"] as? Double ?? 0
            var line = String(format: "streamed %.1f s (%d packets resent)", seconds, summary["resent"] as? Int ?? 0)
            if let skew = summary["skewBoundMs"] as? Double { line += String(format: "; receivers within %.2f ms of each other", skew) }
            print(line)
        }
        fflush(nil)
    }

    func fail(_ message: String, kind: String) {
        if live && !json { print("") }
        if json { emit(["ok": false, "error": message, "kind": kind]) }
        FileHandle.standardError.write(Data("airplay: \(message)\n".utf8))
        fflush(nil)
    }

    private func emit(_ object: [String: Any]) { print(jsonLine(object)) }

    static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds)
        return String(format: "%d:%02d", whole / 60, whole % 60)
    }
}
