import AirPlayTesting
import Foundation
import Testing

/// AirPlay 2 against pyatv (PyPI): with `airplay2 = true` the box advertises features 38, 43,
/// 46 and 48, and pyatv 0.18 takes its AirPlay 2 path on its own: transient pair-setup, the
/// control connection encrypted, SETUP with binary plists (session, then streams), an event
/// channel, realtime audio sealed with ChaCha20-Poly1305 and timed by NTP. The same daemon
/// still plays AirPlay 1 senders.
@Suite(.serialized) struct AirPlay2InteropTests {
    static let sweep: SweepMedia? = try? SweepMedia()

    /// A daemon serving AirPlay 2 (and AirPlay 1), writing raw PCM to `raw`.
    struct Box {
        let daemon: LocalDaemon
        let deviceID: String
        let features: String
        let raw: String

        init(access: String = "anyone") throws {
            let directory = Products.scratchDirectory("airplay2")
            let config = directory + "/airplayd.toml"
            try "airplay2 = true\naccess = \"\(access)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            raw = directory + "/out.pcm"
            daemon = try LocalDaemon(extra: ["--config", config, "--audio-output", "raw:\(raw)"])
            let log = daemon.process.stderr.split(separator: "\n")
            deviceID = String(try #require(log.first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first))
            features = String(try #require(log.first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first))
        }

        /// `atvremote stream_file` as pyatv does it for this box's `_raop._tcp` record: its `ft`
        /// decides the protocol (AirPlay 2 with bit 38 or 48); without `ft` pyatv speaks AirPlay 1.
        func stream(_ file: String, airPlay2: Bool = true, during: (() throws -> Void)? = nil) throws -> CommandResult {
            let atvremote = try Products.peerTool("atvremote")
            let sweep = try #require(AirPlay2InteropTests.sweep)
            let arguments = ["--debug", "--storage", "none", "--manual", "--address", "127.0.0.1", "--port", String(daemon.port),
                             "--protocol", "raop", "--id", deviceID,
                             "--service-properties", "|cn=0,1|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68" + (airPlay2 ? "|ft=\(features)" : "")]
            let process = try ManagedProcess(atvremote, arguments + ["stream_file=\(sweep.directory)/\(file)"],
                                             directory: sweep.directory, label: "atvremote")
            try during?()
            let status = process.waitForExit(timeout: 60)
            return CommandResult(status: status ?? -1, stdout: process.stdout, stderr: process.stderr)
        }

        /// What the box wrote, as samples.
        func output() throws -> [Int16] {
            let data = try Data(contentsOf: URL(fileURLWithPath: raw))
            return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
    }

    @Test func pyatvStreamsOverAirPlay2BitExactWithItsMetadata() throws {
        let sweep = try #require(Self.sweep)
        let box = try Box()
        var nowPlaying = ""
        let result = try box.stream("sweep.flac") {
            Thread.sleep(forTimeInterval: 3.5)
            nowPlaying = try RawHTTPConnection(port: box.daemon.port).request("GET", "/now-playing").text
        }
        let log = box.daemon.process.stderr
        #expect(result.status == 0, "\(result.stdout.suffix(3000))\(result.stderr.suffix(3000))")
        // pyatv's own account: it chose AirPlay 2 and paired transiently.
        let pyatvLog = result.stdout + result.stderr
        #expect(pyatvLog.contains("airplayv2") || pyatvLog.contains("AirPlayV2"), "pyatv took its AirPlay 2 path")
        #expect(log.contains("transient pairing: the connection is encrypted"), "\(log.suffix(2000))")
        #expect(log.contains("AirPlay 2 session setup") && log.contains("timing=NTP"))
        #expect(log.contains("AirPlay 2 event channel listening"))
        #expect(log.contains("codec=L16") && log.contains("encrypted=true"))

        let comparison = sweep.compare(try box.output())
        #expect(comparison.offset != nil, "the sweep is found in the output")
        #expect(comparison.exact >= 0.999, "bit-exact share \(comparison.exact)")
        print("measure: pyatv AirPlay 2 realtime stream, bit-exact \(String(format: "%.4f", comparison.exact * 100)) %")
        #expect(log.contains("lost=0") && !log.contains("does not authenticate"), "every packet opened, none lost on loopback")

        let playing = try #require(try JSONSerialization.jsonObject(with: Data(nowPlaying.utf8)) as? [String: Any], "\(nowPlaying)")
        #expect(playing["title"] as? String == "Sweep Song")
        #expect(playing["artist"] as? String == "Test Artist")
        #expect(playing["state"] as? String == "playing")
        #expect(abs((playing["duration"] as? Double ?? 0) - 6) < 0.1, "progress gave the duration")
    }
}
