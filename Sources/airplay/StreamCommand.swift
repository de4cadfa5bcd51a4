import AirPlayCrypto
import AirPlaySender
import AirPlayWire
import ArgumentParser
import Foundation
import GStreamerMedia

/// `airplay stream FILE|-`: plays local audio on one or more AirPlay (RAOP) speakers.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stream",
        abstract: "Stream audio (any file GStreamer decodes, or WAV/raw PCM on stdin) to AirPlay speakers.",
        discussion: """
            Codec and encryption follow each receiver's TXT record: ALAC (compressed) where it is \
            listed, else L16; RSA/AES where `et` lists 1. On a terminal: space pauses and resumes, \
            + and - change the volume, q quits. Exit codes: 69 receiver not found, 77 refused or \
            wrong password, 74 connection lost, 65 unusable input.
            """)

    @Argument(help: "An audio file (WAV, FLAC, MP3, M4A/AAC, Ogg…), or - for WAV or raw S16LE 44.1 kHz stereo on stdin.")
    var file: String

    @Option(name: .long, help: "Receiver: a name, a device id, or HOST:PORT; repeat for several. Default: the one audio receiver found.")
    var to: [String] = []

    @Option(name: .long, help: "Volume 0-100 (default 100: full scale).")
    var volume: Double = 100

    @Option(name: .long, help: "Password for receivers that ask for one.")
    var password: String?

    @Option(name: .long, help: "Start this many seconds into the file.")
    var start: Double = 0

    @Flag(name: .long, help: "Print JSON lines (events, then a summary) instead of text.")
    var json = false

    func validate() throws {
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be 0 to 100") }
        guard start >= 0, start.isFinite else { throw ValidationError("--start must be 0 or more seconds") }
        guard file != "-" || start == 0 else { throw ValidationError("--start needs a file, not standard input") }
    }

    /// AirPlay volume: -30 dB (1 %) … 0 dB (100 %), -144 mutes.
    static func decibels(_ volume: Double) -> Double { volume <= 0 ? -144 : -30 + 30 * volume / 100 }

    func run() async throws {
        // A reader that goes away (a closed stdout, a failed stdin pipeline) is an error to
        // report, not a signal that kills us.
        signal(SIGPIPE, SIG_IGN)
        let display = StreamDisplay(json: json)
        let source: GStreamerPCMSource
        do {
            source = file == "-" ? try GStreamerPCMSource.standardInput() : try GStreamerPCMSource(path: file, start: start)
        } catch {
            display.fail("\(file == "-" ? "standard input" : file): \(error.message)", kind: "badInput")
            throw ExitCode(ExitStatus.badInput)
        }
        do {
            let summary = try await stream(source, display: display)
            display.finish(summary)
        } catch {
            display.fail(error.message, kind: "\(error.kind)")
            throw ExitCode(ExitStatus.code(for: error))
        }
    }

    private func stream(_ source: GStreamerPCMSource, display: StreamDisplay) async throws(SenderError) -> [String: Any] {
        var addresses: [ReceiverAddress] = []
        for target in to.isEmpty ? [nil] : to.map(Optional.some) {
            addresses.append(try ReceiverResolver.resolve(target, needVideo: false, choose: askOnTerminal))
        }
        let crypto = try? RAOPSenderCrypto()
        let identity = RAOPClientIdentity()
        var links: [RAOPLink] = []
        for address in addresses {
            let connection = try await ReceiverConnection.connect(host: address.host, port: address.port)
            let traits = address.raopTXT.map { RAOPReceiverTraits(txt: $0, deviceID: address.deviceID?.bytes) } ?? RAOPReceiverTraits()
            links.append(RAOPLink(name: address.name, connection: connection, traits: traits, identity: identity,
                                  password: password, crypto: crypto))
        }
        let start = Self.rtpStart()
        var volume = self.volume
        do {
            for link in links {
                try await link.setUp(sequence: start.sequence, rtpTime: start.timestamp, volumeDecibels: Self.decibels(volume),
                                     warn: display.warn)
            }
        } catch {
            for link in links { await link.tearDown() }
            throw error
        }
        let streamer = RAOPStreamer(links: links, firstSequence: start.sequence, firstTimestamp: start.timestamp)
        let tags = source.tags
        let title = tags.title ?? (file == "-" ? "standard input" : (file as NSString).lastPathComponent)
        var item = DMAP.Item()
        item.title = title
        item.artist = tags.artist
        item.album = tags.album
        item.genre = tags.genre
        item.durationMilliseconds = tags.duration.map { Int(max(0, $0 - self.start) * 1000) }
        let artwork = tags.artwork.flatMap { bytes in tags.artworkType.map { (type: $0, bytes: bytes) } }
        // progress: start/current/end in RTP time; the file's first frame is `start` seconds before ours.
        let trackStart = start.timestamp &- UInt32(truncatingIfNeeded: Int64(self.start * 44100))
        let progress = { (current: UInt32) -> (UInt32, UInt32, UInt32)? in
            tags.duration.map { (trackStart, current, trackStart &+ UInt32(truncatingIfNeeded: Int64(min($0, 1e9) * 44100))) }
        }
        for link in links {
            await link.sendMetadata(item, artwork: artwork, progress: progress(start.timestamp), rtpTime: start.timestamp)
        }
        display.started(title: title, artist: tags.artist, receivers: links.map { "\($0.name) (\($0.codec.rawValue)\($0.encryptor == nil ? "" : ", RSA"))" },
                        duration: tags.duration.map { max(0, $0 - self.start) })

        let (events, continuation) = AsyncStream.makeStream(of: StreamEvent.self)
        let keys = file != "-" && isatty(0) == 1 ? KeyReader(continuation) : nil
        defer { keys?.restore() }
        let interrupts = InterruptWatch(continuation)
        defer { interrupts.cancel() }
        let player = Thread {
            streamer.play(read: { source.read(frames: RAOPStreamer.framesPerPacket) })
            continuation.yield(.ended)
        }
        player.start()
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                continuation.yield(.tick)
            }
        }
        defer { ticker.cancel() }

        var ticks = 0, failure: SenderError?, quitEarly = false
        loop: for await event in events {
            do throws(SenderError) {
                switch event {
                case .tick:
                    ticks += 1
                    display.progress(elapsed: Double(streamer.framesSent) / 44100 - RAOPStreamer.latencySeconds, paused: streamer.isPaused,
                                     volume: volume)
                    if ticks % 2 == 0 { for link in links { try await link.keepAlive(volumeDecibels: Self.decibels(volume)) } }
                case .togglePause:
                    if streamer.isPaused {
                        let point = streamer.nextPoint
                        for link in links { try await link.record(sequence: point.sequence, rtpTime: point.timestamp) }
                        streamer.resume()
                        for link in links {
                            await link.sendMetadata(item, artwork: artwork, progress: progress(point.timestamp), rtpTime: point.timestamp)
                        }
                        display.state("playing")
                    } else if let point = streamer.pause() {
                        for link in links { try await link.flush(sequence: point.sequence, rtpTime: point.timestamp) }
                        display.state("paused")
                    }
                case .volume(let change):
                    volume = min(100, max(0, volume + change))
                    for link in links { try await link.setVolume(decibels: Self.decibels(volume)) }
                    display.state("volume \(Int(volume))")
                case .quit:
                    quitEarly = true
                    streamer.stop()
                    break loop
                case .ended:
                    // Let the receivers play out their latency before they are told to stop.
                    try? await Task.sleep(for: .seconds(RAOPStreamer.latencySeconds + 0.5))
                    break loop
                }
            } catch {
                failure = error
                streamer.stop()
                break loop
            }
        }
        for link in links { await link.tearDown() }
        if let failure { throw failure }
        let seconds = Double(streamer.framesSent) / 44100
        var timing: [[String: Any]] = []
        for link in links {
            let best = link.roundTrips.withLockedValue { $0.min() }
            timing.append(["receiver": link.name, "codec": link.codec.rawValue, "encrypted": link.encryptor != nil,
                           "resent": link.resent.withLockedValue { $0 },
                           "roundTripMs": best.map { ($0 * 100_000).rounded() / 100 } ?? NSNull()])
        }
        let known = links.compactMap { $0.roundTrips.withLockedValue { $0.min() } }
        var summary: [String: Any] = ["seconds": (seconds * 10).rounded() / 10, "receivers": timing, "quit": quitEarly,
                                      "resent": links.reduce(0) { $0 + $1.resent.withLockedValue { $0 } }]
        // Each receiver sets its clock from timing exchanges with us; half the best round trip
        // bounds how far its idea of our clock (and so its playback) can be off, so two receivers
        // are within the sum of theirs.
        if links.count > 1 {
            summary["skewBoundMs"] = known.count == links.count ? ((known.sorted().suffix(2).reduce(0, +) / 2) * 100_000).rounded() / 100 : NSNull()
        }
        return summary
    }

    /// A random RTP starting point (RTP wants one); `AIRPLAY_RTP_START=SEQ:TIME` fixes it, so
    /// tests can start just before both counters wrap.
    static func rtpStart() -> (sequence: UInt16, timestamp: UInt32) {
        if let text = ProcessInfo.processInfo.environment["AIRPLAY_RTP_START"] {
            let parts = text.split(separator: ":")
            if parts.count == 2, let sequence = UInt16(parts[0]), let timestamp = UInt32(parts[1]) { return (sequence, timestamp) }
        }
        return (UInt16.random(in: 0...UInt16.max), UInt32.random(in: 0...UInt32.max))
    }
}

/// What happens while streaming, in the order the control loop handles it.
enum StreamEvent: Sendable {
    case tick
    case togglePause
    case volume(Double)
    case quit
    case ended
}

/// Keys on a terminal, read without echo or line buffering: space, +, -, q.
final class KeyReader: @unchecked Sendable {
    private var saved = termios()

    init(_ continuation: AsyncStream<StreamEvent>.Continuation) {
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

    init(_ continuation: AsyncStream<StreamEvent>.Continuation) {
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
            emit(["event": "progress", "elapsed": (shown * 10).rounded() / 10, "state": paused ? "paused" : "playing"])
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
