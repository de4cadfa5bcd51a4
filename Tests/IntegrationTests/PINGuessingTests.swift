import AirPlayTesting
import Foundation
import Testing

/// PIN guessing against the running daemon from many addresses (`Protocol/pairing.md` §7): an
/// attacker with 200 addresses of one IPv6 /64 (as one host rotating its privacy addresses)
/// gets the ten guesses one address gets, then the Backoff error with its delay; the box's owner
/// on another address pairs at once meanwhile. The guesser is `peers/pin_guesser.py`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PINGuessingTests {
    @Test func twoHundredAddressesOfOneNetworkGetTenGuessesAndTheOwnerPairsAtOnce() throws {
        let host = try TestHost(label: "pin-guessing")
        defer { host.close() }
        let batch = host.directory + "/addresses"
        try ((1...200).map { "address add fd00:64::\(String($0, radix: 16))/64 dev lo" } + ["address add fd00:65::1/64 dev lo"])
            .joined(separator: "\n").appending("\n").write(toFile: batch, atomically: true, encoding: .utf8)
        let added = try host.run(try #require(TestHost.which("ip")), ["-6", "-batch", batch], timeout: 30)
        #expect(added.status == 0, "\(added.stderr)")
        let config = host.directory + "/airplayd.toml"
        try "pin = \"2468\"\naccess = \"paired\"\nairplay2 = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon.start(in: host, port: 7000, extra: ["--config", config, "--audio-output", "raw:/dev/null",
                                                                           "--video-sink", "fakesink", "--ptp", "off"])
        defer { daemon.process.stop(grace: 2) }

        let guesser = Products.repositoryRoot + "/Tests/IntegrationTests/peers/pin_guesser.py"
        let attack = try host.run(try Products.peerTool("python3"), [guesser, "fd00:65::1", "7000", "fd00:64::+200", "5", "120"], timeout: 180)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(attack.stdout.utf8)) as? [String: Any], "\(attack.stdout)\(attack.stderr)")
        let checked = result["checked"] as? Int ?? -1, refused = result["refused"] as? Int ?? -1
        #expect(checked == 10, "the /64 is one source: ten guesses checked, \(result)")
        #expect(refused == 200 - 2, "every later address refused at its first try (the tenth guess came from the second): \(result)")
        #expect((result["other"] as? [Any])?.isEmpty == true && result["busy"] as? Int == 0, "refused for the source, never as busy: \(result)")
        #expect((result["retry_delays"] as? [Int])?.allSatisfy { (1...3600).contains($0) } == true, "Backoff carries its delay: \(result)")

        // The owner, on another network (here the box's own ::1), pairs with the right PIN at once.
        let started = Date()
        let owner = try host.run(try Products.executable("airplay"), ["pair", "--pin", "2468", "--to", "[::1]:7000"],
                                 environment: ["XDG_CONFIG_HOME": host.directory + "/owner-config"], timeout: 30)
        let waited = Date().timeIntervalSince(started)
        #expect(owner.status == 0, "\(owner.stdout)\(owner.stderr)\n\(daemon.process.stderr.suffix(1500))")
        #expect(waited < 5, "the owner waited \(waited) s")
        let diagnostics = try host.run(try #require(TestHost.which("curl")), ["-s", "http://[::1]:7000/diagnostics"], timeout: 10).stdout
        #expect(diagnostics.contains("fd00:64:0:0::/64"), "the locked-out network is named: \(diagnostics.prefix(800))")
        print("measure: PIN guessing from 200 addresses of one /64: \(checked) guesses checked, \(refused) refused in \(result["seconds"] ?? "?") s; the owner paired in \(String(format: "%.2f", waited)) s")
    }
}
