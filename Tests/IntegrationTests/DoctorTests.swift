import AirPlayTesting
import Foundation
import Testing

/// `airplay doctor` against a real airplayd, each cause staged as it happens on a real network:
/// avahi-daemon stopped, a port nothing listens on and one a firewall drops (nftables), an
/// output that cannot start, a sender that mutes the box and one that takes over (pyatv), a link
/// that loses packets and never carries a resend back, a PTP clock that never arrives, PTP
/// ports another program holds, a sender whose syncs contradict its clock, packets that fail
/// authentication, and a box elsewhere read over pair-verify. Each is named by its code, with
/// the exit status scripts read.
@Suite(.timeLimit(.minutes(10))) struct DoctorTests {
    struct Diagnosis {
        let status: Int32
        let codes: [String]
        let text: String

        init(_ result: CommandResult) throws {
            status = result.status
            text = result.stdout + result.stderr
            let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(text)")
            codes = (document["findings"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        }
    }

    static func doctor(in host: TestHost? = nil, _ arguments: [String]) throws -> Diagnosis {
        let airplay = try Products.executable("airplay")
        let all = ["doctor"] + arguments + ["--json"]
        return try Diagnosis(host.map { try $0.run(airplay, all, timeout: 30) } ?? runCommand(airplay, all, timeout: 30))
    }

    /// Asks until the doctor names `code` (or `limit` seconds pass); returns the last diagnosis.
    static func doctor(in host: TestHost? = nil, _ arguments: [String], until code: String, limit: Double = 15) throws -> Diagnosis {
        let deadline = Date().addingTimeInterval(limit)
        var diagnosis = try doctor(in: host, arguments)
        while !diagnosis.codes.contains(code), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.3)
            diagnosis = try doctor(in: host, arguments)
        }
        return diagnosis
    }

    /// pyatv streams the sweep to `address`:`port` (RAOP), at `volume` percent (0 mutes).
    static func pyatv(in host: TestHost? = nil, address: String = "127.0.0.1", port: Int, deviceID: String, volume: Int = 50,
                      file: String? = nil) throws -> ManagedProcess {
        let sweep = try #require(RAOPInteropTests.sweep)
        let arguments = [
            "--storage", "none", "--manual", "--address", address, "--port", String(port), "--protocol", "raop", "--id", deviceID,
            "--service-properties", "|cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68",
            "set_volume=\(volume)", "stream_file=\(file ?? sweep.directory + "/sweep.flac")",
        ]
        let atvremote = try Products.peerTool("atvremote")
        if let host { return try host.spawn(atvremote, arguments, label: "atvremote") }
        return try ManagedProcess(atvremote, arguments, directory: sweep.directory, label: "atvremote")
    }

    static func deviceID(_ daemon: LocalDaemon) throws -> String {
        String(try #require(daemon.process.stderr.split(separator: "\n").first { $0.contains("device.id=") }?
            .split(separator: "device.id=").last?.split(separator: " ").first))
    }

    /// A box on its own link with avahi-daemon: healthy, published and seen; then avahi-daemon
    /// stops and the doctor says the box is no longer published, and how to fix it.
    @Test func aPublishedBoxAndThenOneWithoutAvahiAreNamed() throws {
        let host = try TestHost(label: "doctor-mdns")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host, extra: ["--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let healthy = try Self.doctor(in: host, [], until: "published")
        #expect(healthy.status == 0 && healthy.codes.contains("published") && healthy.codes.contains("visible") && healthy.codes.contains("idle"),
                "\(healthy.text)\n\(daemon.process.stderr.suffix(2000))")
        host.stopAvahi()
        let gone = try Self.doctor(in: host, ["--browse-seconds", "1"], until: "not-published")
        #expect(gone.codes.first == "not-published", "\(gone.text)")
        #expect(gone.status == 1, "a problem exits 1")
    }

    /// Refused at once, nothing listens; no answer at all, a firewall drops it (nftables on the
    /// box's side of the link).
    @Test func aClosedPortAndAFilteredPortAreToldApart() throws {
        let hosts = try LinkedHosts(label: "doctor-fw", prefix: "10.98.1")
        defer { hosts.close() }
        let (sender, box) = (hosts.sender, hosts.box)
        let daemon = try RunningDaemon.start(in: box, extra: ["--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        #expect(try Self.doctor(in: sender, ["10.98.1.2:7000", "--browse-seconds", "0"]).codes.contains("reachable"))
        let closed = try Self.doctor(in: sender, ["10.98.1.2:7001", "--browse-seconds", "0"])
        #expect(closed.codes == ["not-listening"] && closed.status == 1, "\(closed.text)")
        try box.nft([["add", "table", "inet", "fw"],
                    ["add", "chain", "inet", "fw", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                    ["add", "rule", "inet", "fw", "in", "iifname", "!=", "lo", "tcp", "dport", "7000", "drop"]])
        let filtered = try Self.doctor(in: sender, ["10.98.1.2:7000", "--browse-seconds", "0", "--timeout", "1"])
        #expect(filtered.codes == ["port-filtered"], "\(filtered.text)")
        // On the box itself, its own figures still come.
        #expect(try Self.doctor(in: box, ["--browse-seconds", "0"]).codes.contains("idle"))
    }

    /// A filesink into a folder that does not exist stands for a sound card gone or busy.
    @Test func anOutputThatCannotStartIsNamed() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "filesink location=/nonexistent/airplayd/out.pcm"])
        let stream = try Self.pyatv(port: daemon.port, deviceID: try Self.deviceID(daemon))
        _ = stream.waitForExit(timeout: 60)
        let diagnosis = try Self.doctor(["127.0.0.1:\(daemon.port)", "--browse-seconds", "0"], until: "output-failed")
        #expect(diagnosis.codes.contains("output-failed") && diagnosis.status == 1, "\(diagnosis.text)")
        #expect(diagnosis.text.contains("audio_output"), "the fix names the setting")
    }

    /// pyatv at volume 0 sends −144 dB; a second pyatv then takes the box over from the first
    /// (which plays 30 s, so that a loaded machine's slow start still finds it playing).
    @Test func aMutedSenderAndASenderThatTookOverAreNamed() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let id = try Self.deviceID(daemon)
        let long = Products.scratchDirectory("doctor-media") + "/thirty.flac"
        let made = try runCommand(try #require(TestHost.which("ffmpeg")), [
            "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=30", "-ac", "2", long,
        ], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let first = try Self.pyatv(port: daemon.port, deviceID: id, volume: 0, file: long)
        defer { first.stop() }
        let muted = try Self.doctor(["127.0.0.1:\(daemon.port)", "--browse-seconds", "0"], until: "muted")
        #expect(muted.codes.contains("muted"), "\(muted.text)")
        let second = try Self.pyatv(port: daemon.port, deviceID: id, volume: 50)
        _ = second.waitForExit(timeout: 60)
        let diagnosis = try Self.doctor(["127.0.0.1:\(daemon.port)", "--browse-seconds", "0"], until: "taken-over")
        #expect(diagnosis.codes.contains("taken-over"), "\(diagnosis.text)")
        #expect(diagnosis.text.contains("The sender at 127.0.0.1 took over from the sender at 127.0.0.1"), "\(diagnosis.text)")
    }

    /// A RAOP sender whose sync packets contradict the clock its timing answers give (each
    /// claims its time 3 s off, ahead and behind by turns): the box does not follow them, plays
    /// by arrival, and the doctor says the sender's timing does not add up.
    @Test func aSenderWhoseSyncsContradictItsClockIsNamed() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let sender = try ManagedProcess(try Products.peerTool("python"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/raop_drifting_sender.py", "127.0.0.1", String(daemon.port), "0", "12", "3",
        ], directory: Products.scratchDirectory("doctor-implausible"), label: "implausible-sender")
        defer { sender.stop() }
        let diagnosis = try Self.doctor(["127.0.0.1:\(daemon.port)", "--browse-seconds", "0"], until: "syncs-implausible", limit: 12)
        #expect(diagnosis.codes.contains("syncs-implausible"), "\(diagnosis.text)\n\(sender.stdout)\(sender.stderr)")
    }

    /// An AirPlay 2 realtime stream whose packets the link alters (our bridge flips a byte in a
    /// fifth of the audio datagrams, as a sender keyed differently would look): they fail
    /// ChaCha20-Poly1305's check, and the doctor names packets failing authentication.
    @Test func packetsFailingAuthenticationAreNamed() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let sender = try TestHost(label: "doctor-auth-sender")
        defer { sender.close() }
        let box = try TestHost(label: "doctor-auth-box")
        defer { box.close() }
        let relay = try BufferedAudioTests.Group.relay(label: "doctor-auth", from: sender, to: box, addresses: ("10.98.6.1", "10.98.6.2"))
        defer { relay.0.close() }
        let bridge = try relay.0.spawn(try Products.peerTool("python"),
                                       [Products.repositoryRoot + "/Tests/IntegrationTests/peers/jitter_bridge.py"] + relay.1
                                           + ["0", "0", "0", "40", "--corrupt", "20"], label: "jitter-bridge")
        defer { bridge.stop() }
        let daemon = try RunningDaemon.start(in: box, extra: ["--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let stream = try sender.spawn(try Products.executable("airplay"), [
            "stream", sweep.directory + "/sweep.flac", "--protocol", "2", "--mode", "realtime", "--to", "10.98.6.2:7000",
        ], label: "airplay-stream")
        defer { stream.stop() }
        let diagnosis = try Self.doctor(in: box, ["--browse-seconds", "0"], until: "decrypt-failing")
        #expect(diagnosis.codes.contains("decrypt-failing") && diagnosis.status == 1, "\(diagnosis.text)\n\(stream.stderr)")
    }

    /// The box's link drops 10 % of what arrives and everything UDP it sends back (its resend
    /// requests included): packets are lost for good, and the doctor says the resends never come.
    @Test func lostPacketsWhoseResendsNeverComeAreNamed() throws {
        let hosts = try LinkedHosts(label: "doctor-loss", prefix: "10.98.2")
        defer { hosts.close() }
        let (sender, box) = (hosts.sender, hosts.box)
        try box.nft([["add", "table", "inet", "loss"],
                    ["add", "chain", "inet", "loss", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                    ["add", "rule", "inet", "loss", "in", "iifname", "!=", "lo", "meta", "l4proto", "udp", "numgen", "random", "mod", "100", "<", "10", "drop"],
                    ["add", "chain", "inet", "loss", "out", "{", "type", "filter", "hook", "output", "priority", "0", ";", "}"],
                    ["add", "rule", "inet", "loss", "out", "oifname", "!=", "lo", "meta", "l4proto", "udp", "drop"]])
        let daemon = try RunningDaemon.start(in: box, extra: ["--airplay2", "off", "--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let stream = try Self.pyatv(in: sender, address: "10.98.2.2", port: 7000, deviceID: daemon.storedDeviceID.replacingOccurrences(of: ":", with: ""))
        _ = stream.waitForExit(timeout: 60)
        let diagnosis = try Self.doctor(in: box, ["--browse-seconds", "0"], until: "resends-unanswered")
        #expect(diagnosis.codes.contains("resends-unanswered"), "\(diagnosis.text)")
    }

    /// `airplay stream --mode buffered` from a host of its own, its PTP clock dropped on the box's
    /// side (UDP 319 and 320): audio arrives, but there is no clock to play it on.
    @Test func aPTPClockThatNeverArrivesIsNamed() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let hosts = try LinkedHosts(label: "doctor-ptp", prefix: "10.98.3")
        defer { hosts.close() }
        let (sender, box) = (hosts.sender, hosts.box)
        try box.nft([["add", "table", "inet", "noclock"],
                    ["add", "chain", "inet", "noclock", "in", "{", "type", "filter", "hook", "input", "priority", "0", ";", "}"],
                    ["add", "rule", "inet", "noclock", "in", "udp", "dport", "{", "319", ",", "320", "}", "drop"]])
        let daemon = try RunningDaemon.start(in: box, extra: ["--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let stream = try sender.spawn(try Products.executable("airplay"),
                                      ["stream", sweep.directory + "/sweep.flac", "--mode", "buffered", "--to", "10.98.3.2:7000"], label: "airplay-stream")
        defer { stream.stop() }
        let diagnosis = try Self.doctor(in: box, ["--browse-seconds", "0"], until: "ptp-not-heard")
        #expect(diagnosis.codes.contains("ptp-not-heard") && diagnosis.status == 1, "\(diagnosis.text)\n\(stream.stderr)")
    }

    /// Another program holds UDP 319 and 320 when airplayd starts (nqptp, ptp4l): AirPlay 2 is
    /// on without buffered audio, and the doctor says which ports and how to find the holder.
    @Test func ptpPortsHeldByAnotherProgramAreNamed() throws {
        let box = try TestHost(label: "doctor-ptp-held")
        defer { box.close() }
        let holder = try box.spawn("/usr/bin/python3", ["-c", """
            import socket, sys, time
            held = []
            for port in (319, 320):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("0.0.0.0", port))
                held.append(s)
            print("holding", file=sys.stderr, flush=True)
            time.sleep(60)
            """], label: "ptp-holder")
        defer { holder.stop() }
        #expect(holder.waitForOutput("holding", timeout: 10), "\(holder.stderr)")
        let daemon = try RunningDaemon.start(in: box, extra: ["--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let diagnosis = try Self.doctor(in: box, ["--browse-seconds", "0"])
        #expect(diagnosis.codes.contains("ptp-off") && diagnosis.text.contains("Address already in use"),
                "\(diagnosis.text)\n\(daemon.process.stderr.suffix(1500))")
    }

    /// A box elsewhere keeps its own figures from the network: the doctor says so and how to
    /// get them. Once `airplay pair` made this machine the box's admin, the doctor pair-verifies
    /// and reads them from there, the same findings as on the box.
    @Test func aPairedAdminReadsTheBoxsFiguresFromAnotherMachine() throws {
        let hosts = try LinkedHosts(label: "doctor-paired", prefix: "10.98.5")
        defer { hosts.close() }
        let (sender, box) = (hosts.sender, hosts.box)
        let config = Products.scratchDirectory("doctor-paired") + "/airplayd.toml"
        try "pin = \"2468\"\nairplay2 = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: box, extra: ["--config", config, "--audio-output", "raw:/dev/null", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        let airplay = try Products.executable("airplay")
        let environment = ["XDG_CONFIG_HOME": Products.scratchDirectory("doctor-paired-sender"), "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        func doctor() throws -> (Diagnosis, String) {
            let result = try sender.run(airplay, ["doctor", "10.98.5.2:7000", "--browse-seconds", "0", "--json"], environment: environment, timeout: 30)
            return (try Diagnosis(result), result.stdout)
        }
        let (stranger, strangerJSON) = try doctor()
        #expect(stranger.codes.contains("no-report") && !stranger.codes.contains("idle") && stranger.text.contains("airplay pair"), "\(stranger.text)")
        #expect(strangerJSON.contains("\"figures\":null"), "\(strangerJSON)")

        let pair = try sender.run(airplay, ["pair", "--pin", "2468", "--to", "10.98.5.2:7000"], environment: environment, timeout: 30)
        #expect(pair.status == 0, "\(pair.stdout)\(pair.stderr)")
        let (admin, adminJSON) = try doctor()
        // The box runs no avahi-daemon here: its own figures say so, as they do on the box.
        #expect(admin.codes.contains("idle") && admin.codes.contains("not-published") && !admin.codes.contains("no-report"),
                "\(admin.text)\n\(daemon.process.stderr.suffix(1500))")
        #expect(adminJSON.contains("\"figures\":\"pair-verified\""), "\(adminJSON)")
    }
}
