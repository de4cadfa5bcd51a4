import AirPlayTesting
import Foundation
import Testing

/// airplayd announced through a real avahi-daemon (loopback of a private network namespace),
/// checked with avahi's own tools, our `airplay list`, and pyatv.
@Suite(.serialized, .timeLimit(.minutes(10))) struct DiscoveryTests {
    @Test func bothServicesResolveWithTruthfulTXT() throws {
        let host = try TestHost(label: "publish")
        defer { host.close() }
        try host.startAvahi()
        let started = monotonicSeconds()
        let daemon = try RunningDaemon.start(in: host, name: "Integration Box", port: 7000, extra: ["--airplay2", "off"])
        let airplay = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Integration Box" })
        let resolvedAfter = monotonicSeconds() - started
        let id = daemon.storedDeviceID
        #expect(id.count == 17)
        #expect(airplay.port == 7000)
        #expect(airplay.txtValue("deviceid") == id)
        #expect(airplay.txtValue("features") == "0x838219", "video + HLS + audio + metadata + RSA, nothing else")
        #expect(airplay.txtValue("flags") == "0x4")
        #expect(airplay.txtValue("model") == "airplayd1,1")
        #expect(airplay.txtValue("srcvers") == "220.68")
        #expect(airplay.txtValue("protovers") == "1.0")
        // The pairing identity: its Ed25519 key (64 hex digits) and id, as kept in the state directory.
        let identity = try String(contentsOfFile: daemon.stateDirectory + "/pairing-identity", encoding: .utf8)
        let pk = try #require(airplay.txtValue("pk"))
        #expect(pk.count == 64 && identity.contains(pk), "\(pk) \(identity)")
        let pi = try #require(airplay.txtValue("pi"))
        #expect(pi.count == 36 && identity.contains(pi))

        let prefix = id.replacingOccurrences(of: ":", with: "")
        let raop = try #require(try host.waitForService("_raop._tcp") { $0.name == "\(prefix)@Integration Box" })
        #expect(raop.port == 7000)
        #expect(raop.txtValue("ft") == "0x838219")
        #expect(raop.txtValue("sf") == "0x4")
        #expect(raop.txtValue("cn") == "0,1,2,3", "L16, ALAC, AAC-LC and AAC-ELD (gst-libav is installed)")
        #expect(raop.txtValue("et") == "0,1")
        #expect(raop.txtValue("tp") == "UDP")
        #expect(raop.txtValue("pw") == "false")
        print("measure: process start to _airplay._tcp resolving: \(String(format: "%.2f", resolvedAfter)) s")
    }

    /// Out of the box airplayd is an AirPlay 2 receiver beside AirPlay 1: the pairing and
    /// session bits (38, 46, 48), the FairPlay handshake (14) and, with its PTP follower running,
    /// buffered audio, PTP and peer management (40, 41, 47), in both records, at version 366.0;
    /// `/info` lists the formats it plays.
    @Test func theDefaultAdvertisesAirPlay2WithBufferedAudio() throws {
        let host = try TestHost(label: "default-ap2")
        defer { host.close() }
        try host.startAvahi()
        _ = try RunningDaemon.start(in: host, name: "Default Box", port: 7000)
        let airplay = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Default Box" })
        let raop = try #require(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Default Box") })
        for features in [airplay.txtValue("features"), raop.txtValue("ft")] {
            let words = (features ?? "").split(separator: ",").compactMap { UInt64($0.dropFirst(2), radix: 16) }
            let value = words.count == 2 ? words[1] << 32 | words[0] : 0
            let bits = (0..<64).filter { value & (1 << UInt64($0)) != 0 }
            #expect(Set([14, 38, 40, 41, 46, 47, 48]).isSubset(of: bits), "\(features ?? "none"): bits \(bits)")
        }
        #expect(airplay.txtValue("srcvers") == "366.0" && airplay.txtValue("protovers") == "1.1" && raop.txtValue("vs") == "366.0")
        let curl = try #require(TestHost.which("curl"))
        let info = try host.run(curl, ["-s", "-H", "Accept: application/x-apple-plist+xml", "http://127.0.0.1:7000/info"]).stdout
        #expect(info.contains("<key>supportedFormats</key>") && info.contains("<key>bufferStream</key>"), "\(info.prefix(2000))")
    }

    @Test func videoOffClearsTheVideoBitsAndAudioOffWithdrawsRAOP() throws {
        let host = try TestHost(label: "caps")
        defer { host.close() }
        try host.startAvahi()
        _ = try RunningDaemon.start(in: host, name: "Speaker Only", extra: ["--video", "off", "--airplay2", "off"])
        let airplay = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Speaker Only" })
        let features = try #require(UInt64(airplay.txtValue("features")!.dropFirst(2), radix: 16))
        #expect(features & 0b1_0001 == 0, "bits 0 and 4 cleared")
        #expect(features & (1 << 9) != 0, "audio still offered")

        _ = try RunningDaemon.start(in: host, name: "Screen Only", port: 7001, extra: ["--audio", "off", "--airplay2", "off"])
        let screen = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Screen Only" })
        #expect(screen.txtValue("features") == "0x19")
        #expect(try host.browse("_raop._tcp").allSatisfy { !$0.name.hasSuffix("@Screen Only") })
    }

    @Test func listRanksVideoReceiversFirst() throws {
        let host = try TestHost(label: "list")
        defer { host.close() }
        try host.startAvahi()
        // Another video device (Apple TV 3 record) and an audio-only speaker whose name sorts first.
        _ = try host.publish(name: "Zed TV", type: "_airplay._tcp", port: 7100, txt: [
            "deviceid=58:55:CA:1A:E2:88", "features=0x5A7FFFF7,0x1E", "flags=0x44", "model=AppleTV3,2", "srcvers=220.68",
        ])
        _ = try host.publish(name: "5855CA1AE288@Zed TV", type: "_raop._tcp", port: 7100, txt: [
            "cn=0,1,2,3", "et=0,3,5", "ft=0x5A7FFFF7,0x1E", "sf=0x44", "am=AppleTV3,2", "tp=UDP",
        ])
        _ = try host.publish(name: "0A1B2C3D4E5F@Aardvark Speaker", type: "_raop._tcp", port: 5000, txt: [
            "txtvers=1", "ch=2", "cn=0,1", "et=0,1", "pw=false", "sf=0x4", "am=ShairportSync", "tp=UDP",
        ])
        _ = try RunningDaemon.start(in: host, name: "Integration Box")
        _ = try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Integration Box") }

        let airplay = try Products.executable("airplay")
        let started = monotonicSeconds()
        let result = try runCommand(airplay, ["list", "--json"], environment: host.environment, timeout: 30)
        let elapsed = monotonicSeconds() - started
        #expect(result.status == 0, "\(result.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(list.map { $0["name"] as? String } == ["Integration Box", "Zed TV", "Aardvark Speaker"])
        #expect(list.map { $0["video"] as? Bool } == [true, true, false])
        #expect(list.first?["model"] as? String == "airplayd1,1")
        #expect((list.first?["services"] as? [Any])?.count == 2, "both services of our daemon merged")
        #expect(elapsed < 5, "the browse ends when Avahi has answered, not at the time-out")

        let text = try runCommand(airplay, ["list"], environment: host.environment, timeout: 30)
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.contains("video, audio") == true)
        print("measure: airplay list took \(String(format: "%.2f", elapsed)) s")
    }

    @Test func senderCommandsFindTheOnlyVideoReceiverThroughAvahi() throws {
        let host = try TestHost(label: "pick")
        defer { host.close() }
        try host.startAvahi()
        _ = try host.publish(name: "0A1B2C3D4E5F@Aardvark Speaker", type: "_raop._tcp", port: 5000, txt: ["am=ShairportSync", "cn=0,1"])
        _ = try RunningDaemon.start(in: host, name: "Integration Box")
        _ = try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Integration Box") }
        let airplay = try Products.executable("airplay")
        let state = ["XDG_STATE_HOME": host.directory + "/xdg"]
        let status = try host.run(airplay, ["status", "--json"], environment: state)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("\"state\":\"stopped\""))
        let byName = try host.run(airplay, ["status", "--to", "integration box"], environment: state)
        #expect(byName.status == 0, "\(byName.stderr)")
        let unknown = try host.run(airplay, ["status", "--to", "Kitchen"], environment: state)
        #expect(unknown.status == 69)
        #expect(unknown.stderr.contains("Integration Box"), "the error lists what was found")
        // A second video receiver makes the choice ambiguous: without a terminal the command fails with the list.
        _ = try RunningDaemon.start(in: host, name: "Other Box", port: 7001)
        _ = try host.waitForService("_airplay._tcp") { $0.name == "Other Box" }
        let ambiguous = try host.run(airplay, ["status"], environment: state)
        #expect(ambiguous.status == 69)
        #expect(ambiguous.stderr.contains("Integration Box") && ambiguous.stderr.contains("Other Box"))
    }

    @Test func listWithoutAvahiFailsWithExitCode69() throws {
        let result = try runCommand(try Products.executable("airplay"), ["list", "--timeout", "2"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], timeout: 20)
        #expect(result.status == 69)
        #expect(result.stderr.contains("avahi-daemon"))
    }

    @Test func pyatvFindsAirPlayAndRAOPWithoutPairing() throws {
        let atvremote = try Products.peerTool("atvremote")
        let host = try TestHost(label: "pyatv")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host, name: "Integration Box", extra: ["--airplay2", "off"])
        _ = try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Integration Box") }
        let scan = try host.run(atvremote, ["--storage", "none", "--scan-hosts", "127.0.0.1", "-t", "5", "scan"], timeout: 60)
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("Name: Integration Box"), "\(scan.stdout)")
        #expect(scan.stdout.contains(daemon.storedDeviceID))
        let airplayLine = scan.stdout.split(separator: "\n").first { $0.contains("Protocol: AirPlay") }
        let raopLine = scan.stdout.split(separator: "\n").first { $0.contains("Protocol: RAOP") }
        #expect(airplayLine?.contains("Pairing: NotNeeded") == true, "\(scan.stdout)")
        #expect(raopLine?.contains("Pairing: NotNeeded") == true, "\(scan.stdout)")
        #expect(airplayLine?.contains("Port: 7000") == true)
    }

    /// In the default configuration (AirPlay 2, the Apple profile) and with a long name, pyatv's
    /// unicast scan still finds both services: its legacy unicast answers hold 512 bytes, and the
    /// `_raop._tcp` one must keep room for the host's address record (avahi drops it first).
    @Test func pyatvFindsTheAppleProfileByUnicast() throws {
        let atvremote = try Products.peerTool("atvremote")
        let host = try TestHost(label: "pyatv2")
        defer { host.close() }
        try host.startAvahi()
        let name = "Living Room Speaker Downstairs"
        let daemon = try RunningDaemon.start(in: host, name: name)
        let raop = try #require(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@" + name) })
        #expect(raop.txtValue("vs") == "366.0")
        let scan = try host.run(atvremote, ["--storage", "none", "--scan-hosts", "127.0.0.1", "-t", "5", "scan"], timeout: 60)
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("Name: \(name)") && scan.stdout.contains(daemon.storedDeviceID), "\(scan.stdout)")
        #expect(scan.stdout.contains("Protocol: AirPlay") && scan.stdout.contains("Protocol: RAOP"), "\(scan.stdout)")
        print("measure: pyatv unicast scan of the Apple profile: \(scan.stdout.split(separator: "\n").filter { $0.contains("Protocol:") })")
    }
}

/// The daemon keeps its records published through the accidents of real networks.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ResilienceTests {
    @Test func nameCollisionTakesAvahisAlternativeName() throws {
        let host = try TestHost(label: "collide")
        defer { host.close() }
        try host.startAvahi()
        _ = try host.publish(name: "Integration Box", type: "_airplay._tcp", port: 7999, txt: ["deviceid=11:22:33:44:55:66"])
        _ = try host.waitForService("_airplay._tcp") { $0.port == 7999 }
        let daemon = try RunningDaemon.start(in: host, name: "Integration Box")
        let renamed = try #require(try host.waitForService("_airplay._tcp") { $0.name == "Integration Box #2" })
        #expect(renamed.port == 7000)
        let prefix = daemon.storedDeviceID.replacingOccurrences(of: ":", with: "")
        #expect(try host.waitForService("_raop._tcp") { $0.name == "\(prefix)@Integration Box #2" } != nil)
        #expect(daemon.process.stderr.contains("name collision"))
        let info = try host.exchange(port: 7000, ["GET /server-info HTTP/1.1\r\n\r\n"])
        #expect(info.contains("<string>Integration Box #2</string>"))
    }

    @Test func avahiRestartIsFollowedByRepublicationWithin5Seconds() throws {
        let host = try TestHost(label: "restart")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host)
        #expect(try host.waitForService("_airplay._tcp") { $0.name == "Integration Box" } != nil)
        host.stopAvahi()
        // Still serving while avahi is gone.
        #expect(try host.exchange(port: 7000, ["GET /info HTTP/1.1\r\n\r\n"]).hasPrefix("HTTP/1.1 200 OK"))
        try host.startAvahi()
        let back = monotonicSeconds()
        #expect(try host.waitForService("_raop._tcp", timeout: 20) { $0.name.hasSuffix("@Integration Box") } != nil)
        #expect(try host.waitForService("_airplay._tcp", timeout: 20) { $0.name == "Integration Box" } != nil)
        let republished = monotonicSeconds() - back
        // Browsing itself takes about a second; the bound is on the whole observation.
        #expect(republished < 5, "re-published after \(republished) s")
        #expect(daemon.process.isRunning)
        print("measure: avahi-daemon restart to both services resolving: \(String(format: "%.2f", republished)) s")
    }

    @Test func noBusAndNoAvahiAtStartThenBothArrive() throws {
        let host = try TestHost(label: "late")
        defer { host.close() }
        host.stopBus()
        let daemon = try RunningDaemon.start(in: host)
        #expect(daemon.process.waitForOutput("avahi-daemon not reachable", timeout: 5))
        #expect(try host.exchange(port: 7000, ["GET /server-info HTTP/1.1\r\n\r\n"]).hasPrefix("HTTP/1.1 200 OK"))
        try host.startBus()
        try host.startAvahi()
        let back = monotonicSeconds()
        #expect(try host.waitForService("_airplay._tcp", timeout: 20) { $0.name == "Integration Box" } != nil)
        let published = monotonicSeconds() - back
        #expect(published < 5, "published \(published) s after avahi came up")
        #expect(daemon.process.stderr.contains("avahi-daemon is back"))
    }

    @Test func reloadUpdatesTXTInPlace() throws {
        let host = try TestHost(label: "reload")
        defer { host.close() }
        try host.startAvahi()
        let config = host.directory + "/airplayd.toml"
        try "video = true\nairplay2 = false\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: host, extra: ["--config", config])
        #expect(try host.waitForService("_airplay._tcp") { $0.txtValue("features") == "0x838219" } != nil)
        try "video = false\nairplay2 = false\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        #expect(daemon.process.waitForOutput("mDNS TXT updated", timeout: 10))
        let updated = try host.waitForService("_airplay._tcp") { $0.txtValue("features") == "0x838200" }
        #expect(updated?.name == "Integration Box")
        #expect(try host.waitForService("_raop._tcp") { $0.txtValue("ft") == "0x838200" } != nil)
        // What is advertised is what is served: video is off, so /play is gone.
        let play = try host.exchange(port: 7000, ["POST /play HTTP/1.1\r\nContent-Length: 0\r\n\r\n"])
        #expect(play.hasPrefix("HTTP/1.1 404"), "\(play)")
        // One registration only: the update call changed the records without a re-register.
        #expect(daemon.process.stderr.components(separatedBy: "mDNS services registering").count == 2)
        #expect(daemon.process.isRunning)
    }
}
