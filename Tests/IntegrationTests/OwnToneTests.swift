import AirPlayTesting
import Foundation
import Testing

/// OwnTone 29.3, a media server Linux users play to speakers with, as a sender nobody here
/// wrote: it finds the rooms through avahi and plays to them over AirPlay 2 (its default:
/// realtime on its own PTP clock, timed by 0xD7 anchors) or AirPlay 1 (flags-7 syncs). OwnTone
/// has a namespace of its own (it binds PTP's ports), each room one joined to it by a veth link
/// (OwnTone 10.95.K.1, room K 10.95.K.2), with avahi on both ends.
@Suite(.serialized) struct OwnToneTests {
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

        init(label: String, count: Int) throws {
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
            let pcm = try OwnToneSender.makeTrack(in: sender.directory + "/music", title: Self.title, seconds: 30)
            source = Array(try Data(contentsOf: URL(fileURLWithPath: pcm)))
        }

        /// Starts a room per host (`airplay2` on: AirPlay 2 with PTP; off: AirPlay 1 only), then OwnTone.
        func start(airplay2: Bool = true) throws {
            daemons = try rooms.enumerated().map { index, room in
                try RunningDaemon.start(in: room, name: names[index], extra: [
                    "--airplay2", airplay2 ? "on" : "off", "--ptp", airplay2 ? "on" : "off", "--video", "off",
                    "--audio-output", "raw:\(outputs[index])",
                ])
            }
            owntone = try OwnToneSender(host: sender, music: sender.directory + "/music", songs: 1)
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
        Thread.sleep(forTimeInterval: 8)
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
        Thread.sleep(forTimeInterval: 6)
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
}
