import AirPlayTesting
import Foundation
import Testing

/// An iPhone's AirPlay 2 session, step by step (`airplay conformance --profile apple`), against
/// airplayd and against the receiver iPhones are known to play to: shairport-sync 5.2.1 with
/// AirPlay 2 and nqptp, built from `../shared/peers` by `tools/setup-deps --test`. Each runs in
/// a namespace of its own, linked to the prober's: every step must end the same way (result,
/// status, the keys of each reply, the fp-setup bytes), except the differences named here,
/// which `Protocol/airplay2.md` §15 explains.
@Suite(.serialized, .timeLimit(.minutes(10))) struct AppleProfileTests {
    /// Where shairport-sync 5 and nqptp are installed (`AIRPLAY_PEERS` moves the cache).
    static var reference: String {
        (ProcessInfo.processInfo.environment["AIRPLAY_PEERS"] ?? "/var/cache/airplay-peers") + "/shairport-sync-5.2.1-nqptp-1.2.5"
    }

    /// Steps whose replies differ on purpose: the reason, as `Protocol/airplay2.md` §15 gives it.
    static let intendedDifferences: [String: String] = [
        "apple.configure": "shairport-sync answers an empty dictionary unless HomeKit access control is being turned on; airplayd always says who it is",
        "apple.pair-verify": "M2's sealed part carries each receiver's own identifier: airplayd's pairing UUID (36 bytes), shairport-sync's 17",
    ]

    /// The results of one run: check id → (result, detail).
    static func walk(_ prober: TestHost, receiver: String) throws -> [String: (result: String, detail: String)] {
        let run = try prober.run(try Products.executable("airplay"), ["conformance", "--profile", "apple", "--json", receiver], timeout: 120)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)\(run.stderr)")
        let checks = try #require(document["checks"] as? [[String: Any]])
        var results: [String: (String, String)] = [:]
        for check in checks {
            results[check["id"] as? String ?? "?"] = (check["result"] as? String ?? "?", check["detail"] as? String ?? "")
        }
        return results
    }

    @Test func everyStepEndsAsWithShairportSync5() throws {
        let nqptp = Self.reference + "/bin/nqptp", shairport = Self.reference + "/bin/shairport-sync"
        guard FileManager.default.isExecutableFile(atPath: shairport), FileManager.default.isExecutableFile(atPath: nqptp) else {
            throw TestHostError("shairport-sync 5 is not built at \(Self.reference): run tools/setup-deps --test (../shared/peers/build shairport-sync)")
        }
        let prober = try TestHost(label: "apple-prober")
        let theirs = try TestHost(label: "apple-sps5")
        let ours = try TestHost(label: "apple-box")
        defer { [ours, theirs, prober].forEach { $0.close() } }
        let theirLink = try theirs.link(to: prober, addresses: ["10.96.1.2"], peerAddress: "10.96.1.1")
        let ourLink = try ours.link(to: prober, addresses: ["10.96.2.2"], peerAddress: "10.96.2.1")

        // The reference: nqptp first (it owns 319/320 and shares its clock), then shairport-sync,
        // which publishes through avahi and listens on 7000.
        try theirs.startAvahi(interfaces: [theirLink])
        let clock = try theirs.spawn(nqptp, [], label: "nqptp")
        defer { clock.stop() }
        try """
            general = { name = "Reference"; port = 7000; output_backend = "stdout"; };
            stdout = { };
            metadata = { enabled = "yes"; };
            """.write(toFile: theirs.directory + "/sps.conf", atomically: true, encoding: .utf8)
        let reference = try theirs.spawn(shairport, ["-c", theirs.directory + "/sps.conf", "-u", "-vv"], label: "shairport-sync-5")
        defer { reference.stop() }
        #expect(try theirs.waitForService("_airplay._tcp", timeout: 20) { $0.name == "Reference" } != nil, "\(reference.stderr.suffix(3000))")

        try ours.startAvahi(interfaces: [ourLink])
        let daemon = try RunningDaemon.start(in: ours, name: "Box", extra: ["--audio-output", "fakesink sync=true", "--video", "off"])

        let reference5 = try Self.walk(prober, receiver: "10.96.1.2:7000")
        let box = try Self.walk(prober, receiver: "10.96.2.2:7000")
        for id in box.keys.sorted() {
            print("measure: apple profile \(id): airplayd \(box[id]!.result) \(box[id]!.detail) | shairport-sync 5 \(reference5[id]?.result ?? "-") \(reference5[id]?.detail ?? "-")")
        }
        #expect(box.values.allSatisfy { $0.result == "pass" }, "airplayd: \(box.filter { $0.value.result != "pass" })\n\(daemon.process.stderr.suffix(4000))")
        for (id, ourStep) in box {
            let theirStep = try #require(reference5[id], "no \(id) against shairport-sync 5")
            if let reason = Self.intendedDifferences[id] {
                #expect(ourStep.result == "pass", "\(id) (\(reason))")
                continue
            }
            #expect(ourStep.result == theirStep.result && ourStep.detail == theirStep.detail,
                    "\(id): airplayd \(ourStep.result) \(ourStep.detail), shairport-sync 5 \(theirStep.result) \(theirStep.detail)")
        }
        withExtendedLifetime(daemon) {}
    }
}
