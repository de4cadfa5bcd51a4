import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

/// airplayd follows a PTP grandmaster nobody here wrote: linuxptp's `ptp4l` with software time
/// stamps, in a namespace of its own joined to the box by a veth link. All namespaces share the
/// kernel's clock, and `ptp4l -S` serves that clock as it is, so the follower's error is exact:
/// the followed master's time minus the box's system clock, which `GET /ptp` reports.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PTPInteropTests {
    /// ptp4l as grandmaster on `interface`: Syncs 8 a second as Apple senders send them, an
    /// Announce a second, mastership taken after 2 s of silence.
    /// With `ipv6Scope` (0x02 link-local, 0x0E global), over UDP on IPv6 (`ptp4l -6`), its
    /// multicast sent to ff02::181 or ff0e::181.
    static func grandmaster(in host: TestHost, interface: String, priority1: Int, ipv6Scope: Int? = nil) throws -> ManagedProcess {
        let config = host.directory + "/ptp4l-\(priority1)-\(ipv6Scope ?? 4).cfg"
        try """
            [global]
            priority1 \(priority1)
            logAnnounceInterval 0
            logSyncInterval -3
            announceReceiptTimeout 2
            time_stamping software
            \(ipv6Scope.map { "udp6_scope \($0)" } ?? "")
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return try host.spawn(try #require(TestHost.which("ptp4l"), "ptp4l (linuxptp) is not installed: run tools/setup-deps --test"),
                              ["-i", interface, "-f", config, "-m"] + (ipv6Scope == nil ? [] : ["-6"]), label: "ptp4l-\(priority1)")
    }

    @Test func theFollowerIsWithin100MicrosecondsOfPtp4lAndHoldsWhenASecondGrandmasterComesAndGoes() throws {
        let box = try TestHost(label: "ptp-box")
        defer { box.close() }
        let first = try TestHost(label: "ptp-gm1")
        defer { first.close() }
        let second = try TestHost(label: "ptp-gm2")
        defer { second.close() }
        let firstLink = try first.link(to: box, addresses: ["10.97.1.1"], peerAddress: "10.97.1.2")
        let secondLink = try second.link(to: box, addresses: ["10.97.2.1"], peerAddress: "10.97.2.2")
        let master = try Self.grandmaster(in: first, interface: firstLink, priority1: 100)
        let daemon = try RunningDaemon.start(in: box, extra: ["--airplay2", "on", "--audio-output", "raw:\(box.directory)/out.pcm",
                                                             "--video-sink", "fakesink sync=true"])
        #expect(daemon.process.stderr.contains("PTP follower listening on UDP 319 and 320"), "\(daemon.process.stderr)")
        let probe = try box.spawn(try Products.peerTool("python"), [Products.repositoryRoot + "/Tests/IntegrationTests/peers/ptp_probe.py",
                                                                   "7000", "34", "0.1"], label: "ptp-probe")
        // 0-14 s: ptp4l alone (2 s to take mastership, then 10 s to settle and 2 s measured);
        // 14-24 s: a better grandmaster (priority1 50) on a second link; 24-34 s: it is gone again.
        Thread.sleep(forTimeInterval: 14)
        let better = try Self.grandmaster(in: second, interface: secondLink, priority1: 50)
        Thread.sleep(forTimeInterval: 10)
        better.stop(grace: 1)
        #expect(probe.waitForExit(timeout: 30) == 0, "\(probe.stderr)")
        #expect(master.isRunning, "\(master.stderr)")

        let report = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any], "\(probe.stdout)")
        let samples = report["samples"] as? [[String: Any]] ?? []
        func errors(_ range: ClosedRange<Double>) -> [Double] {
            samples.filter { range.contains($0["t"] as? Double ?? -1) }.compactMap { ($0["offset_ns"] as? Double).map(abs) }.sorted()
        }
        func p99(_ values: [Double]) -> Double { values.isEmpty ? .infinity : values[min(values.count - 1, Int(Double(values.count) * 0.99))] }
        let settled = errors(12...34)
        #expect(settled.count >= 180, "a sample every 0.1 s after 12 s: \(settled.count)")
        #expect(p99(settled) <= 100_000, "p99 \(p99(settled)) ns")
        let phases = [("ptp4l alone", errors(12...14)), ("second grandmaster", errors(14...24)), ("it left", errors(24...34))]
        for (name, values) in phases {
            #expect(p99(values) <= 100_000, "\(name): p99 \(p99(values)) ns")
        }
        let heard = samples.compactMap { $0["clocks"] as? Int }
        #expect(heard.contains(2), "both grandmasters were heard: \(Set(heard))")
        let followed = samples.filter { ($0["t"] as? Double ?? 0) > 17 && ($0["t"] as? Double ?? 0) < 24 }.compactMap { $0["followed"] as? String }
        #expect(followed.contains("10.97.2.1"), "the better grandmaster was followed while it ran")
        #expect(samples.last?["followed"] as? String == "10.97.1.1", "and ptp4l again once it left")
        // A number, not null: answered (on veth the delay is within the noise, so 0 is fair).
        #expect(samples.contains { ($0["path_delay_ns"] as? Int).map { $0 >= 0 && $0 < 1_000_000 } == true }, "ptp4l answered Delay_Req")
        let summary = phases.map { "\($0.0) p50 \(String(format: "%.1f", ($0.1.isEmpty ? 0 : $0.1[$0.1.count / 2]) / 1000)) µs p99 \(String(format: "%.1f", p99($0.1) / 1000)) µs" }
        print("measure: PTP follower vs ptp4l -S: " + summary.joined(separator: "; "))
    }

    /// The other way round: linuxptp's ptp4l follows `airplay ptp-master`, the grandmaster
    /// buffered streams are anchored on (free running, so it measures without steering the
    /// shared clock). Its own idea of its offset (`pmc GET CURRENT_DATA_SET`) is the error of
    /// our Syncs and Follow_Ups, and its path delay proves our Delay_Resps are understood.
    @Test func ptp4lFollowsOurGrandmaster() throws {
        let sender = try TestHost(label: "ptp-ours")
        defer { sender.close() }
        let follower = try TestHost(label: "ptp-ptp4l")
        defer { follower.close() }
        let link = try follower.link(to: sender, addresses: ["10.97.3.2"], peerAddress: "10.97.3.1")
        let master = try sender.spawn(try Products.executable("airplay"), ["ptp-master", "--to", "10.97.3.2", "--seconds", "25"], label: "ptp-master")
        let socket = follower.directory + "/ptp4l.sock"
        let config = follower.directory + "/follower.cfg"
        try """
            [global]
            slaveOnly 1
            free_running 1
            time_stamping software
            transportSpecific 0x1
            logAnnounceInterval 0
            announceReceiptTimeout 3
            uds_address \(socket)
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let ptp4l = try follower.spawn(try #require(TestHost.which("ptp4l")), ["-i", link, "-f", config, "-m"], label: "ptp4l-follower")
        let pmc = try #require(TestHost.which("pmc"), "pmc (linuxptp) is not installed")
        Thread.sleep(forTimeInterval: 8)   // ptp4l settles on our grandmaster before it is measured
        var offsets: [Double] = [], delays: [Double] = []
        for _ in 0..<20 {
            // pmc speaks ptp4l's transportSpecific too, or ptp4l ignores it.
            let answer = try follower.run(pmc, ["-u", "-b", "0", "-t", "1", "-s", socket, "GET CURRENT_DATA_SET"], timeout: 10).stdout
            for line in answer.split(separator: "\n") {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                if fields.first == "offsetFromMaster", let value = fields.last.flatMap({ Double($0) }) { offsets.append(value) }
                if fields.first == "meanPathDelay", let value = fields.last.flatMap({ Double($0) }) { delays.append(value) }
            }
            Thread.sleep(forTimeInterval: 0.25)   // one sample every quarter second
        }
        #expect(master.isRunning && ptp4l.isRunning, "\(master.stderr)\(ptp4l.stdout)")
        #expect(offsets.count >= 15, "\(ptp4l.stdout.suffix(1000))")
        // Software timestamps on a loaded two-core machine: the typical offset is under a
        // microsecond, and one sample now and then is late by a scheduler wake-up (10.4 µs once
        // in CI). Rooms in step need well under a millisecond: the typical offset is held to
        // 5 µs and every one to 50 µs (between two and three frames at 48 kHz).
        let sorted = offsets.map(abs).sorted()
        #expect(!sorted.isEmpty && sorted[sorted.count / 2] < 5_000, "ptp4l's offsets from our grandmaster: \(offsets) ns")
        #expect(offsets.allSatisfy { abs($0) < 50_000 }, "ptp4l's offsets from our grandmaster: \(offsets) ns")
        #expect(delays.contains { $0 > 0 && $0 < 1_000_000 }, "ptp4l measured a path delay with our Delay_Resps: \(delays)")
        print("measure: ptp4l following airplay ptp-master: |offset| p50 \(sorted.isEmpty ? -1 : sorted[sorted.count / 2]) ns, max \(sorted.last ?? -1) ns, path delay \(delays.last ?? -1) ns")
    }

    /// Anyone on the LAN can send to UDP 319 and 320. Syncs and Follow_Ups whose times would
    /// overflow on the way to a frame's time (one of them trapped the daemon) are counted as
    /// implausible and dropped; the daemon lives on and follows ptp4l when it comes.
    @Test func datagramsWithTimesNoClockCouldHaveLeaveTheFollowerFollowing() throws {
        let box = try TestHost(label: "ptp-hostile")
        defer { box.close() }
        let peer = try TestHost(label: "ptp-hostile-gm")
        defer { peer.close() }
        let link = try peer.link(to: box, addresses: ["10.97.3.1"], peerAddress: "10.97.3.2")
        let daemon = try RunningDaemon.start(in: box, extra: ["--airplay2", "on", "--audio-output", "raw:\(box.directory)/out.pcm",
                                                             "--video-sink", "fakesink sync=true"])
        let source = PTPPortIdentity(clockIdentity: 0xBAD0_00FF_FE00_0001, port: 1)
        let nearTheEnd = PTPTimestamp(seconds: 9_223_372_036, nanoseconds: 854_775_807)
        let hostile = [
            PTPMessage(header: PTPHeader(type: .sync, correction: 5 << 16, source: source, sequence: 1), body: .sync(nearTheEnd)),
            PTPMessage(header: PTPHeader(type: .sync, source: source, sequence: 2), body: .sync(PTPTimestamp(seconds: 6_311_520_000, nanoseconds: 0))),
            PTPMessage(header: PTPHeader(type: .sync, flags: 0x0200, correction: Int64.max, source: source, sequence: 3), body: .sync(PTPTimestamp(seconds: 0, nanoseconds: 0))),
            PTPMessage(header: PTPHeader(type: .followUp, source: source, sequence: 3), body: .followUp(nearTheEnd)),
        ]
        // One datagram each, to the port its kind goes to (event 319, general 320).
        let sender = """
            import socket, sys
            for item in sys.argv[1:]:
                port, payload = item.split(":")
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(bytes.fromhex(payload), ("10.97.3.2", int(port)))
            """
        let datagrams = hostile.map { message in
            "\(message.header.type == .followUp ? 320 : 319):" + message.encoded().map { String(format: "%02x", $0) }.joined()
        }
        let sent = try peer.run(try Products.peerTool("python"), ["-c", sender] + datagrams)
        #expect(sent.status == 0, "\(sent.stderr)")
        let curl = try #require(TestHost.which("curl"))
        var status: [String: Any] = [:]
        #expect(poll(timeout: 5, interval: 0.1) {
            let answer = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/ptp"]).stdout) ?? ""
            status = (try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]) ?? [:]
            return status["implausible"] as? Int == 3
        }, "GET /ptp: \(status)")
        #expect(daemon.process.isRunning, "\(daemon.process.stderr.suffix(2000))")
        #expect(status["offset_to_system_clock_ns"] is NSNull, "no line from those times: \(status)")

        let master = try Self.grandmaster(in: peer, interface: link, priority1: 100)
        var offset = Double.infinity
        #expect(poll(timeout: 15, interval: 0.25) {
            let answer = (try? box.run(curl, ["-s", "http://127.0.0.1:7000/ptp"]).stdout) ?? ""
            let now = (try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]) ?? [:]
            offset = (now["offset_to_system_clock_ns"] as? Double).map(abs) ?? .infinity
            return offset < 100_000
        }, "ptp4l followed within 100 µs: \(offset) ns")
        #expect(master.isRunning && daemon.process.isRunning)
        print("measure: 3 PTP datagrams with times no clock could have, counted and dropped; ptp4l then followed within \(offset) ns")
    }
}
