import AirPlayHLS
import AirPlayWire
import AirPlayPlist
import AirPlaySender
import ArgumentParser
import Foundation
import NIOCore

/// Options every receiver command shares.
struct ReceiverOptions: ParsableArguments {
    @Option(name: .long, help: "Receiver: a name, a device id, or HOST:PORT. Default: the best video receiver found.")
    var to: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false
}

/// Exit codes (sysexits.h) that tell failures apart.
enum ExitStatus {
    static let notFound: Int32 = 69       // EX_UNAVAILABLE: no such receiver / none reachable
    static let badInput: Int32 = 65       // EX_DATAERR: unusable file, URL or argument
    static let connectionLost: Int32 = 74 // EX_IOERR: the connection broke
    static let refused: Int32 = 77        // EX_NOPERM: the receiver refused (4xx/5xx, authentication)

    static func code(for error: SenderError) -> Int32 {
        switch error.kind {
        case .notFound: notFound
        case .badInput: badInput
        case .connectionLost: connectionLost
        case .refused: refused
        }
    }
}

/// Runs a receiver command: resolves the target, connects, pair-verifies when paired with it
/// (`secure`), reports errors with the right exit code.
func withReceiver(_ options: ReceiverOptions, needVideo: Bool = true, secure: Bool = true, transient: Bool = false,
                  _ body: (ReceiverAddress, ReceiverConnection, SessionStore) async throws(SenderError) -> Void) async throws {
    let store = SessionStore()
    do {
        let address = try ReceiverResolver.resolve(options.to, needVideo: needVideo, choose: askOnTerminal)
        let connection = try await ReceiverConnection.connect(host: address.host, port: address.port)
        defer { Task { await connection.close() } }
        if secure { try await ReceiverLinks.secure(connection, to: address, transient: transient) }
        try await body(address, connection, store)
    } catch {
        if options.json {
            print(jsonLine(["ok": false, "error": error.message, "kind": "\(error.kind)"]))
        }
        FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
        throw ExitCode(ExitStatus.code(for: error))
    }
}

/// Asks which receiver to use when stdin is a terminal.
func askOnTerminal(_ receivers: [DiscoveredReceiver]) -> DiscoveredReceiver? {
    guard isatty(0) == 1, isatty(2) == 1 else { return nil }
    FileHandle.standardError.write(Data("Several receivers fit:\n".utf8))
    for (index, receiver) in receivers.enumerated() {
        FileHandle.standardError.write(Data("  \(index + 1)) \(receiver.name)  \(receiver.address ?? "?"):\(receiver.port)\n".utf8))
    }
    FileHandle.standardError.write(Data("Which one? ".utf8))
    guard let line = readLine(), let choice = Int(line.trimmingCharacters(in: .whitespaces)),
          (1...receivers.count).contains(choice) else { return nil }
    return receivers[choice - 1]
}

func jsonLine(_ object: [String: Any]) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
}

/// The remote for the last session played on this receiver (or a fresh id when there is none).
func remote(_ address: ReceiverAddress, _ connection: ReceiverConnection, _ store: SessionStore) -> VideoRemote {
    VideoRemote(connection: connection, sessionID: store.session(for: address.key) ?? UUID().uuidString)
}

func done(_ options: ReceiverOptions, _ text: String, _ extra: [String: Any] = [:]) {
    if options.json {
        var object = extra
        object["ok"] = true
        print(jsonLine(object))
    } else {
        print(text)
    }
}

/// `airplay play URL|FILE`: plays a URL, or serves a local file or folder and plays it.
struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "play",
        abstract: "Play a URL, or a local file or HLS folder (served from this machine), on a receiver.")

    @Argument(help: "An http(s) URL, a media file, or a folder with an .m3u8 playlist.")
    var media: String

    @Option(name: .long, help: "Start at this many seconds.")
    var start: Double = 0

    @Flag(name: .long, help: "Wait until playback ends, printing events (always on for local files).")
    var wait = false

    @Option(name: .long, help: "For an HLS master playlist: play the best variant matching this qualifier, e.g. \"peakBitRate < 5000000\". (--header values also go to the receiver, for its playlist and key requests.)")
    var prefer: String?

    @OptionGroup var http: HTTPHeaderOptions

    @Option(name: .long, help: "A command that prints the 16-byte key (raw, or 32 hex digits) for a custom-scheme key URI given as its argument; the receiver asks for such keys over the event channel.")
    var keyCommand: String?

    @Option(name: .customLong("protocol"),
            help: "1 (/play and /reverse) or 2 (AirPlay 2: pairing, SETUP, /play on the encrypted connection). Default: 2 where the receiver advertises it.")
    var protocolVersion: Int?

    @Option(name: .long, help: "How a local HLS video's playlists reach the receiver: url (served from here, any receiver), fcup (handed over as an iPhone's YouTube app does: mlhls://, each playlist asked for over the event channel; UxPlay, Apple TVs, airplayd) or auto (the default: fcup where the receiver advertises video, HLS and FairPlay setup or AirPlay 2 pairing, else url; url with --prefer or --key-command).")
    var playlists: String = "auto"

    @OptionGroup var options: ReceiverOptions

    func validate() throws {
        guard protocolVersion == nil || [1, 2].contains(protocolVersion!) else { throw ValidationError("--protocol must be 1 or 2") }
        guard VideoPlaySession.PlaylistDelivery(rawValue: playlists) != nil else { throw ValidationError("--playlists must be auto, url or fcup") }
    }

    func run() async throws {
        try await withReceiver(options, transient: protocolVersion == 2) { address, connection, store throws(SenderError) in
            let airPlay2 = ReceiverLinks.speaksAirPlay2(protocolVersion, address: address, connection: connection)
            let headers: [String: String]
            do { headers = try http.parsed() } catch { throw SenderError(.badInput, "\(error)") }
            var request = VideoPlaySession.Request(media: media, start: start, headers: headers, caFile: http.caFile,
                                                   keys: keyCommand.map(KeyCommand.provider), wait: wait)
            request.playlists = VideoPlaySession.PlaylistDelivery(rawValue: playlists) ?? .auto
            if let prefer { request.prefer = (try HLSSource.qualifier(prefer), prefer) }
            let options = self.options
            try await VideoPlaySession(address: address, connection: connection, airPlay2: airPlay2).run(request) { report in
                switch report {
                case .variant(let index, let uri, let rate):
                    if !options.json { print("variant \(index): \(uri) (\(PlaylistReport.rate(rate)))") }
                case .playing(let url, let sessionID):
                    store.save(session: sessionID, for: address.key)
                    done(options, "playing \(url) on \(address.name) (session \(sessionID))",
                         ["url": url, "receiver": address.name, "session": sessionID])
                case .event(let state):
                    if options.json { print(jsonLine(["event": state])) } else { print("event: \(state)") }
                }
                fflush(nil)
            }
        }
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause the video.")
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).setRate(0)
            done(options, "paused")
        }
    }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume the video.")
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).setRate(1)
            done(options, "playing")
        }
    }
}

struct SeekCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "seek", abstract: "Jump to a position in seconds.")
    @Argument(help: "Position in seconds.") var seconds: Double
    @OptionGroup var options: ReceiverOptions
    func validate() throws { guard seconds >= 0, seconds.isFinite else { throw ValidationError("SECONDS must be >= 0") } }
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).seek(to: seconds)
            done(options, "at \(formatTime(seconds))", ["position": seconds])
        }
    }
}

struct SkipCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "skip",
        abstract: "Skip forward or back by an interval (+15 / -15, the preferred interval).")
    // Captured raw so that "-15" is read as a number, not as short options.
    @Argument(parsing: .allUnrecognized, help: "Seconds to skip, signed: +15 (default) or -15.") var interval: [String] = []
    @OptionGroup var options: ReceiverOptions
    func validate() throws {
        guard interval.count <= 1, interval.allSatisfy({ Double($0) != nil }) else {
            throw ValidationError("INTERVAL must be one signed number like +15 or -15")
        }
    }
    func run() async throws {
        let delta = interval.first.flatMap(Double.init) ?? 15
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            let remote = remote(address, connection, store)
            let now = try await remote.scrub()
            let target = min(max(0, now.position + delta), now.duration > 0 ? now.duration : .infinity)
            try await remote.seek(to: target)
            done(options, "at \(formatTime(target))", ["position": target])
        }
    }
}

struct RateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rate", abstract: "Set the playback rate (0 pauses, 1 plays).")
    @Argument(help: "The rate.") var rate: Double
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).setRate(rate)
            done(options, "rate \(rate)", ["rate": rate])
        }
    }
}

struct StopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the video.")
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).stop()
            done(options, "stopped")
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show what the receiver plays.")
    @Flag(name: .long, help: "Keep showing a live progress line until playback stops.") var watch = false
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            let remote = remote(address, connection, store)
            let live = watch && isatty(1) == 1 && !options.json
            while true {
                let info = try await remote.playbackInfo()
                var object: [String: Any] = ["state": info.state, "position": info.position, "duration": info.duration ?? NSNull(),
                                             "rate": info.rate, "error": info.error ?? NSNull()]
                if !info.renditions.isEmpty {
                    object["renditions"] = info.renditions.map { rendition -> [String: Any] in
                        let language: Any = rendition.language ?? NSNull()
                        return ["type": rendition.type, "name": rendition.name, "language": language, "selected": rendition.selected]
                    }
                }
                if let variant = info.variant {
                    let resolution: Any = variant.resolution ?? NSNull()
                    object["variant"] = ["index": variant.index, "bandwidth": variant.bandwidth, "resolution": resolution] as [String: Any]
                }
                if options.json {
                    print(jsonLine(object))
                } else {
                    var line = progressLine(info)
                    if let variant = info.variant { line += "  [variant \(variant.index)\(variant.resolution.map { " \($0)" } ?? "")]" }
                    let chosen = info.renditions.filter(\.selected).map { "\($0.type.lowercased()) \($0.language ?? $0.name)" }
                    if !chosen.isEmpty, !live { line += "  " + chosen.joined(separator: ", ") }
                    if live { FileHandle.standardOutput.write(Data("\r\u{1B}[2K\(line)".utf8)) } else { print(line) }
                }
                guard watch, info.state != "stopped", info.state != "failed" else { break }
                try? await Task.sleep(for: .seconds(1))
            }
            if live { print("") }
        }
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "events",
        abstract: "Print the receiver's events for the last session as they come.")
    @OptionGroup var options: ReceiverOptions
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            let session = store.session(for: address.key) ?? UUID().uuidString
            let listener = try await EventListener.open(host: address.host, port: address.port, sessionID: session) { event in
                var object: [String: Any] = [:]
                if case .dictionary(let dictionary) = event {
                    for (key, value) in dictionary {
                        if let text = value.stringValue {
                            object[key] = text
                        } else if let number = value.integerValue {
                            object[key] = Int(number)
                        } else {
                            object[key] = "\(value)"
                        }
                    }
                }
                if options.json { print(jsonLine(object)) } else { print("\(object["category"] ?? "?") \(object["state"] ?? "?")") }
                fflush(nil)
            }
            await listener.waitUntilClosed()
        }
    }
}

struct VolumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "volume", abstract: "Set the video volume, 0 to 100.")
    @Argument(help: "Volume 0-100.") var volume: Double
    @OptionGroup var options: ReceiverOptions
    func validate() throws { guard (0...100).contains(volume) else { throw ValidationError("VOLUME must be 0 to 100") } }
    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).setVolume(volume / 100)
            done(options, "volume \(Int(volume))", ["volume": volume])
        }
    }
}

func formatTime(_ seconds: Double) -> String {
    guard seconds.isFinite else { return "--:--" }
    let total = Int(seconds.rounded(.down))
    return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
        : String(format: "%02d:%02d", total / 60, total % 60)
}

/// `[=======>      ] 00:12 / 01:30  playing`.
func progressLine(_ info: PlaybackInfo) -> String {
    guard let duration = info.duration, duration > 0 else { return info.error.map { "failed: \($0)" } ?? info.state }
    let width = 30
    let filled = min(width, Int(Double(width) * info.position / duration))
    let bar = String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1))
    return "[\(bar)] \(formatTime(info.position)) / \(formatTime(duration))  \(info.state)"
}

/// `--key-command CMD`: keys for custom-scheme URIs from a program of the user's (the seeds'
/// case of keys an app resolves itself). Run as `sh -c CMD sh URI`, so the URI is `$1`; its
/// output is the key, raw or as 32 hex digits; 8 s at most.
enum KeyCommand {
    static func provider(_ command: String) -> KeyProvider {
        { uri in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command, "sh", uri]
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            do {
                try process.run()
            } catch {
                return .failure(SenderError(.badInput, "--key-command cannot run: \(error)"))
            }
            // Read while it runs: a command that prints a lot must not block on a full pipe.
            let collected = Task.detached { [UInt8](output.fileHandleForReading.readDataToEndOfFile()) }
            let deadline = Date().addingTimeInterval(8)
            while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning {
                process.terminate()
                return .failure(SenderError(.badInput, "--key-command took more than 8 s for \(uri)"))
            }
            let bytes = await collected.value
            guard process.terminationStatus == 0 else {
                let reason = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                return .failure(SenderError(.badInput, "--key-command failed for \(uri): \(reason.trimmingCharacters(in: .whitespacesAndNewlines))"))
            }
            if bytes.count == 16 { return .success(bytes) }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let hex = text.hasPrefix("0x") ? String(text.dropFirst(2)) : text
            guard hex.count == 32, let key = stride(from: 0, to: 32, by: 2).map({ index -> UInt8? in
                let start = hex.index(hex.startIndex, offsetBy: index)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
            }) as [UInt8?]?, key.allSatisfy({ $0 != nil }) else {
                return .failure(SenderError(.badInput, "--key-command printed neither 16 bytes nor 32 hex digits for \(uri)"))
            }
            return .success(key.compactMap { $0 })
        }
    }
}

/// `airplay select --audio LANG --subtitles LANG|off`: switches HLS renditions on the receiver.
struct SelectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "select",
        abstract: "Choose the audio language and subtitles of the HLS video playing (see them with airplay status).")
    @Option(name: .long, help: "Audio language, e.g. fr.") var audio: String?
    @Option(name: .long, help: "Subtitle language, or off.") var subtitles: String?
    @OptionGroup var options: ReceiverOptions

    func validate() throws {
        guard audio != nil || subtitles != nil else { throw ValidationError("give --audio and/or --subtitles") }
    }

    func run() async throws {
        try await withReceiver(options) { address, connection, store throws(SenderError) in
            try await remote(address, connection, store).selectRenditions(audio: audio, subtitles: subtitles)
            done(options, "selected" + (audio.map { " audio \($0)" } ?? "") + (subtitles.map { " subtitles \($0)" } ?? ""))
        }
    }
}
