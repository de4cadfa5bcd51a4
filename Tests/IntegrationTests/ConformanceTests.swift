import AirPlayTesting
import Foundation
import Testing

/// `airplay conformance` against three receivers: airplayd passes all of it; shairport-sync
/// 3.3.8 passes the RAOP section (what else it does not do is printed); and a receiver that
/// gets the protocol wrong on purpose fails exactly the checks it breaks, so a failing check
/// really fails.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ConformanceTests {
    struct Report {
        let document: [String: Any]
        let checks: [String: (result: String, detail: String)]

        init(_ text: String) throws {
            document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
            var checks: [String: (String, String)] = [:]
            for check in document["checks"] as? [[String: Any]] ?? [] {
                checks[check["id"] as? String ?? ""] = (check["result"] as? String ?? "", check["detail"] as? String ?? "")
            }
            self.checks = checks
        }

        func ids(_ result: String) -> [String] { checks.filter { $0.value.result == result }.map(\.key).sorted() }
        var summary: String {
            checks.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.result) \($0.value.detail.prefix(100))" }.joined(separator: "\n")
        }
    }

    func conformance(in host: TestHost, _ arguments: [String]) throws -> (status: Int32, report: Report) {
        let result = try host.run(try Products.executable("airplay"), ["conformance"] + arguments + ["--json"], timeout: 120)
        return (result.status, try Report(result.stdout))
    }

    @Test func airplaydPassesEveryCheck() throws {
        let host = try TestHost(label: "conf-airplayd")
        defer { host.close() }
        try host.startAvahi()
        let daemon = try RunningDaemon.start(in: host, extra: ["--audio-output", "fakesink sync=true", "--video-sink", "fakesink sync=true"])
        defer { daemon.process.stop(grace: 2) }
        #expect(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Integration Box") } != nil)
        let (status, report) = try conformance(in: host, ["127.0.0.1:7000"])
        #expect(report.ids("fail").isEmpty, "\(report.summary)")
        #expect(report.ids("pass").count >= 30, "\(report.summary)")
        // The AirPlay 2 stream checks need transient pairing, PTP and buffered audio: all on by default.
        for id in ["airplay2.session", "airplay2.realtime-stream", "airplay2.buffered-stream"] {
            #expect(report.checks[id]?.result == "pass", "\(id): \(report.checks[id]?.detail ?? "not run")")
        }
        #expect(status == 0)
        print("measure: airplay conformance → airplayd: \(report.ids("pass").count) passed, \(report.ids("skip").count) skipped "
              + "(\(report.ids("skip").joined(separator: ", ")))")
    }

    @Test func shairportSyncPassesTheRAOPSection() throws {
        try TestHost.require(["shairport-sync"])
        let host = try TestHost(label: "conf-sps")
        defer { host.close() }
        try host.startAvahi()
        let shairport = try host.spawn(try #require(TestHost.which("shairport-sync")), ["-a", "Conformance Peer", "-p", "5059", "-o", "dummy"],
                                       label: "shairport-sync")
        defer { shairport.stop() }
        #expect(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Conformance Peer") } != nil, "\(shairport.stderr)")
        let (_, report) = try conformance(in: host, ["127.0.0.1:5059"])
        let raop = report.checks.filter { $0.key.hasPrefix("raop.") || $0.key.hasPrefix("discovery.raop") }
        #expect(raop.count >= 12)
        #expect(raop.allSatisfy { $0.value.result == "pass" }, "\(report.summary)")
        print("measure: airplay conformance → shairport-sync 3.3.8: \(report.ids("pass").count) passed; "
              + "fails \(report.ids("fail").map { "\($0) (\(report.checks[$0]?.detail.prefix(60) ?? ""))" }.joined(separator: "; ")); "
              + "skips \(report.ids("skip").joined(separator: ", "))")
    }

    @Test func aReceiverThatGetsItWrongFailsTheChecksItBreaks() throws {
        let host = try TestHost(label: "conf-broken")
        defer { host.close() }
        let broken = try host.spawn("/usr/bin/python3", [Products.repositoryRoot + "/Tests/IntegrationTests/peers/broken_receiver.py", "0"],
                                    label: "broken")
        #expect(poll(timeout: 10) { Int(broken.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let port = try #require(Int(broken.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let (status, report) = try conformance(in: host, ["127.0.0.1:\(port)", "--browse-seconds", "0.5"])
        #expect(status == 1)
        for id in ["info.get", "control.unknown-path", "control.malformed-request", "control.oversized-head", "rtsp.cseq", "raop.options",
                   "raop.setup"] {
            #expect(report.checks[id]?.result == "fail", "\(id) must fail: \(report.summary)")
        }
        for id in ["raop.record", "raop.timing", "raop.resend", "raop.flush", "raop.teardown"] {
            #expect(report.checks[id]?.result == "skip", "\(id) follows a failed SETUP: \(report.summary)")
        }
        #expect(report.checks["discovery.airplay-record"]?.result == "skip")
    }

    /// The same fixture with a sound RTSP session whose UDP side is silent: the timing and
    /// resend checks fail, while the RTSP steps around them pass.
    @Test func aReceiverSilentOnUDPFailsTheTimingAndResendChecks() throws {
        let host = try TestHost(label: "conf-mute")
        defer { host.close() }
        let mute = try host.spawn("/usr/bin/python3", [Products.repositoryRoot + "/Tests/IntegrationTests/peers/broken_receiver.py", "0",
                                                       "silent-udp"], label: "mute")
        #expect(poll(timeout: 10) { Int(mute.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let port = try #require(Int(mute.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let (status, report) = try conformance(in: host, ["127.0.0.1:\(port)", "--section", "raop", "--browse-seconds", "0.5"])
        #expect(status == 1)
        for id in ["raop.announce", "raop.setup", "raop.record", "raop.flush", "raop.teardown"] {
            #expect(report.checks[id]?.result == "pass", "\(id): \(report.summary)")
        }
        #expect(report.checks["raop.timing"]?.result == "fail", "\(report.summary)")
        #expect(report.checks["raop.resend"]?.result == "fail", "\(report.summary)")
    }
}
