import AirPlayTesting
import Foundation
import Testing

/// AirPlay 2 realtime audio (type 96) in a PTP session, timed only by 0xD7 anchors, as OwnTone
/// and Music Assistant send it, from a sender of ours whose promise is known to the frame
/// (`peers/ptp_realtime_sender.py`: pyatv's AirPlay 2 path, a PTP session, anchors on the
/// clock `airplay ptp-master` serves). The sender and the room each have a namespace, joined
/// by a veth link, so PTP crosses a real link.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RealtimePTPTests {
    /// Every frame of the file plays bit for bit and when the sender promised it, from the
    /// first second on, on the PTP clock (`timedMostlyBy: ptp`).
    @Test func anchorsOnThePTPClockPlaceEveryFrameWhenPromised() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let group = try BufferedAudioTests.Group(label: "rtptp", count: 1, fifos: true)
        try group.start()
        let daemon = group.daemons[0]
        let log = daemon.process.stderr.split(separator: "\n")
        let deviceID = String(try #require(log.first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first))
        let features = String(try #require(log.first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first))
        let master = try group.sender.spawn(try Products.executable("airplay"), ["ptp-master", "--to", "10.94.1.2", "--seconds", "60"],
                                            label: "ptp-master")
        defer { master.stop() }
        #expect(master.waitForOutput("serving PTP as", timeout: 10, inStdout: true), "\(master.stderr)")
        let clock = try #require(master.stdout.split(separator: " ").dropFirst(3).first.map(String.init), "\(master.stdout)")
        // The room's follower takes the master within a few Syncs (its `/ptp` then has an offset); the stream then starts.
        let curl = try #require(TestHost.which("curl"))
        var ptp = ""
        #expect(poll(timeout: 10, interval: 0.1) {
            ptp = (try? group.receivers[0].run(curl, ["-s", "http://127.0.0.1:7000/ptp"]).stdout) ?? ""
            return ((try? JSONSerialization.jsonObject(with: Data(ptp.utf8)) as? [String: Any])?["offset_to_system_clock_ns"] as? Int) != nil
        }, "the room follows the master: \(ptp)")
        let result = try group.sender.run(try Products.peerTool("python"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/ptp_realtime_sender.py", "10.94.1.2", "7000", deviceID,
            "|cn=0,1|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68|ft=\(features)", "10.94.1.1", clock,
            sweep.directory + "/sweep.wav", group.outputs[0],
        ], timeout: 90)
        let line = try #require(result.stdout.split(separator: "\n").last.map(String.init), "\(result.stdout)\(result.stderr)")
        #expect(result.status == 0 && line.hasPrefix("OK "), "\(result.stdout)\(result.stderr.suffix(3000))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any])
        let exact = report["exact"] as? Double ?? 0
        let errors = report["errors_ms"] as? [Double] ?? []
        #expect(exact >= 0.999, "\(report)")
        #expect(errors.count >= 5 && errors.allSatisfy { abs($0) <= 5 }, "heard when promised, from the first second: \(errors)")
        daemon.process.waitForOutput("audio session ended", moreThan: 0, timeout: 5)
        #expect(daemon.process.stderr.contains("realtime audio anchored on PTP") && daemon.process.stderr.contains("clock=ptp"),
                "\(daemon.process.stderr.suffix(2000))")
        print("measure: realtime AirPlay 2 on PTP (0xD7 anchors), bit-exact \(exact * 100) %, heard against the promise \(errors) ms")
    }
}
