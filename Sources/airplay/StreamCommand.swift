import AirPlayCrypto
import AirPlaySender
import AirPlayTiming
import Logging
import AirPlayWire
import ArgumentParser
import Foundation
import AirPlayMedia
import FLACMedia
import GStreamerMedia

/// `airplay stream FILE|-`: plays local audio on one or more AirPlay (RAOP) speakers.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stream",
        abstract: "Stream audio (any file GStreamer decodes, or WAV/raw PCM on stdin) to AirPlay speakers.",
        discussion: """
            Codec and encryption follow each receiver's TXT record: ALAC (compressed) where it is \
            listed, else L16; RSA/AES where `et` lists 1. On a terminal: space pauses and resumes, \
            + and - change the volume, n and p move to the next and previous file, q quits. \
            Receivers control the stream too: their pause, play, next, previous and volume \
            buttons act on it, over AirPlay 2's event channel (sendMediaRemoteCommand) and over \
            the DACP remote control it publishes (_dacp._tcp, iTunes_Ctrl_<DACP-ID>). Exit codes: 69 receiver not found, 77 refused or wrong password, \
            74 connection lost, 65 unusable input.
            """)

    @Argument(help: "Audio files (WAV, FLAC, MP3, M4A/AAC, Ogg…) played in turn, or - for WAV or raw S16LE 44.1 kHz stereo on stdin.")
    var files: [String]

    /// The first file (the only one for standard input).
    var file: String { files.first ?? "-" }

    @Option(name: .long, help: "Receiver: a name, a device id, or HOST:PORT; repeat for several. Default: the one audio receiver found.")
    var to: [String] = []

    @Option(name: .long, help: "Volume 0-100 (default 100: full scale).")
    var volume: Double = 100

    @Option(name: .long, help: "Password for receivers that ask for one.")
    var password: String?

    @Option(name: .long, help: "Start this many seconds into the file.")
    var start: Double = 0

    @Option(name: .customLong("protocol"),
            help: "1 (RAOP) or 2 (AirPlay 2: pairing, plist SETUPs, ChaCha20 audio). Default: 2 where the receiver advertises it.")
    var protocolVersion: Int?

    @Option(name: .long, help: "realtime (default), buffered: AirPlay 2 buffered audio anchored on a PTP clock this command serves (UDP 319/320: root or CAP_NET_BIND_SERVICE), as senders play to a group, or auto: buffered to the receivers that take it (bit 40) and realtime to the others, in step, as Apple's senders play to a mixed group.")
    var mode: StreamMode = .realtime

    @Option(name: .long, help: "Buffered mode's codec: alac (lossless, at the file's depth and rate; default) or aac (AAC-LC 256 kb/s, 16-bit, as Apple's senders send music).")
    var codec: BufferedCodec = .alac

    @Option(name: .long, help: "Buffered mode's sample rate: 44100 (16-bit) or 48000 (ALAC 24-bit, Apple's lossless format). Default: the file's, when every receiver takes it, else the first of Apple's formats all do, converted.")
    var rate: Int?

    @Option(name: .long, help: "AirPlay 2's clock: auto (default: realtime streams on PTP where the receiver's record advertises it, bit 41, and this command can serve a PTP clock on UDP 319/320, else NTP; our PTP clock served, except to a standalone HomePod on OS 27, whose own clock is followed), ntp (realtime only), ptp (our clock served to every receiver), or follow (the first AirPlay 2 receiver's own PTP clock followed, as a standalone HomePod needs).")
    var timing: StreamTiming = .auto

    @Flag(name: .long, help: "Print JSON lines (events, then a summary) instead of text.")
    var json = false

    @Flag(name: .customLong("no-dacp"), help: "Publish no DACP remote control: receivers then reach this stream over AirPlay 2's event channel only.")
    var noDACP = false

    enum StreamMode: String, ExpressibleByArgument { case realtime, buffered, auto }
    enum StreamTiming: String, ExpressibleByArgument { case auto, ntp, ptp, follow }

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("name an audio file, or - for standard input") }
        guard !files.contains("-") || files.count == 1 else { throw ValidationError("standard input (-) plays alone, not in a list of files") }
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be 0 to 100") }
        guard start >= 0, start.isFinite else { throw ValidationError("--start must be 0 or more seconds") }
        guard file != "-" || start == 0 else { throw ValidationError("--start needs a file, not standard input") }
        guard protocolVersion == nil || [1, 2].contains(protocolVersion!) else { throw ValidationError("--protocol must be 1 or 2") }
        guard mode != .buffered || protocolVersion != 1 else { throw ValidationError("--mode buffered is AirPlay 2: it cannot go with --protocol 1") }
        guard codec == .alac || mode != .realtime else { throw ValidationError("--codec aac is for --mode buffered or auto (realtime streams are ALAC or PCM)") }
        guard rate == nil || mode != .realtime else { throw ValidationError("--rate is for --mode buffered or auto (realtime streams are 44.1 kHz)") }
        guard rate == nil || [44100, 48000].contains(rate!) else { throw ValidationError("--rate must be 44100 or 48000") }
        guard timing != .ntp || mode != .buffered else {
            throw ValidationError("--timing ntp is for realtime streams (buffered streams are always on PTP)")
        }
        guard ![.ptp, .follow].contains(timing) || protocolVersion != 1 else {
            throw ValidationError("--timing \(timing.rawValue) is AirPlay 2: it cannot go with --protocol 1")
        }
    }

    func run() async throws {
        // A reader that goes away (a closed stdout, a failed stdin pipeline) is an error to
        // report, not a signal that kills us.
        signal(SIGPIPE, SIG_IGN)
        let display = StreamDisplay(json: json)
        let source: any PCMSource
        do {
            let hiRes = mode != .realtime && codec == .alac
            let first = try Self.open(file, start: start, hiRes: hiRes)
            source = files.count == 1 ? first : PlaylistSource(paths: files, first: first, open: { path throws in
                try Self.open(path, start: 0, hiRes: hiRes)
            })
        } catch {
            display.fail("\(file == "-" ? "standard input" : file): \(error.message)", kind: "badInput")
            throw ExitCode(ExitStatus.badInput)
        }
        do throws(SenderError) {
            // A receiver that refuses AirPlay 2's native stream (Sonos) is played over AirPlay 1:
            // everything is set up again, before any audio went out.
            var airPlay1: Set<String> = []
            var result = try await stream(source, display: display, airPlay1: &airPlay1)
            if result == nil { result = try await stream(source, display: display, airPlay1: &airPlay1) }
            guard let summary = result else { throw SenderError(.refused(status: 400), "the receivers refused every way of playing") }
            display.finish(summary)
        } catch {
            display.fail(error.message, kind: "\(error.kind)")
            throw ExitCode(ExitStatus.code(for: error))
        }
    }

    /// FLAC decoded by libFLAC as it is: 44.1 kHz 16-bit, or with `hiRes` (buffered mode, which
    /// carries 24-bit and 48 kHz ALAC) also 24-bit and 48 kHz; anything else (and standard input)
    /// through GStreamer, which converts it to CD audio.
    static func open(_ file: String, start: Double, hiRes: Bool) throws(MediaError) -> any PCMSource {
        if file == "-" { return try GStreamerPCMSource.standardInput() }
        if FLACFileSource.isFLAC(path: file), let flac = try? FLACFileSource(path: file, start: start, allowHiRes: hiRes) {
            // 48 kHz/16-bit goes out as Apple's 48 kHz/24-bit (no format code names 48/16).
            if flac.format.sampleRate == 48000, flac.format.bitsPerSample == 16 { return WidenedPCMSource(flac) }
            return flac
        }
        return try GStreamerPCMSource(path: file, start: start)
    }

    /// Streams to the receivers, those in `airPlay1` (by key) over AirPlay 1. Returns nil, with
    /// `airPlay1` filled, when receivers refused AirPlay 2's native realtime stream and were not
    /// yet in it: the caller tries again.
    private func stream(_ source: any PCMSource, display: StreamDisplay, airPlay1: inout Set<String>) async throws(SenderError) -> [String: Any]? {
        var addresses: [ReceiverAddress] = []
        for target in to.isEmpty ? [nil] : to.map(Optional.some) {
            addresses.append(try ReceiverResolver.resolve(target, needVideo: false, choose: askOnTerminal))
        }
        let crypto = try? RAOPSenderCrypto()
        let identity = RAOPClientIdentity()
        var links: [RAOPLink] = []
        let linkMode: ReceiverLinks.Mode = switch mode {
        case .realtime: .realtime
        case .buffered: .buffered
        case .auto: .auto
        }
        for address in addresses {
            links.append(try await ReceiverLinks.open(address, protocolVersion: airPlay1.contains(address.key) ? 1 : protocolVersion,
                                                      mode: linkMode, identity: identity, password: password, crypto: crypto))
        }
        // Buffered where a link is (all of them with --mode buffered; those that take it with
        // --mode auto): one PTP grandmaster, which the realtime links on PTP share.
        let buffered = links.contains(where: \.buffered)
        var grandmaster: PTPGrandmaster?
        if buffered {
            do {
                grandmaster = try PTPGrandmaster(clockIdentity: PTPGrandmaster.randomClockIdentity(), logger: Logger(label: "airplay"))
            } catch {
                throw SenderError(.badInput, "buffered mode serves a PTP clock: \(error)")
            }
        }
        let realtimeClock = try realtimePTPClock(for: links.filter { !$0.buffered }, display: display, sharing: grandmaster)
        chooseClockRoles(links, display: display)
        let fileFormat = source.format
        let source = try convert(source, for: links)
        defer { if realtimeClock !== grandmaster { realtimeClock?.stop() } }
        let tags = source.tags
        let title = tags.title ?? (file == "-" ? "standard input" : (file as NSString).lastPathComponent)
        var item = DMAP.Item()
        item.title = title
        item.artist = tags.artist
        item.album = tags.album
        item.genre = tags.genre
        item.durationMilliseconds = tags.duration.map { Int(max(0, $0 - self.start) * 1000) }
        let session = RAOPStreamSession(links: links, source: source, item: item, startOffset: start, volume: volume,
                                        grandmaster: grandmaster, bufferedCodec: codec)

        // Bounded: a receiver flooding remote commands cannot grow the queue without end.
        let (events, continuation) = AsyncStream.makeStream(of: RAOPStreamSession.Event.self, bufferingPolicy: .bufferingNewest(1024))
        let keys = file != "-" && isatty(0) == 1 ? KeyReader(continuation) : nil
        defer { keys?.restore() }
        let interrupts = InterruptWatch(continuation)
        defer { interrupts.cancel() }
        // A buffered stream, or a mixed group, takes receivers that join on the way (`airplay
        // group add`): buffered where they take it (all of them with --mode buffered), else
        // realtime on the group's timeline, on PTP where they follow it.
        let password = self.password, protocolVersion = self.protocolVersion, timing = self.timing
        let groupClock = grandmaster
        let control = mode != .realtime ? StreamControlServer { target in
            do throws(SenderError) {
                let address = try ReceiverResolver.resolve(target, needVideo: false, choose: { _ in nil })
                let link = try await ReceiverLinks.open(address, protocolVersion: linkMode == .buffered ? 2 : protocolVersion, mode: linkMode,
                                                        identity: identity, password: password, crypto: crypto)
                if !link.buffered, link.airPlay2, timing != .ntp, timing == .ptp || (link.features.contains(.ptpClock) && !link.isOnThisHost) {
                    link.ptpClock = groupClock
                }
                Self.obeyRemoteCommands(link, continuation)
                let failure = await withCheckedContinuation { (waiter: CheckedContinuation<SenderError?, Never>) in
                    continuation.yield(.join(link, done: { waiter.resume(returning: $0) }))
                }
                return failure.map { "error \($0.message)" } ?? "ok \(address.name)"
            } catch {
                return "error \(error.message)"
            }
        } : nil
        defer { control?.close() }
        // The receivers' remote-control buttons (the AirPlay 2 event channel, DACP) come in as
        // the keys do.
        for link in links { Self.obeyRemoteCommands(link, continuation) }
        let remote = noDACP ? nil : try? await DACPServer.start(identity: identity, logger: Logger(label: "airplay")) { command in
            if let event = Self.event(for: command) { continuation.yield(event) }
        }
        defer { if let remote { Task { await remote.close() } } }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                continuation.yield(.tick)
            }
        }
        defer { ticker.cancel() }
        // Read once the session has set the links up: an AirPlay 2 setup chooses the codec.
        let linked = links
        let receivers: @Sendable () -> [String] = { linked.map { link in
            let ownClock = link.receiverTimeline == nil ? "" : ", on its own clock"
            return link.buffered ? "\(link.name) (\(codec == .aac ? "AAC-LC" : "ALAC") \(String(format: "%g", Double(source.format.sampleRate) / 1000)) kHz/\(source.format.bitsPerSample)-bit, AirPlay 2 buffered\(ownClock))"
                : "\(link.name) (\(link.codec.rawValue)\(link.airPlay2 ? (link.ptpClock == nil ? ", AirPlay 2" : ", AirPlay 2 on PTP\(ownClock)") : link.encryptor == nil ? "" : ", RSA"))"
        } }
        let summary: RAOPStreamSession.Summary
        do {
            summary = try await session.run(events: events, continuation: continuation, warn: display.warn) { [start] report in
                switch report {
                case .started:
                    display.started(title: title, artist: tags.artist, receivers: receivers(), duration: tags.duration.map { max(0, $0 - start) })
                case .progress(let elapsed, let paused, let volume): display.progress(elapsed: elapsed, paused: paused, volume: volume)
                case .state(let state): display.state(state)
                }
            }
        } catch {
            let refusing = zip(addresses, links).filter { $1.refusedNativeStreams && !airPlay1.contains($0.key) }.map(\.0)
            guard !refusing.isEmpty, protocolVersion == nil else { throw error }
            // The retry serves its own PTP clock: this one lets go of UDP 319/320 first (20 ms).
            grandmaster?.stop()
            realtimeClock?.stop()
            try? await Task.sleep(for: .milliseconds(100))
            for address in refusing {
                display.warn("\(address.name) refused AirPlay 2's stream (\(error.message)): playing to it over AirPlay 1, its RAOP-compatible path")
                airPlay1.insert(address.key)
            }
            return nil
        }
        let milliseconds = { (seconds: Double) in (seconds * 100_000).rounded() / 100 }
        var result: [String: Any] = [
            "seconds": (summary.seconds * 10).rounded() / 10, "quit": summary.quit,
            "resent": summary.receivers.reduce(0) { $0 + $1.resent },
            "receivers": summary.receivers.map { receiver -> [String: Any] in
                ["receiver": receiver.name, "codec": receiver.codec, "encrypted": receiver.encrypted, "protocol": receiver.airPlay2 ? 2 : 1,
                 "resent": receiver.resent, "ptpClock": receiver.ptpClock ?? NSNull(),
                 "roundTripMs": receiver.bestRoundTrip.map(milliseconds) ?? NSNull()]
            },
        ]
        if buffered {
            // What went out, and whether it was converted from the file's format to get there.
            result["format"] = ["codec": codec == .aac ? "AAC-LC" : "ALAC", "sampleRate": source.format.sampleRate,
                                "bitsPerSample": source.format.bitsPerSample, "converted": source.format != fileFormat] as [String: Any]
        }
        if links.count > 1 { result["skewBoundMs"] = summary.skewBound.map(milliseconds) ?? NSNull() }
        if let timeline = summary.timeline {
            // The one timeline: the first frame's moment on the PTP clock and, in a mixed
            // group, on our NTP clock (the clock relation every room's anchor or sync rests on).
            result["timeline"] = ["ptpClock": String(format: "0x%016llX", timeline.clockIdentity), "ptpClockOwner": timeline.owner,
                                  "firstFrameHeardAtPTPNs": timeline.ptpNanoseconds,
                                  "firstFrameHeardAtNTP": timeline.ntp.map { String(format: "0x%016llX", $0) } ?? NSNull()] as [String: Any]
        }
        return result
    }
}

extension StreamCommand {
    /// A buffered stream's source in the format chosen for its receivers (`BufferedFormatChoice`):
    /// as it is, or converted by GStreamer.
    func convert(_ source: any PCMSource, for links: [RAOPLink]) throws(SenderError) -> any PCMSource {
        // Realtime streams are CD audio; a mixed group's buffered receivers take the same samples.
        let chosen = links.allSatisfy(\.buffered)
            ? BufferedFormatChoice.format(for: source.format, codec: codec, offers: links.map { $0.info?.bufferedFormats }, rate: rate)
            : PCMFormat.cd
        guard chosen != source.format else { return source }
        do {
            return try ResampledPCMSource(source, to: chosen)
        } catch {
            throw SenderError(.badInput, "cannot convert \(source.format) to \(chosen): \(error.message)")
        }
    }

    /// Realtime AirPlay 2 on PTP: a grandmaster for the links that take it (`--timing ptp`, or
    /// by default where the receiver advertises a PTP clock in its record or `/info`), set on each. Without the
    /// right to serve one (UDP 319/320 taken, or no privilege), `auto` falls back to NTP with a
    /// warning and `ptp` is an error.
    func realtimePTPClock(for receivers: [RAOPLink], display: StreamDisplay, sharing shared: PTPGrandmaster? = nil)
        throws(SenderError) -> PTPGrandmaster? {
        guard timing != .ntp else { return nil }
        // `auto` leaves a receiver on this very host on NTP: its PTP follower holds UDP 319/320
        // here, and a clock served beside it would be heard by it as another master.
        let wanted = receivers.filter { link in
            link.airPlay2 && ([.ptp, .follow].contains(timing) || (link.features.contains(.ptpClock) && !link.isOnThisHost))
        }
        guard !wanted.isEmpty else { return nil }
        if let shared {
            for link in wanted { link.ptpClock = shared }
            return shared
        }
        let clock: PTPGrandmaster
        do {
            clock = try PTPGrandmaster(clockIdentity: PTPGrandmaster.randomClockIdentity(), logger: Logger(label: "airplay"))
        } catch {
            guard timing == .auto else { throw SenderError(.badInput, "PTP timing serves a PTP clock: \(error)") }
            display.warn("NTP timing: this command cannot serve a PTP clock (\(error))")
            return nil
        }
        for link in wanted { link.ptpClock = clock }
        return clock
    }

    /// Whose clock each link on PTP is timed by (`ReceiverClockRule`): `--timing ptp` serves
    /// ours to all, `--timing follow` follows the first AirPlay 2 receiver's own clock, `auto`
    /// follows a receiver whose record says it insists on its own. One clock is followed at
    /// most: it is the timeline the others are served.
    func chooseClockRoles(_ links: [RAOPLink], display: StreamDisplay) {
        let onPTP = links.filter { $0.buffered || $0.ptpClock != nil }
        for link in links where !onPTP.contains(where: { $0 === link }) { link.followsReceiverClock = false }
        switch timing {
        case .ptp, .ntp: for link in onPTP { link.followsReceiverClock = false }
        case .follow: for (index, link) in onPTP.enumerated() { link.followsReceiverClock = index == 0 }
        case .auto:
            let insisting = onPTP.filter(\.followsReceiverClock)
            for link in insisting.dropFirst() {
                link.followsReceiverClock = false
                display.warn("\(link.name) keeps its own PTP clock too, but only \(insisting[0].name)'s can be followed: it may stay silent")
            }
        }
    }

    /// Hands the commands `link`'s receiver sends on its AirPlay 2 event channel to the session.
    static func obeyRemoteCommands(_ link: RAOPLink, _ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) {
        link.remoteCommands.deliver { command in
            if let event = event(for: command.dacpEquivalent) { continuation.yield(event) }
        }
    }

    /// The session event a receiver's remote command asks for (DACP, or the AirPlay 2 event
    /// channel's by its DACP equivalent).
    static func event(for command: DACPCommand) -> RAOPStreamSession.Event? {
        switch command {
        case .play: .setPaused(false)
        case .pause: .setPaused(true)
        case .playPause: .togglePause
        case .stop: .quit
        case .nextItem: .skip(1)
        case .previousItem: .skip(-1)
        case .volumeUp: .volume(5)
        case .volumeDown: .volume(-5)
        case .setDeviceVolume(let decibels): .setVolume(100 * AirPlayVolume.linear(decibels: decibels))
        case .getProperty: nil
        }
    }
}

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

extension BufferedCodec: ExpressibleByArgument {}
