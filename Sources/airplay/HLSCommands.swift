import AirPlayHLS
import AirPlayHTTP
import AirPlaySender
import ArgumentParser
import Foundation

/// `airplay hls …`: tools for HTTP Live Streaming playlists.
struct HLSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hls", abstract: "Inspect and download HLS presentations.",
                                                    subcommands: [InspectCommand.self, DownloadCommand.self])
}

/// Headers to send with every HLS request (cookies, authorization), and an extra CA to trust.
struct HTTPHeaderOptions: ParsableArguments {
    @Option(name: .customLong("header"), help: "An HTTP header for every request, e.g. \"Cookie: session=…\" (repeatable).")
    var headers: [String] = []

    @Option(name: .customLong("ca-file"), help: "A PEM file of certificate authorities to trust besides the system's.")
    var caFile: String?

    /// The headers as a dictionary.
    func parsed() throws -> [String: String] {
        var result: [String: String] = [:]
        for header in headers {
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, !parts[0].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ValidationError("--header wants \"Name: value\", got \(header)")
            }
            result[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        return result
    }
}

/// `airplay hls inspect URL`: the variants, renditions and keys of a master playlist.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "inspect",
        abstract: "Show the variants (with 4K, HDR, Dolby Vision, Atmos badges), renditions and keys of an HLS master playlist.")

    @Argument(help: "An http(s) URL of a master (or media) playlist, or a local .m3u8 file.")
    var url: String

    @Option(name: .long, help: "Mark the variants matching a qualifier, e.g. \"videoRange == PQ && peakBitRate < 5000000\".")
    var prefer: String?

    @OptionGroup var http: HTTPHeaderOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .long, help: "Also print how long parsing took and the peak memory (for tools/bench/hls).")
    var stats = false

    func run() async throws {
        do {
            let qualifier = try prefer.map { text throws(SenderError) in try HLSSource.qualifier(text) }
            var parseTime = Duration.zero
            let headers: [String: String]
            do { headers = try http.parsed() } catch { throw SenderError(.badInput, "\(error)") }
            let (playlist, _) = try await HLSSource.load(url, headers: headers, caFile: http.caFile, parseTime: &parseTime)
            if stats {
                let milliseconds = Double(parseTime.components.attoseconds) / 1e15 + Double(parseTime.components.seconds) * 1000
                FileHandle.standardError.write(Data(String(format: "parse_ms=%.3f peak_rss_kib=%d\n", milliseconds, Self.peakRSS()).utf8))
            }
            guard case .master(let master) = playlist else {
                guard case .media(let media) = playlist else { return }
                let encrypted = media.segments.filter { !$0.keys.isEmpty }.count
                if json {
                    print(jsonLine(["ok": true, "kind": "media", "segments": media.segments.count, "duration": media.duration,
                                    "encryptedSegments": encrypted, "endList": media.endList]))
                } else {
                    print(String(format: "media playlist: %d segments, %.1f s%@%@", media.segments.count, media.duration,
                                 encrypted > 0 ? ", \(encrypted) encrypted" : "", media.endList ? "" : ", live"))
                }
                return
            }
            let report = PlaylistReport(master)
            let best = qualifier.map { VariantQualifier.best(report.variants, matching: $0) }
            if json {
                var object = report.json
                object["ok"] = true
                object["kind"] = "master"
                if let best { object["preferred"] = best?.index ?? NSNull() }
                print(jsonLine(object))
            } else {
                print(report.text)
                if let best {
                    print("")
                    print(best.map { "preferred: variant \($0.index) (\($0.variant.uri))" } ?? "preferred: no variant matches")
                }
            }
        } catch let error as SenderError {
            if json { print(jsonLine(["ok": false, "error": error.message])) }
            FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.code(for: error))
        }
    }
}

/// `airplay hls download URL --out DIR`: an offline copy that `airplay play DIR` plays.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download",
        abstract: "Download an HLS presentation for offline play: a variant, audio and subtitle renditions, and keys.",
        discussion: "Run it again to resume: finished files are kept, a partial one is continued. Then: airplay play DIR.")

    @Argument(help: "The master playlist's http(s) URL.")
    var url: String

    @Option(name: .long, help: "The variant: the best one matching this qualifier (default: the best one).")
    var prefer: String?

    @Option(name: .long, help: "Audio languages to keep, e.g. en,fr (default: the default rendition).")
    var audio: String?

    @Option(name: .long, help: "Subtitle languages to keep, e.g. en.")
    var subtitles: String?

    @Option(name: .long, help: "Also the audio of the best variant matching this qualifier (e.g. \"audio.codec == alac\"); its video is not downloaded twice.")
    var auxAudio: String?

    @Option(name: .long, help: "The folder to write.")
    var out: String

    @Option(name: .long, help: "A command printing the key for a custom-scheme key URI ($1).")
    var keyCommand: String?

    @OptionGroup var http: HTTPHeaderOptions

    @Flag(name: .long, help: "Print JSON lines (progress events, then a summary).")
    var json = false

    func run() async throws {
        do {
            guard let source = URL(string: url), HTTPClient.isFetchable(url) else {
                throw SenderError(.badInput, "\(url) is not an http(s) URL")
            }
            let selection = HLSDownloader.Selection(
                primary: try prefer.map { text throws(SenderError) in try HLSSource.qualifier(text) },
                audioLanguages: audio.map { $0.split(separator: ",").map(String.init) } ?? [],
                subtitleLanguages: subtitles.map { $0.split(separator: ",").map(String.init) } ?? [],
                auxiliaryAudio: try auxAudio.map { text throws(SenderError) in try HLSSource.qualifier(text) })
            let headers: [String: String]
            do { headers = try http.parsed() } catch { throw SenderError(.badInput, "\(error)") }
            let downloader = HLSDownloader(output: URL(fileURLWithPath: out),
                                           options: .init(headers: headers, caFile: http.caFile),
                                           keyProvider: keyCommand.map(KeyCommand.provider))
            let live = isatty(1) == 1 && !json
            let json = self.json
            let master = try await downloader.download(source, selection: selection) { progress in
                let rate = progress.elapsed > 0 ? Double(progress.bytes) / progress.elapsed : 0
                if json {
                    print(jsonLine(["event": "progress", "files": progress.files, "done": progress.filesDone, "bytes": progress.bytes,
                                    "skipped": progress.skipped, "bytesPerSecond": Int(rate)]))
                } else if live {
                    let share = progress.files == 0 ? 1 : Double(progress.filesDone) / Double(progress.files)
                    let bar = String(repeating: "=", count: Int(share * 30)).padding(toLength: 30, withPad: " ", startingAt: 0)
                    print(String(format: "\r\u{1B}[K[%@] %3d%%  %d/%d files  %.1f MB  %.1f MB/s%@", bar, Int(share * 100), progress.filesDone,
                                 progress.files, Double(progress.bytes) / 1e6, rate / 1e6,
                                 progress.skipped > 0 ? "  (\(progress.skipped) kept from before)" : ""), terminator: "")
                }
                fflush(nil)
            }
            if live { print("") }
            if json {
                print(jsonLine(["ok": true, "master": master.path]))
            } else {
                print("downloaded to \(master.deletingLastPathComponent().path); play it with: airplay play \(master.deletingLastPathComponent().path)")
            }
        } catch let error as SenderError {
            if json { print(jsonLine(["ok": false, "error": error.message])) }
            FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.code(for: error))
        }
    }
}

extension InspectCommand {
    /// VmHWM of this process in KiB.
    static func peakRSS() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
