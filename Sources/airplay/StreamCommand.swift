import AirPlayCrypto
import AirPlaySender
import AirPlayTiming
import Logging
import AirPlayWire
import ArgumentParser
import Foundation
import AirPlayMedia
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
    var timing: StreamClockPlan.Timing = .auto

    @Flag(name: .long, help: "Print JSON lines (events, then a summary) instead of text.")
    var json = false

    @Flag(name: .customLong("no-dacp"), help: "Publish no DACP remote control: receivers then reach this stream over AirPlay 2's event channel only.")
    var noDACP = false

    enum StreamMode: String, ExpressibleByArgument { case realtime, buffered, auto }

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
        var links: [ReceiverLink] = []
        for address in addresses {
            links.append(try await ReceiverLinks.open(address, protocolVersion: airPlay1.contains(address.key) ? 1 : protocolVersion,
                                                      mode: linkMode, identity: identity, password: password, crypto: crypto))
        }
        // Buffered where a link is (all of them with --mode buffered; those that take it with
        // --mode auto): one PTP grandmaster, which the realtime links on PTP share.
        let buffered = links.contains(where: \.buffered)
        let grandmaster = buffered ? try Self.servePTPClock() : nil
        let realtimeClock = try carryOut(StreamClockPlan(receivers: links.map(StreamClockPlan.Receiver.init), timing: timing),
                                         on: links, sharing: grandmaster, display: display)
        let fileFormat = source.format
        let source = try convert(source, for: links)
        defer { if realtimeClock !== grandmaster { realtimeClock?.stop() } }
        let tags = source.tags
        let title = tags.title ?? (file == "-" ? "standard input" : (file as NSString).lastPathComponent)
        let item = Self.item(tags, title: title, start: start)
        let session = RAOPStreamSession(links: links, source: source, item: item, startOffset: start, volume: volume,
                                        grandmaster: grandmaster, bufferedCodec: codec, aacEncoder: GStreamerAACEncoder.factory)

        // Bounded: a receiver flooding remote commands cannot grow the queue without end.
        let (events, continuation) = AsyncStream.makeStream(of: RAOPStreamSession.Event.self, bufferingPolicy: .bufferingNewest(1024))
        let keys = file != "-" && isatty(0) == 1 ? KeyReader(continuation) : nil
        defer { keys?.restore() }
        let interrupts = InterruptWatch(continuation)
        defer { interrupts.cancel() }
        // A buffered stream, or a mixed group, takes receivers that join on the way (`airplay
        // group add`).
        let control = mode != .realtime ? joinServer(mode: linkMode, identity: identity, crypto: crypto, groupClock: grandmaster,
                                                     continuation) : nil
        defer { control?.close() }
        // The receivers' remote-control buttons (the AirPlay 2 event channel, DACP) come in as
        // the keys do.
        for link in links { Self.obeyRemoteCommands(link, continuation) }
        let remote = noDACP ? nil : try? await DACPServer.start(identity: identity, logger: Logger(label: "airplay")) { command in
            if let event = Self.event(for: command) { continuation.yield(event) }
        }
        defer { if let remote { Task { await remote.close() } } }
        let ticker = Self.ticks(continuation)
        defer { ticker.cancel() }
        // Read once the session has set the links up: an AirPlay 2 setup chooses the codec.
        let linked = links, codec = codec, format = source.format
        let receivers: @Sendable () -> [String] = { Self.describe(linked, codec: codec, format: format) }
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
        let sent: PCMFormat? = buffered ? source.format : nil
        return Self.summaryJSON(summary, codec: codec, sent: sent, converted: sent.map { $0 != fileFormat } ?? false, group: links.count > 1)
    }
}

extension BufferedCodec: ExpressibleByArgument {}

extension StreamClockPlan.Timing: ExpressibleByArgument {}
