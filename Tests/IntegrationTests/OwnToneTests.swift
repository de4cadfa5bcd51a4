import AirPlayTesting
import Foundation
import Testing

/// OwnTone 29.3, a media server Linux users play to speakers with, as a sender nobody here
/// wrote: it finds the rooms through avahi and plays to them over AirPlay 2 (its default:
/// realtime on its own PTP clock, timed by 0xD7 anchors) or AirPlay 1 (flags-7 syncs). OwnTone
/// has a namespace of its own (it binds PTP's ports), each room one joined to it by a veth link
/// (OwnTone 10.95.K.1, room K 10.95.K.2), with avahi on both ends.
@Suite(.serialized, .timeLimit(.minutes(10))) struct OwnToneTests {
    /// OwnTone, its library of one 30 s track, and `count` airplayd rooms writing raw PCM to FIFOs.
    final class Setup {
        let sender: TestHost
        let rooms: [TestHost]
        let outputs: [String]
        let source: [UInt8]
        let names: [String]
        var daemons: [RunningDaemon] = []
        var owntone: OwnToneSender?
        static let title = "OwnTone Noise"

        init(label: String, count: Int, secondTrack: Bool = false, trackSeconds: Int = 30) throws {
            sender = try TestHost(label: label + "-owntone")
            var rooms: [TestHost] = [], links: [String] = []
            for index in 1...count {
                let room = try TestHost(label: "\(label)-\(index)")
                links.append(try sender.link(to: room, addresses: ["10.95.\(index).1"], peerAddress: "10.95.\(index).2"))
                rooms.append(room)
            }
            self.rooms = rooms
            names = (1...count).map { "Room \($0)" }
            outputs = rooms.map { $0.directory + "/out.fifo" }
            for output in outputs { guard mkfifo(output, 0o600) == 0 else { throw TestHostError("mkfifo \(output)") } }
            try sender.startAvahi(interfaces: links)
            // `link(to:)` names the room's end like OwnTone's, ending in p.
            for (room, link) in zip(rooms, links) { try room.startAvahi(interfaces: [String(link.dropLast()) + "p"]) }
            let pcm = try OwnToneSender.makeTrack(in: sender.directory + "/music", title: Self.title, seconds: trackSeconds)
            source = Array(try Data(contentsOf: URL(fileURLWithPath: pcm)))
            if secondTrack {
                // Made beside the library (its PCM lands next to the folder), then moved in.
                _ = try OwnToneSender.makeTrack(in: sender.directory + "/extra/second", title: Self.secondTitle, seconds: 30)
                try FileManager.default.moveItem(atPath: sender.directory + "/extra/second", toPath: sender.directory + "/music/second")
            }
            songs = secondTrack ? 2 : 1
        }
        let songs: Int
        static let secondTitle = "OwnTone Second Noise"

        /// Starts a room per host (`airplay2` on: AirPlay 2 with PTP; off: AirPlay 1 only), each
        /// with `config` and `environment` when given, then OwnTone.
        func start(airplay2: Bool = true, config: String? = nil, environment: [String: String] = [:],
                   audioOutput: ((Int) -> String)? = nil) throws {
            daemons = try rooms.enumerated().map { index, room in
                var extra = ["--airplay2", airplay2 ? "on" : "off", "--ptp", airplay2 ? "on" : "off", "--video", "off",
                             "--audio-output", audioOutput?(index) ?? "raw:\(outputs[index])"]
                if let config {
                    try config.write(toFile: room.directory + "/airplayd.toml", atomically: true, encoding: .utf8)
                    extra += ["--config", room.directory + "/airplayd.toml"]
                }
                return try RunningDaemon.start(in: room, name: names[index], extra: extra, environment: environment)
            }
            owntone = try OwnToneSender(host: sender, music: sender.directory + "/music", songs: songs)
        }

        /// A reader timing every room's output (`fifo_clock.py`), saving room 1's to `path`.
        func read(saving path: String) throws -> ManagedProcess {
            try ManagedProcess(try Products.peerTool("python"),
                               [Products.repositoryRoot + "/Tests/IntegrationTests/peers/fifo_clock.py", "--save", path] + outputs + ["44"],
                               directory: sender.directory, label: "fifo_clock")
        }

        /// `/now-playing` of room `index`.
        func nowPlaying(_ index: Int) throws -> [String: Any] {
            let text = try rooms[index].run(try #require(TestHost.which("curl")), ["-s", "-m", "5", "http://127.0.0.1:7000/now-playing"]).stdout
            return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        }

        deinit {
            owntone = nil
            for daemon in daemons { daemon.process.stop(grace: 2) }
            for room in rooms { room.close() }
            sender.close()
        }
    }

    /// The share of the source's frames found unchanged, at one offset, in `output` (aligned on
    /// 16 frames 1 s in).
    static func exactShare(of source: [UInt8], in output: [UInt8]) -> Double {
        let frame = 4, probeAt = 44100 * frame, probe = Array(source[probeAt..<probeAt + 16 * frame])
        guard output.count >= probe.count,
              let at = stride(from: 0, through: output.count - probe.count, by: frame).first(where: { output[$0..<$0 + probe.count].elementsEqual(probe) })
        else { return 0 }
        let offset = at - probeAt
        var equal = 0
        for start in stride(from: 0, to: source.count - frame + 1, by: frame) where offset + start >= 0 && offset + start + frame <= output.count {
            if output[(offset + start)..<(offset + start + frame)].elementsEqual(source[start..<start + frame]) { equal += 1 }
        }
        return Double(equal) / Double(source.count / frame)
    }

    /// OwnTone's default, AirPlay 2 realtime on its PTP clock, to two rooms of one group: room 1
    /// plays every frame bit for bit at volume 100, both rooms on OwnTone's clock (its 0xD7
    /// anchors mapped through each room's PTP follower) and in step; the title, artist, album
    /// and cover reach `/now-playing`, which says `playing`; room 2's volume follows OwnTone's slider.
    @Test func twoRoomsOfAnOwnToneGroupOverAirPlay2() throws {
        try TestHost.require(["ffmpeg", "curl"])
        let setup = try Setup(label: "ot2", count: 2)
        try setup.start()
        let owntone = try #require(setup.owntone)
        let outputs = try owntone.waitForOutputs(setup.names)
        #expect(outputs.allSatisfy { $0.type == "AirPlay 2" }, "\(outputs)")
        let saved = setup.sender.directory + "/room1.pcm"
        let reader = try setup.read(saving: saved)
        try owntone.play(title: Setup.title, to: outputs)
        #expect(poll(timeout: 10, interval: 0.2) { (try? owntone.state()) == "play" }, "\(owntone.log)")
        Thread.sleep(forTimeInterval: 8)   // eight seconds into the 30 s track: the rooms mid-stream, on OwnTone's clock
        for index in 0..<2 {
            let playing = try setup.nowPlaying(index)
            let stream = try #require(playing["stream"] as? [String: Any], "\(playing)")
            let clock = try #require(stream["clock"] as? [String: Any])
            #expect(playing["state"] as? String == "playing", "\(playing)")
            #expect(playing["title"] as? String == Setup.title && playing["artist"] as? String == "Test Artist"
                    && playing["album"] as? String == "Test Album", "\(playing)")
            #expect(playing["artwork"] is [String: Any], "the cover beside the track: \(playing)")
            #expect(clock["source"] as? String == "ptp" && stream["codec"] as? String == "ALAC", "\(stream)")
        }
        // Late in the track, OwnTone's slider for room 2 at 40: AirPlay's -30…0 dB scale, 40 % up.
        Thread.sleep(forTimeInterval: 12)
        try owntone.setVolume(40, of: outputs[1])
        #expect(poll(timeout: 5, interval: 0.1) { ((try? setup.nowPlaying(1))?["volume"] as? Double).map { abs($0 + 18) < 0.5 } == true },
                "\((try? setup.nowPlaying(1)) ?? [:])")
        for index in 0..<2 {
            let stream = try #require(try setup.nowPlaying(index)["stream"] as? [String: Any])
            let clock = try #require(stream["clock"] as? [String: Any])
            #expect(clock["timedMostlyBy"] as? String == "ptp" && stream["lost"] as? Int == 0, "\(stream)")
        }
        let report = try FifoClockReport(reader)
        let exact = Self.exactShare(of: setup.source, in: Array(try Data(contentsOf: URL(fileURLWithPath: saved))))
        #expect(exact >= 0.999, "room 1 played \(exact * 100) % of the track bit for bit")
        #expect(inStep(report.skews, atLeast: 25), "\(report.skews)")
        print("measure: OwnTone AirPlay 2 (PTP, realtime) to two airplayd, room 1 bit-exact \(exact * 100) %, "
              + "skew per second \(report.skews) ms")
    }

    /// OwnTone's two-room AirPlay 2 group (realtime on its PTP clock) on two sound cards whose
    /// crystals run 200 ppm fast and 200 ppm slow: each room follows its card, and every second
    /// the same frames leave the two cards within a millisecond of each other.
    @Test func twoOwnToneRoomsOnCards400PPMApartStayInStepAtTheCards() throws {
        try TestHost.require(["ffmpeg", "curl"])
        let setup = try Setup(label: "otc", count: 2, trackSeconds: 62)
        let cards = try SimulatedCards(label: "owntone", ppm: [200, -200])
        try setup.start(environment: cards.environment, audioOutput: { "alsa:card\($0)" })
        let owntone = try #require(setup.owntone)
        let outputs = try owntone.waitForOutputs(setup.names)
        try owntone.play(title: Setup.title, to: outputs)
        #expect(poll(timeout: 10, interval: 0.2) { (try? owntone.state()) == "play" }, "\(owntone.log)")
        #expect(poll(timeout: 90, interval: 1) { (try? owntone.state()) != "play" }, "the track ends")
        Thread.sleep(forTimeInterval: 2)   // the cards play out what they hold
        let ended = setup.daemons.flatMap { $0.process.lines(containing: "audio session ended") }.joined(separator: "\n")
        for daemon in setup.daemons { daemon.process.stop(grace: 2) }
        let report = try cards.compare(skip: 2)
        #expect(report.skews.count >= 50, "\(report.line)\n\(ended)")
        #expect(report.p99 <= 1 && report.skews.allSatisfy { abs($0) <= 1 }, "\(report.line)\n\(ended)")
        #expect(report.restarts == [0, 0], "\(report.line)\n\(ended)")
        let sorted = report.skews.map(abs).sorted()
        print("measure: OwnTone AirPlay 2 group to two rooms on cards at +200/-200 ppm: per-second skew at the cards p50 \(sorted.isEmpty ? -1 : sorted[sorted.count / 2]) ms, p99 \(report.p99) ms")
    }

    /// OwnTone to a room that speaks only AirPlay 1: RAOP with flags-7 syncs on its NTP clock,
    /// every frame bit for bit, timed by OwnTone's clock.
    @Test func anOwnToneStreamOverAirPlay1() throws {
        try TestHost.require(["ffmpeg", "curl"])
        let setup = try Setup(label: "ot1", count: 1)
        try setup.start(airplay2: false)
        let owntone = try #require(setup.owntone)
        let outputs = try owntone.waitForOutputs(setup.names)
        #expect(outputs.first?.type == "AirPlay 1", "\(outputs)")
        let saved = setup.sender.directory + "/room1.pcm"
        let reader = try setup.read(saving: saved)
        try owntone.play(title: Setup.title, to: outputs)
        #expect(poll(timeout: 10, interval: 0.2) { (try? owntone.state()) == "play" }, "\(owntone.log)")
        Thread.sleep(forTimeInterval: 6)   // six seconds into the track: the room mid-stream, on OwnTone's clock
        let playing = try setup.nowPlaying(0)
        let stream = try #require(playing["stream"] as? [String: Any], "\(playing)")
        #expect(playing["state"] as? String == "playing" && playing["title"] as? String == Setup.title, "\(playing)")
        #expect((stream["clock"] as? [String: Any])?["source"] as? String == "sender", "\(stream)")
        #expect(reader.waitForExit(timeout: 50) == 0, "\(reader.stderr)")
        let exact = Self.exactShare(of: setup.source, in: Array(try Data(contentsOf: URL(fileURLWithPath: saved))))
        #expect(exact >= 0.999, "played \(exact * 100) % of the track bit for bit")
        let ended = try #require(try setup.nowPlaying(0)["stream"] as? [String: Any])
        #expect((ended["clock"] as? [String: Any])?["timedMostlyBy"] as? String == "sender", "\(ended)")
        print("measure: OwnTone AirPlay 1 to airplayd, bit-exact \(exact * 100) %")
    }
    /// The box's buttons reach OwnTone on AirPlay 2's event channel (`sendMediaRemoteCommand`),
    /// with OwnTone's DACP port (3689) closed to the room, so DACP cannot be what acts: `playerctl
    /// pause`, the page's play and pause buttons and MQTT `next` each change OwnTone's state (its
    /// JSON API) within 500 ms, and a pause while paused leaves it paused (OwnTone reads `paus`
    /// as play/pause).
    @Test func theBoxsButtonsReachOwnToneOnTheEventChannelWithoutDACP() throws {
        try TestHost.require(["ffmpeg", "curl", "nft", "playerctl", "dbus-daemon", "mosquitto", "mosquitto_pub"])
        let setup = try Setup(label: "otrc", count: 1, secondTrack: true)
        let room = setup.rooms[0]
        let nft = try #require(TestHost.which("nft"))
        for rule in [["add", "table", "inet", "nodacp"],
                     ["add", "chain", "inet", "nodacp", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                     ["add", "rule", "inet", "nodacp", "in", "iifname", "!=", "lo", "tcp", "dport", "3689", "counter", "drop"]] {
            let result = try setup.sender.run(nft, rule)
            #expect(result.status == 0, "nft \(rule.joined(separator: " ")): \(result.stderr)")
        }
        let bus = try SessionBus(directory: room.directory)
        try "listener 1883 127.0.0.1\nallow_anonymous true\npersistence false\n".write(toFile: room.directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        let broker = try room.spawn(try #require(TestHost.which("mosquitto")), ["-c", room.directory + "/mosquitto.conf"], label: "mosquitto")
        defer { broker.stop() }
        try setup.start(config: "mpris = \"session\"\nweb_listen = \"127.0.0.1:8080\"\n[mqtt]\nhost = \"127.0.0.1\"\nport = 1883\ntopic = \"airplayd/room\"\n",
                        environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let owntone = try #require(setup.owntone)
        let outputs = try owntone.waitForOutputs(setup.names)
        #expect(outputs.first?.type == "AirPlay 2", "\(outputs)")
        try owntone.play(expression: "artist is \"Test Artist\"", to: outputs)
        #expect(poll(timeout: 10, interval: 0.2) { (try? owntone.state()) == "play" }, "\(owntone.log)")
        // The first audio takes OwnTone's two seconds of latency, and amid the suite's load once
        // more than ten: this test is about the buttons, not how soon a stream starts.
        #expect(poll(timeout: 30, interval: 0.2) { (try? setup.nowPlaying(0))?["state"] as? String == "playing" },
                "\((try? setup.nowPlaying(0)) ?? [:]) \(setup.daemons.first?.process.stderr.suffix(3000) ?? "")")
        let first = try owntone.currentTitle()

        let daemon = try #require(setup.daemons.first)
        var latencies: [String: (answered: Double, state: Double)] = [:]
        /// Presses a button; true when OwnTone answered it (the box logs the delivery) within
        /// 500 ms and reached the state `done` looks for within `within` seconds.
        func press(_ name: String, _ button: () throws -> Void, within: Double = 0.5, until done: @escaping () -> Bool) rethrows -> Bool {
            let delivered = daemon.process.occurrences(of: "remote command delivered"), start = monotonicSeconds()
            try button()
            var answered = Double.infinity, reachedAt = Double.infinity
            poll(timeout: within, interval: 0.01) {
                if answered.isInfinite, daemon.process.occurrences(of: "remote command delivered") > delivered { answered = monotonicSeconds() - start }
                if reachedAt.isInfinite, done() { reachedAt = monotonicSeconds() - start }
                return answered.isFinite && reachedAt.isFinite
            }
            latencies[name] = (answered, reachedAt)
            return reachedAt <= within && answered <= 0.5
        }
        func milliseconds(_ seconds: Double) -> String { seconds.isFinite ? String(Int(seconds * 1000)) : "none" }
        func ownToneIs(_ state: String) -> () -> Bool { { (try? owntone.state()) == state } }
        let curl = try #require(TestHost.which("curl")), mosquittoPub = try #require(TestHost.which("mosquitto_pub"))
        func page(_ command: String) throws {
            let result = try room.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5", "-X", "POST",
                                             "-H", "X-AirPlayd-Remote: 1", "http://127.0.0.1:8080/remote?command=\(command)"])
            guard result.stdout == "204" else { throw TestHostError("the page's \(command): \(result.stdout) \(result.stderr)") }
        }
        func playerctl(_ command: String) throws {
            let result = try MPRISInteropTests.playerctl(bus.address, [command])
            guard result.status == 0 else { throw TestHostError("playerctl \(command): \(result.stderr)") }
        }
        func mqtt(_ command: String) throws {
            let result = try room.run(mosquittoPub, ["-h", "127.0.0.1", "-p", "1883", "-t", "airplayd/room/remote", "-m", command])
            guard result.status == 0 else { throw TestHostError("mosquitto_pub: \(result.stderr)") }
        }
        #expect(try press("playerctl pause", { try playerctl("pause") }, until: ownToneIs("pause")),
                "\(daemon.process.stderr.suffix(2000))")
        #expect(poll(timeout: 5) { (try? setup.nowPlaying(0))?["state"] as? String == "paused" }, "OwnTone flushed: the box shows paused")
        try playerctl("pause")
        Thread.sleep(forTimeInterval: 1)   // time for a pause taken as play/pause to show
        #expect((try? owntone.state()) == "pause", "a pause while paused left OwnTone paused")
        // OwnTone says `play` once it has refilled its buffer and restarted its outputs, 0.5 to
        // 2.3 s after it took the press (it answers at once, in 20-70 ms).
        #expect(try press("page play", { try page("play") }, within: 5, until: ownToneIs("play")), "\(owntone.log.suffix(1500))")
        #expect(poll(timeout: 5) { (try? setup.nowPlaying(0))?["state"] as? String == "playing" })
        #expect(try press("page pause", { try page("pause") }, until: ownToneIs("pause")))
        #expect(try press("playerctl play", { try playerctl("play") }, within: 5, until: ownToneIs("play")))
        #expect(try press("MQTT next", { try mqtt("next") }, until: { (try? owntone.currentTitle()).flatMap { $0 } != first }), "\(owntone.log.suffix(1500))")
        let log = daemon.process.stderr
        #expect(log.contains("path=\"event channel\"") && !log.contains("path=DACP"), "\(log.suffix(2000))")
        print("measure: OwnTone over AirPlay 2 without DACP, press → OwnTone's answer / its new state: "
              + latencies.sorted { $0.key < $1.key }.map { "\($0.key) \(milliseconds($0.value.answered))/\(milliseconds($0.value.state)) ms" }
                .joined(separator: ", "))
    }
}
