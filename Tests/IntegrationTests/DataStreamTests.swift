import AirPlayTesting
import Foundation
import Testing

/// AirPlay 2 data streams (type 130) against pyatv's own remote-control tunnel, the one it
/// opens to Apple TVs: a remote-control-only session, RECORD, then the data stream, whose
/// MediaRemote messages each get their reply. What plays meanwhile plays on, untouched.
/// `Protocol/airplay2.md` §18.
@Suite(.serialized) struct DataStreamInteropTests {
    @Test func pyatvsTunnelIsAnsweredWhileAStreamPlaysOn() throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let directory = Products.scratchDirectory("datastream")
        let raw = directory + "/out.pcm"
        try "airplay2 = true\n".write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--audio-output", "raw:\(raw)"])
        let stream = try ManagedProcess(try Products.executable("airplay"), ["stream", sweep.directory + "/sweep.flac", "--to", "127.0.0.1:\(daemon.port)",
                                                                              "--protocol", "1"],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: directory, label: "airplay")
        defer { stream.stop() }
        #expect(daemon.process.waitForOutput("RECORD", timeout: 10) || daemon.process.waitForOutput("audio session", timeout: 5))
        let tunnel = try runCommand(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/pyatv_datastream.py", String(daemon.port),
        ], timeout: 60)
        #expect(tunnel.stdout.contains("\"ok\": true") && tunnel.stdout.contains("\"replies\": 2"), "\(tunnel.stdout)\(tunnel.stderr.suffix(2000))")
        let log = daemon.process.stderr
        #expect(log.contains("AirPlay 2 remote-control session") && log.contains("AirPlay 2 data stream listening"), "\(log.suffix(3000))")
        #expect(log.contains("MediaRemote DEVICE_INFO"), "the message's type, at debug level")
        #expect(daemon.process.waitForOutput("AirPlay 2 data stream ended", timeout: 5) && daemon.process.stderr.contains("messages=2"))

        // The stream was never taken over: it plays to its end, bit for bit.
        #expect(stream.waitForExit(timeout: 30) == 0, "\(stream.stderr.suffix(1500))")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let comparison = sweep.compare(samples)
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        #expect(!daemon.process.stderr.contains("taken over"))
        print("measure: pyatv's remote-control tunnel: data stream answered (\(tunnel.stdout.trimmingCharacters(in: .whitespacesAndNewlines))), the stream beside it \(String(format: "%.2f", comparison.exact * 100)) % bit-exact")
    }
}
