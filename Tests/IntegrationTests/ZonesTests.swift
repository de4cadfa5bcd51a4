import AirPlayTesting
import Foundation
import Testing

/// Several zones on one box: three airplayd on one host, each with its own name, port, state
/// directory and raw output, all seeing the same hardware MAC (the case that used to publish one
/// device id three times). Each must be a device of its own to avahi, to `airplay` and to pyatv,
/// keep its id across restarts, and play what is sent to it while the others play too.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ZonesTests {
    static let names = ["Kitchen", "Hall", "Attic"]
    /// A zone's own address on the box's link (`addressed` zones).
    static func address(_ index: Int) -> String { "10.99.0.\(11 + index)" }

    /// Three daemons in one network namespace with a private avahi-daemon; when `linked`, the box
    /// is joined by a veth link to a second namespace, `client`, as a laptop on the same LAN
    /// would be (the box 10.99.0.1 and the zones' own addresses 10.99.0.11-13, the client 10.99.0.2).
    final class Zones {
        let host: TestHost
        let client: TestHost?
        /// The one hardware MAC every instance sees (a fake `/sys/class/net`).
        let mac: String
        let interfaces: String
        let stateDirectories: [String]
        let outputs: [String]
        var daemons: [RunningDaemon] = []

        init(label: String, linked: Bool = false) throws {
            let host = try TestHost(label: label)
            self.host = host
            if linked {
                let client = try TestHost(label: label + "-client")
                self.client = client
                let link = try host.link(to: client, addresses: ["10.99.0.1"] + (0..<3).map(ZonesTests.address), peerAddress: "10.99.0.2")
                try host.startAvahi(interfaces: [link])
            } else {
                client = nil
                try host.startAvahi()
            }
            let directory = host.directory
            interfaces = directory + "/sys-class-net"
            try FileManager.default.createDirectory(atPath: interfaces + "/eth0/device", withIntermediateDirectories: true)
            mac = "02:5A:0E:00:00:01"
            try (mac.lowercased() + "\n").write(toFile: interfaces + "/eth0/address", atomically: true, encoding: .utf8)
            stateDirectories = ZonesTests.names.map { directory + "/state-" + $0.lowercased() }
            outputs = ZonesTests.names.map { directory + "/" + $0.lowercased() + ".pcm" }
        }

        /// Starts the zones (in `order`, indices into `names`) with `extra` flags, each ready before the next.
        /// Unless `addressed`, on ports 7000-7002 of every address; when `addressed`, as named instances
        /// each on an address of its own (10.99.0.11-13), all on port 7000.
        func start(order: [Int] = [0, 1, 2], extra: [String] = [], addressed: Bool = false) throws {
            var started = daemons.isEmpty ? [RunningDaemon?](repeating: nil, count: 3) : daemons.map(Optional.some)
            for index in order {
                let zone = addressed ? ["--instance", ZonesTests.names[index].lowercased(), "--address", ZonesTests.address(index)] : []
                started[index] = try RunningDaemon.start(
                    in: host, name: ZonesTests.names[index], port: addressed ? 7000 : 7000 + index,
                    extra: ["--audio-output", "raw:\(outputs[index])", "--video-sink", "fakesink sync=true"] + zone + extra,
                    stateDirectory: stateDirectories[index], environment: ["AIRPLAYD_TEST_INTERFACES_ROOT": interfaces])
            }
            daemons = started.compactMap { $0 }
        }

        func stop() {
            for daemon in daemons { daemon.process.stop(grace: 2) }
        }

        /// The `_airplay._tcp` record of every zone, by name, once all three and their `_raop._tcp` records resolve.
        func records() throws -> [String: BrowsedService] {
            var found: [String: BrowsedService] = [:]
            poll(timeout: 20, interval: 0.3) {
                let airplay = (try? host.browse("_airplay._tcp")) ?? []
                let raop = (try? host.browse("_raop._tcp")) ?? []
                found = Dictionary(airplay.filter { ZonesTests.names.contains($0.name) }.map { ($0.name, $0) }) { first, _ in first }
                return found.count == 3 && Set(raop.map(\.name).filter { $0.contains("@") }).count == 3
            }
            return found
        }

        deinit {
            stop()
            host.close()
            client?.close()
        }
    }

    @Test func threeInstancesOnOneMACAreThreeReceiversToAvahiAndAirplay() throws {
        let zones = try Zones(label: "zones")
        try zones.start()
        let records = try zones.records()
        #expect(records.count == 3, "\(records.keys)")
        let ids = Self.names.map { records[$0]?.txtValue("deviceid") ?? "" }
        #expect(Set(ids).count == 3, "three distinct device ids: \(ids)")
        #expect(ids[0] == zones.mac, "the first instance keeps the MAC itself")
        for (index, daemon) in zones.daemons.enumerated() {
            #expect(daemon.storedDeviceID == ids[index])
            #expect(daemon.process.stderr.contains("device id in use by another airplayd") == (index > 0), "\(daemon.process.stderr.prefix(3000))")
        }
        #expect(Set(Self.names.compactMap { records[$0]?.txtValue("pk") }).count == 3, "three pairing keys")
        let raop = try zones.host.browse("_raop._tcp").map(\.name)
        for (index, name) in Self.names.enumerated() {
            #expect(raop.contains(ids[index].replacingOccurrences(of: ":", with: "") + "@" + name), "\(raop)")
        }

        let list = try zones.host.run(try Products.executable("airplay"), ["list", "--json"], timeout: 30)
        #expect(list.status == 0, "\(list.stderr)")
        let receivers = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(receivers.compactMap { $0["name"] as? String } == ["Attic", "Hall", "Kitchen"], "\(list.stdout)")
        #expect(Set(receivers.compactMap { $0["deviceId"] as? String }) == Set(ids))

        // Restarted the other way round, each zone comes back with its own id.
        zones.stop()
        try zones.start(order: [2, 1, 0])
        let again = try zones.records()
        #expect(Self.names.map { again[$0]?.txtValue("deviceid") ?? "" } == ids)
        print("measure: three zones on one MAC published \(ids)")
    }

    /// pyatv takes one IP address for one device (its scanner keys what it finds by address), so
    /// zones that share the box's address show up in its scan as one device under the first
    /// zone's name (pyatv issue 1679, CasaTunes zones). With `address` each zone listens on an
    /// address of its own, all on port 7000, announced under a host name of its own: to a laptop
    /// on the LAN (a second namespace on a veth link, scanning by multicast) they are three
    /// devices, and pyatv streams to the one it picks by id. (atvremote's own scanner is not
    /// used: it stops reading a responder's answers after its first round, so it sees only the
    /// zones whose records came first; the unicast scan gets avahi's legacy-unicast reply, cut
    /// at 512 bytes, which holds one zone.)
    @Test func zonesOnAddressesOfTheirOwnAreThreeDevicesToPyatv() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let zones = try Zones(label: "zones-addr", linked: true)
        let client = try #require(zones.client)
        try zones.start(addressed: true)
        let records = try zones.records()
        let ids = Self.names.map { records[$0]?.txtValue("deviceid") ?? "" }
        #expect(Set(ids).count == 3 && !ids.contains(zones.mac), "ids derived from the MAC and each instance name: \(ids)")
        for (index, name) in Self.names.enumerated() {
            #expect(records[name]?.address == Self.address(index), "\(String(describing: records[name]))")
            #expect(records[name]?.port == 7000)
            #expect(records[name]?.host == "airplayd-\(ids[index].replacingOccurrences(of: ":", with: "").lowercased()).local")
        }

        // pyatv as Home Assistant drives it: python-zeroconf browsing by multicast from the
        // client, then pyatv.scan over that cache; then connect to the Hall by id and stream.
        let script = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_zeroconf_scan.py"
        let started = monotonicSeconds()
        let scan = try client.run(try Products.peerTool("python"), [script, "3", "--stream", ids[1], sweep.directory + "/sweep.flac"], timeout: 90)
        let elapsed = monotonicSeconds() - started
        #expect(scan.status == 0, "\(scan.stdout)\(scan.stderr.suffix(3000))")
        let line = try #require(scan.stdout.split(separator: "\n").last.map(String.init))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        let devices = report["devices"] as? [[String: Any]] ?? []
        #expect(devices.count == 3, "\(line)")
        for (index, name) in Self.names.enumerated() {
            let device = devices.first { $0["name"] as? String == name }
            #expect(device?["address"] as? String == Self.address(index), "\(line)")
            #expect((device?["identifiers"] as? [String])?.contains(ids[index]) == true, "\(line)")
            #expect(device?["protocols"] as? [String] == ["AirPlay", "RAOP"], "\(line)")
        }
        #expect(report["streamed"] as? Bool == true)
        // pyatv's TEARDOWN comes while its last quarter second is still to play (flags 7).
        zones.daemons[1].process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
        let hall = (try? Data(contentsOf: URL(fileURLWithPath: zones.outputs[1]))) ?? Data()
        #expect(sweep.compare(hall.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }).exact >= 0.999)
        #expect(!FileManager.default.fileExists(atPath: zones.outputs[0]) && !FileManager.default.fileExists(atPath: zones.outputs[2]))
        print("measure: pyatv (zeroconf scan, as Home Assistant) saw the three addressed zones and streamed to the Hall in \(String(format: "%.1f", elapsed)) s")
    }

    @Test func aSecondDaemonOnAStateDirectoryInUseRefusesToStart() throws {
        let zones = try Zones(label: "zone-lock")
        try zones.start(order: [0])
        let second = try RunningDaemon.start(in: zones.host, name: "Copy", port: 7005, stateDirectory: zones.stateDirectories[0],
                                             waitForReady: false)
        #expect(second.process.waitForExit(timeout: 20) == 78)
        #expect(second.process.stderr.contains("config key 'state_dir'") && second.process.stderr.contains("in use by another running airplayd"),
                "\(second.process.stderr)")
        #expect(zones.daemons[0].process.isRunning)
    }

    /// pyatv streams one file to the three zones at once, each through its own session on its
    /// own port, over AirPlay 1 (RAOP) and over AirPlay 2 (every zone with `--airplay2 on`):
    /// every output is the file, bit-exact.
    @Test(arguments: [false, true])
    func pyatvStreamsToThreeZonesAtOnce(airPlay2: Bool) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let zones = try Zones(label: airPlay2 ? "zones-ap2" : "zones-ap1")
        try zones.start(extra: ["--airplay2", airPlay2 ? "on" : "off"])
        let records = try zones.records()
        let atvremote = try Products.peerTool("atvremote")
        let senders = try Self.names.enumerated().map { index, name in
            let record = try #require(records[name])
            let features = try #require(record.txtValue("features"))
            // pyatv picks AirPlay 2 from the RAOP record's `ft`, as it would after a scan.
            let properties = "|cn=0,1|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68" + (airPlay2 ? "|ft=\(features)" : "")
            return try zones.host.spawn(atvremote, [
                "--debug", "--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(7000 + index),
                "--protocol", "raop", "--id", try #require(record.txtValue("deviceid")), "--service-properties", properties,
                "stream_file=\(sweep.directory)/sweep.flac",
            ], label: "atvremote-\(name)")
        }
        for (index, sender) in senders.enumerated() {
            #expect(sender.waitForExit(timeout: 90) == 0, "\(Self.names[index]): \(sender.stderr.suffix(2000))")
        }
        for (index, daemon) in zones.daemons.enumerated() {
            daemon.process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
            let log = daemon.process.stderr
            #expect(log.contains("AirPlay 2 session setup") == airPlay2, "\(Self.names[index]) took the expected protocol")
            let data = try Data(contentsOf: URL(fileURLWithPath: zones.outputs[index]))
            let comparison = sweep.compare(data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) })
            #expect(comparison.exact >= 0.999, "\(Self.names[index]): bit-exact share \(comparison.exact)")
            print("measure: pyatv to three zones (AirPlay \(airPlay2 ? 2 : 1)), \(Self.names[index]) bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
        }
    }

    /// `airplay stream --to Kitchen --to Hall --to Attic` finds the zones by name through avahi
    /// and plays them like three separate boxes, in step: a reader timing the three raw
    /// outputs (FIFOs) sees every second come out of all of them within the playout's 2 ms
    /// tolerance, and the typical second within 1 ms.
    @Test(arguments: [1, 2])
    func airplayStreamPlaysThreeZonesInStep(protocolVersion: Int) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let zones = try Zones(label: "zones-step-\(protocolVersion)")
        for output in zones.outputs { #expect(mkfifo(output, 0o600) == 0) }
        let reader = try ManagedProcess(try Products.peerTool("python"),
                                        [Products.repositoryRoot + "/Tests/IntegrationTests/peers/fifo_clock.py"] + zones.outputs + ["45"],
                                        directory: zones.host.directory, label: "fifo-clock")
        try zones.start(extra: ["--airplay2", protocolVersion == 2 ? "on" : "off"])
        _ = try zones.records()
        let result = try zones.host.run(try Products.executable("airplay"), [
            "stream", sweep.directory + "/sweep.flac", "--json", "--protocol", "\(protocolVersion)",
            "--to", "Kitchen", "--to", "Hall", "--to", "Attic",
        ], timeout: 60)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        zones.stop()
        let report = try FifoClockReport(reader)
        let skews = report.skews
        #expect(inStep(skews), "\(report.line)")
        #expect(report.sameSamples)
        print("measure: airplay stream to three zones (protocol \(protocolVersion)), largest skew per second \(skews) ms")
    }

    /// One PTP follower for the box: the first zone runs it (UDP 319/320), the others follow it
    /// through the abstract socket `airplayd/ptp`. `airplay stream --mode buffered`, from a laptop
    /// on the link, to the three zones on the box's one address (the grandmaster's Syncs reach
    /// one socket only) plays them in step. Then the zone running the follower is killed: another
    /// takes it over, and a second stream plays the two left in step.
    @Test func zonesShareOnePTPFollowerAndPlayBufferedInStep() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let zones = try Zones(label: "zones-ptp", linked: true)
        let client = try #require(zones.client)
        for output in zones.outputs { #expect(mkfifo(output, 0o600) == 0) }
        func reader(_ outputs: [String]) throws -> ManagedProcess {
            try ManagedProcess(try Products.peerTool("python"),
                               [Products.repositoryRoot + "/Tests/IntegrationTests/peers/fifo_clock.py"] + outputs + ["45"],
                               directory: zones.host.directory, label: "fifo-clock")
        }
        func stream(to ports: [Int]) throws -> CommandResult {
            try client.run(try Products.executable("airplay"), ["stream", sweep.directory + "/sweep.flac", "--mode", "buffered", "--json"]
                           + ports.flatMap { ["--to", "10.99.0.1:\($0)"] }, timeout: 60)
        }
        let first = try reader(zones.outputs)
        try zones.start(extra: ["--airplay2", "on"])
        let logs = zones.daemons.map(\.process)
        #expect(logs[0].stderr.contains("this instance runs the box's follower"), "\(logs[0].stderr.suffix(2000))")
        for log in logs.dropFirst() {
            #expect(poll(timeout: 5, interval: 0.05) { log.stderr.contains("following through the box's shared follower") }, "\(log.stderr.suffix(2000))")
        }
        let result = try stream(to: [7000, 7001, 7002])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\n\(logs[0].stderr.suffix(3000))")
        let report = try FifoClockReport(first)
        #expect(inStep(report.skews), "\(report.line)")
        #expect(report.sameSamples, "\(report.line)")

        logs[0].signal(SIGKILL)
        _ = logs[0].waitForExit(timeout: 5)
        #expect(poll(timeout: 5, interval: 0.05) { logs.dropFirst().contains { $0.stderr.contains("taking over") } },
                "\(logs[1].stderr.suffix(1500))\n\(logs[2].stderr.suffix(1500))")
        let second = try reader(Array(zones.outputs.dropFirst()))
        let again = try stream(to: [7001, 7002])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        zones.stop()
        let after = try FifoClockReport(second)
        #expect(inStep(after.skews), "\(after.line)")
        #expect(after.sameSamples, "\(after.line)")
        print("measure: three zones on one PTP follower, largest skew per second \(report.skews) ms; "
              + "after its zone was killed and another took it over \(after.skews) ms")
    }
}
