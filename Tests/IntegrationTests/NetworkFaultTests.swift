import AirPlayTesting
import Foundation
import Testing

/// The box on a bad network: pyatv (PyPI) streams RAOP into airplayd across a link that
/// loses, reorders, duplicates and delays packets (a bridge of ours in a namespace between
/// them, `peers/jitter_bridge.py`, since this kernel has no netem), or that goes away.
@Suite(.serialized, .timeLimit(.minutes(10))) struct NetworkFaultTests {
    /// A 16-second sweep: time for a fault, and for the recovery after it.
    static let sweep: SweepMedia? = try? SweepMedia(seconds: 16)

    /// The sender's namespace (10.97.1.1) reaching the box's (10.97.1.2) through a relay
    /// namespace whose bridge impairs the link; without `relayed`, a plain veth link.
    final class Link {
        let sender: TestHost
        let box: TestHost
        let relay: (host: TestHost, interfaces: [String])?
        let output: String
        var daemon: RunningDaemon?

        init(label: String, relayed: Bool) throws {
            sender = try TestHost(label: label + "-sender")
            box = try TestHost(label: label + "-box")
            if relayed {
                relay = try BufferedAudioTests.Group.relay(label: label, from: sender, to: box, addresses: ("10.97.1.1", "10.97.1.2"))
            } else {
                relay = nil
                try sender.link(to: box, addresses: ["10.97.1.1"], peerAddress: "10.97.1.2")
            }
            output = box.directory + "/out.pcm"
        }

        /// airplayd in the box, RAOP only, writing what it plays to `output`; `config` is TOML.
        func start(config: String = "") throws {
            let file = box.directory + "/airplayd.toml"
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            daemon = try RunningDaemon.start(in: box, extra: [
                "--airplay2", "off", "--audio-output", "raw:\(output)", "--video-sink", "fakesink sync=true", "--config", file,
            ])
        }

        /// The bridge, impairing the link for `seconds`; `options` are its flags (--reorder …).
        func impair(delay: Int, jitter: Int, loss: Int, seconds: Int, options: [String] = []) throws -> ManagedProcess {
            let relay = try #require(relay)
            return try relay.host.spawn(try Products.peerTool("python"),
                                        [Products.repositoryRoot + "/Tests/IntegrationTests/peers/jitter_bridge.py"] + relay.interfaces
                                            + ["\(delay)", "\(jitter)", "\(loss)", "\(seconds)"] + options,
                                        label: "jitter-bridge")
        }

        /// The bridge impairing the link, the box started behind it, and the sweep streamed
        /// through to the end: the box's stream figures, the bridge's report, the box's output.
        func streamThroughBridge(_ sweep: SweepMedia, delay: Int, jitter: Int, loss: Int,
                                 options: [String]) throws -> ([String: Any], [String: Any], [Int16]) {
            let bridge = try impair(delay: delay, jitter: jitter, loss: loss, seconds: 60, options: options)
            try start()
            let stream = try startStream(sweep.directory + "/sweep.flac")
            #expect(stream.waitForExit(timeout: 60) == 0, "\(stream.stdout)\(stream.stderr)")
            daemon?.process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
            let figures = try streamFigures()
            let report = try NetworkFaultTests.bridgeReport(bridge)
            daemon?.process.stop(grace: 2)
            return (figures, report, try samples())
        }

        /// pyatv's `atvremote stream_file` from the sender's namespace, started in the background.
        func startStream(_ file: String) throws -> ManagedProcess {
            let daemon = try #require(daemon)
            let deviceID = daemon.storedDeviceID.replacingOccurrences(of: ":", with: "")
            return try sender.spawn(try Products.peerTool("atvremote"), [
                "--storage", "none", "--manual", "--address", "10.97.1.2", "--port", "7000", "--protocol", "raop", "--id", deviceID,
                "--service-properties", "|cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68",
                "stream_file=\(file)",
            ], label: "atvremote")
        }

        /// A first sender, playing for `seconds` once the box announced its audio.
        func startPlaying(_ sweep: SweepMedia, seconds: Double = 2) throws -> ManagedProcess {
            let daemon = try #require(daemon)
            let stream = try startStream(sweep.directory + "/sweep.flac")
            #expect(daemon.process.waitForOutput("audio announced", timeout: 15), "\(stream.stderr)")
            Thread.sleep(forTimeInterval: seconds)   // plays that long before the fault
            return stream
        }

        /// The next sender streams the sweep to the end; the share of it that came out bit-exact.
        func nextSenderPlays(_ sweep: SweepMedia) throws -> Double {
            try FileManager.default.removeItem(atPath: output)
            let ended = daemon?.process.occurrences(of: "audio session ended") ?? 0
            let second = try startStream(sweep.directory + "/sweep.flac")
            #expect(second.waitForExit(timeout: 60) == 0, "\(second.stdout)\(second.stderr)")
            daemon?.process.waitForOutput("audio session ended", moreThan: ended, timeout: 5)
            daemon?.process.stop(grace: 2)
            return sweep.compare(try samples()).exact
        }

        /// The `stream` figures of `/now-playing` (received, requested, lost …), asked inside the box.
        func streamFigures() throws -> [String: Any] {
            let curl = try #require(TestHost.which("curl"))
            let text = try box.run(curl, ["-s", "http://127.0.0.1:7000/now-playing"]).stdout
            let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
            return try #require(document["stream"] as? [String: Any], "\(text)")
        }

        /// The 16-bit stereo samples airplayd wrote.
        func samples() throws -> [Int16] {
            let data = try Data(contentsOf: URL(fileURLWithPath: output))
            return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }

        deinit {
            daemon?.process.stop(grace: 2)
            relay?.host.close()
            box.close()
            sender.close()
        }
    }

    /// What the bridge reported when it ended ("OK {json}").
    static func bridgeReport(_ bridge: ManagedProcess) throws -> [String: Any] {
        bridge.signal(SIGTERM)
        #expect(bridge.waitForExit(timeout: 10) == 0, "\(bridge.stderr)")
        let line = try #require(bridge.stdout.split(separator: "\n").last.map(String.init), "\(bridge.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any], "\(line)")
    }

    /// Wi-Fi on a bad day for every datagram both ways (audio, resends, timing and syncs):
    /// 20 ± 10 ms of delay, 5 % lost, 10 % held back behind later ones, 1 % sent twice. Every
    /// gap is asked for again until its resend arrives, duplicates and late packets are
    /// recognised, and the output is bit-exact.
    ///
    /// RTSP (TCP) is only delayed. pyatv's syncs promise each frame 1.75 s after it set the
    /// stream up, whatever its start-up took; TCP's retransmissions there (a lost SYN costs a
    /// second) left its first-time frames anywhere from 1.4 s down to 7 ms before they were due,
    /// or overdue (the box then times them by arrival), and with 7 ms no resend is in time:
    /// its promise, not the box's recovery. With RTSP only delayed they come 1.43-1.47 s ahead.
    @Test func lossReorderingDuplicationAndJitterLeaveTheOutputBitExact() throws {
        let sweep = try #require(Self.sweep)
        let link = try Link(label: "impaired", relayed: true)
        let (figures, report, samples) = try link.streamThroughBridge(sweep, delay: 20, jitter: 10, loss: 5,
                                                                    options: ["--udp-only", "--reorder", "10", "--duplicate", "1"])
        let comparison = sweep.compare(samples)
        #expect(report["dropped"] as? Int ?? 0 > 50 && report["reordered"] as? Int ?? 0 > 100
                && report["duplicated"] as? Int ?? 0 > 5, "the link really was impaired: \(report)")
        // A gap filled with silence after the sender's last frame (framesPlayed beyond
        // framesOnSenderClock, a packet's worth each) is counted lost but holds no audio: it
        // was seen in 4 of 13 runs, at 100 % bit-exact, with this code and the session before.
        let played = figures["framesPlayed"] as? Int ?? 0, sent = figures["framesOnSenderClock"] as? Int ?? 0
        let beyondTheStream = max(0, played - sent) / 352
        // (A real loss inside the stream also costs the bit-exact share below: 352 frames of
        // the sweep's 771,000 are 0.05 %.)
        #expect((figures["lost"] as? Int ?? Int.max) <= beyondTheStream, "\(figures)")
        #expect(comparison.exact >= 0.9999, "bit-exact share \(comparison.exact): \(figures)")
        print("measure: RAOP across 20±10 ms, 5 % loss, 10 % reordering, 1 % duplication (\(report["dropped"] ?? "?") dropped, "
              + "\(report["reordered"] ?? "?") reordered, \(report["duplicated"] ?? "?") duplicated): \(figures["requested"] ?? "?") requested, "
              + "\(figures["requestedAgain"] ?? "?") asked again, lost \(figures["lost"] ?? "?"), "
              + "bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }

    /// 30 % of the UDP datagrams lost for the first 7 seconds, resend requests and resends
    /// included: play goes on, what could not be recovered in time is counted as lost, and once
    /// the loss stops every frame after it comes out bit-exact.
    @Test func thirtyPercentLossPlaysOnAndRecoversBitExactWhenItStops() throws {
        let sweep = try #require(Self.sweep)
        let link = try Link(label: "heavyloss", relayed: true)
        let (figures, report, samples) = try link.streamThroughBridge(sweep, delay: 5, jitter: 2, loss: 30,
                                                                    options: ["--udp-only", "--loss-seconds", "7"])
        // The loss ends 7 s after the bridge starts, about 5 s into the sweep; from 9 s on, all of it.
        let after = sweep.compare(samples, from: 9 * 44100)
        let whole = sweep.compare(samples, from: 4410)
        let received = figures["received"] as? Int ?? 0, lost = figures["lost"] as? Int ?? -1
        #expect(report["dropped"] as? Int ?? 0 > 200, "\(report)")
        #expect(received > 16 * 44100 / 352 / 2, "play went on through the loss: \(figures)")
        #expect(after.exact >= 0.9999, "bit-exact after the loss \(after.exact): \(figures)")
        #expect(samples.count / 2 >= 15 * 44100, "nothing stalled: \(samples.count / 2) frames written")
        print("measure: RAOP with 30 % UDP loss for 7 s (\(report["dropped"] ?? "?") dropped): \(figures["requested"] ?? "?") requested, "
              + "\(figures["requestedAgain"] ?? "?") asked again, lost \(lost), whole sweep bit-exact "
              + "\(String(format: "%.2f", whole.exact * 100)) %, after the loss \(String(format: "%.4f", after.exact * 100)) %")
    }

    /// `kill -9` of the sender mid-stream: its RTSP connection closes with it, the session ends
    /// at once, and the next sender plays straight away, bit-exact.
    @Test func aSenderKilledMidStreamFreesTheBoxForTheNext() throws {
        let sweep = try #require(Self.sweep)
        let link = try Link(label: "killed", relayed: false)
        try link.start()
        let daemon = try #require(link.daemon)
        let first = try link.startPlaying(sweep)
        first.signal(SIGKILL)
        let killed = monotonicSeconds()
        #expect(daemon.process.waitForOutput("audio session ended", timeout: 5), "\(daemon.process.stderr.suffix(2000))")
        let freed = monotonicSeconds() - killed
        let exact = try link.nextSenderPlays(sweep)
        #expect(exact >= 0.9999, "the next sender bit-exact: \(exact)")
        print("measure: sender killed with -9: session ended \(String(format: "%.2f", freed)) s later")
    }

    /// The link cut for 10 s (nftables drops everything in the box's namespace): no FIN ever
    /// comes, so the session ends by its timeout (`audio_session_timeout = 4` here), the output is
    /// free, and once the link is back the next sender plays at once, bit-exact.
    @Test func aLinkCutForTenSecondsEndsTheSessionByItsTimeout() throws {
        let sweep = try #require(Self.sweep)
        let link = try Link(label: "cut", relayed: false)
        try link.start(config: "audio_session_timeout = 4\n")
        let daemon = try #require(link.daemon)
        let first = try link.startPlaying(sweep)
        defer { first.stop(grace: 1) }
        let nft = try #require(TestHost.which("nft"), "nftables is a test dependency (tools/setup-deps --test)")
        for rule in [["add", "table", "inet", "cut"],
                     ["add", "chain", "inet", "cut", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                     ["add", "rule", "inet", "cut", "in", "iifname", "!=", "lo", "drop"],
                     ["add", "chain", "inet", "cut", "out", "{", "type", "filter", "hook", "output", "priority", "0", ";", "}"],
                     ["add", "rule", "inet", "cut", "out", "oifname", "!=", "lo", "drop"]] {
            let result = try link.box.run(nft, rule)
            #expect(result.status == 0, "nft \(rule.joined(separator: " ")): \(result.stderr)")
        }
        let cut = monotonicSeconds()
        #expect(daemon.process.waitForOutput("audio session ended", timeout: 9), "\(daemon.process.stderr.suffix(2000))")
        let ended = monotonicSeconds() - cut
        #expect(ended >= 3.5 && ended < 7, "ended \(ended) s after the cut, with a 4 s timeout")
        #expect(daemon.process.stderr.contains("no RTSP or RTP for 4 s"))
        Thread.sleep(forTimeInterval: max(0, 10 - (monotonicSeconds() - cut)))   // the link stays cut for the whole 10 s
        #expect(try link.box.run(nft, ["delete", "table", "inet", "cut"]).status == 0)
        first.signal(SIGKILL)
        let exact = try link.nextSenderPlays(sweep)
        #expect(exact >= 0.9999, "the next sender bit-exact: \(exact)")
        print("measure: link cut: session ended \(String(format: "%.2f", ended)) s after the cut (timeout 4 s)")
    }

    /// The system bus and avahi-daemon both restarted while a stream plays (a package upgrade,
    /// `systemctl restart dbus`): the stream goes on untouched, bit-exact, and both services
    /// are published again within 5 s of avahi being back.
    @Test func busAndAvahiRestartedMidStreamLoseNothing() throws {
        let sweep = try #require(Self.sweep)
        let link = try Link(label: "busrestart", relayed: false)
        try link.box.startAvahi()
        try link.start()
        let daemon = try #require(link.daemon)
        #expect(try link.box.waitForService("_airplay._tcp") { $0.name == "Integration Box" } != nil)
        let stream = try link.startStream(sweep.directory + "/sweep.flac")
        #expect(daemon.process.waitForOutput("audio announced", timeout: 15), "\(stream.stderr)")
        Thread.sleep(forTimeInterval: 1)   // a second of the stream before the restart, mid-stream
        link.box.stopAvahi()
        link.box.stopBus()
        Thread.sleep(forTimeInterval: 1)   // both stay down a second, as in an upgrade
        try link.box.startBus()
        try link.box.startAvahi()
        let back = monotonicSeconds()
        #expect(try link.box.waitForService("_raop._tcp", timeout: 20) { $0.name.hasSuffix("@Integration Box") } != nil)
        #expect(try link.box.waitForService("_airplay._tcp", timeout: 20) { $0.name == "Integration Box" } != nil)
        let republished = monotonicSeconds() - back
        #expect(republished < 5, "re-published after \(republished) s")
        #expect(stream.waitForExit(timeout: 60) == 0, "\(stream.stdout)\(stream.stderr)")
        daemon.process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
        let figures = try link.streamFigures()
        daemon.process.stop(grace: 2)
        let comparison = sweep.compare(try link.samples())
        #expect(figures["lost"] as? Int == 0, "\(figures)")
        #expect(comparison.exact >= 0.9999, "bit-exact share \(comparison.exact)")
        print("measure: bus and avahi restarted mid-stream: re-published \(String(format: "%.2f", republished)) s after avahi was back, "
              + "stream bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
    }
}
