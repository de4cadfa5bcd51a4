import AirPlayTesting
import Foundation
import Testing

/// Now playing as an iPhone tells a receiver with feature bit 50 (`Protocol/now-playing.md` §7):
/// MediaRemote plists on `POST /command`, no DMAP. The stand-in (`peers/iphone_now_playing_sender.py`,
/// from the documented facts, on pyatv's AirPlay 2) sends the five-message sequence, a patch, a
/// track change and a pause; every surface of the box follows: `/now-playing`, MPRIS through
/// playerctl, MQTT, the page's `/state` and the metadata pipe.
@Suite(.serialized, .timeLimit(.minutes(10))) struct MediaRemoteNowPlayingInteropTests {
    @Test func anIPhonesNowPlayingReachesEverySurface() throws {
        try TestHost.require(["playerctl", "dbus-daemon", "mosquitto", "mosquitto_sub", "ffmpeg", "python3"])
        let directory = Products.scratchDirectory("media-remote")
        let bus = try SessionBus(directory: directory)
        let broker = try Broker(directory: directory)
        let mqtt = try broker.subscribe(["airplayd/mr/#"])
        defer { mqtt.stop() }
        let ffmpeg = try #require(TestHost.which("ffmpeg"))
        for job in [["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=16", "-ac", "2", directory + "/tone.wav"],
                    ["-f", "lavfi", "-i", "color=c=red:s=40x40", "-frames:v", "1", directory + "/a.jpg"],
                    ["-f", "lavfi", "-i", "color=c=blue:s=24x24", "-frames:v", "1", directory + "/b.png"]] {
            #expect(try runCommand(ffmpeg, ["-loglevel", "error", "-y"] + job, timeout: 30).status == 0)
        }
        let coverA = try Data(contentsOf: URL(fileURLWithPath: directory + "/a.jpg"))
        let coverB = try Data(contentsOf: URL(fileURLWithPath: directory + "/b.png"))
        let pipe = directory + "/metadata"
        try """
            airplay2 = true
            mpris = "session"
            metadata_pipe = "\(pipe)"
            web_listen = "127.0.0.1:\(broker.port + 1)"
            [mqtt]
            host = "127.0.0.1"
            port = \(broker.port)
            topic = "airplayd/mr"
            """.write(toFile: directory + "/airplayd.toml", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon(extra: ["--config", directory + "/airplayd.toml", "--audio-output", "raw:/dev/null"],
                                     environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let log = daemon.process.stderr.split(separator: "\n")
        let deviceID = String(try #require(log.first { $0.contains("device.id=") }?.split(separator: "device.id=").last?.split(separator: " ").first))
        let features = String(try #require(log.first { $0.contains("airplayd: ready") }?.split(separator: "features=").last?.split(separator: " ").first))
        #expect(try #require(FeatureSetText.bits(features)).contains(50), "the box advertises bit 50: \(features)")
        let reader = try PipeReader(fifo: pipe)

        let phone = try ManagedProcess(try Products.peerTool("python3"), [
            Products.repositoryRoot + "/Tests/IntegrationTests/peers/iphone_now_playing_sender.py", String(daemon.port), deviceID, features,
            directory + "/tone.wav", directory + "/a.jpg", directory + "/b.png",
        ], directory: directory, label: "iphone")
        defer { phone.stop() }
        func nowPlaying() -> [String: Any] {
            guard let text = try? RawHTTPConnection(port: daemon.port).request("GET", "/now-playing").text else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
        }
        func mpris(_ format: String) -> String { MPRISInteropTests.value(bus.address, ["metadata", "--format", format]) }
        func mprisProperty(_ name: String) -> String {
            let result = try? runCommand(try #require(TestHost.which("dbus-send")), [
                "--session", "--print-reply=literal", "--dest=org.mpris.MediaPlayer2.airplayd", "/org/mpris/MediaPlayer2",
                "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2.Player", "string:\(name)",
            ], environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address], timeout: 5)
            return result?.stdout.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        }

        // The five messages: title, artist, album, the cover, a progress that runs from the
        // phone's timestamp (30 s, two seconds before it was sent), next enabled, previous not.
        #expect(phone.waitForOutput("STEP first", timeout: 30, inStdout: true), "\(phone.stdout)\(phone.stderr.suffix(2000))")
        var shown: [String: Any] = [:]
        #expect(poll(timeout: 5) {
            shown = nowPlaying()
            return shown["title"] as? String == "Phone Song" && shown["state"] as? String == "playing"
        }, "\(shown)")
        #expect(shown["artist"] as? String == "Phone Artist" && shown["album"] as? String == "Phone Album")
        #expect(shown["duration"] as? Double == 200)
        let artwork = shown["artwork"] as? [String: Any]
        #expect(artwork?["type"] as? String == "image/jpeg" && artwork?["bytes"] as? Int == coverA.count, "cover A, whole")
        let position = shown["position"] as? Double ?? 0
        #expect(position >= 31.5 && position < 34, "30 s at the phone's timestamp, two seconds before: \(position)")
        Thread.sleep(forTimeInterval: 1)   // the second over which the progress must run on
        let later = nowPlaying()["position"] as? Double ?? 0
        #expect(later - position > 0.7 && later - position < 1.6, "the progress runs on: \(position) → \(later)")
        #expect(shown["canGoNext"] as? Bool == true && shown["canGoPrevious"] as? Bool == false)
        #expect(poll(timeout: 5) { mpris("{{title}}|{{artist}}|{{album}}|{{mpris:length}}") == "Phone Song|Phone Artist|Phone Album|200000000" },
                "\(mpris("{{title}}|{{artist}}|{{album}}|{{mpris:length}}"))")
        #expect(mpris("{{mpris:artUrl}}").hasPrefix("file://"))
        #expect(mprisProperty("CanGoNext").hasSuffix("true") && mprisProperty("CanGoPrevious").hasSuffix("false"),
                "\(mprisProperty("CanGoNext")) \(mprisProperty("CanGoPrevious"))")
        #expect(mqtt.waitForOutput(mqttLine("airplayd/mr/title", "Phone Song"), timeout: 5, inStdout: true))
        #expect(mqtt.waitForOutput("airplayd/mr/cover|\(coverA.count)|", timeout: 5, inStdout: true), "the cover, whole")
        let page = try RawHTTPConnection(port: broker.port + 1).request("GET", "/state").text
        #expect(page.contains("\"title\":\"Phone Song\""), "\(page.prefix(500))")

        // A patch changes the album alone.
        #expect(phone.waitForOutput("STEP patch", timeout: 10, inStdout: true))
        #expect(poll(timeout: 5) { nowPlaying()["album"] as? String == "Patched Album" })
        #expect(nowPlaying()["title"] as? String == "Phone Song")
        #expect(mqtt.waitForOutput(mqttLine("airplayd/mr/album", "Patched Album"), timeout: 5, inStdout: true))

        // A new track: new text, cover B, the progress from zero; previous now, not next.
        #expect(phone.waitForOutput("STEP track", timeout: 10, inStdout: true))
        #expect(poll(timeout: 5) { nowPlaying()["title"] as? String == "Second Song" })
        shown = nowPlaying()
        #expect((shown["artwork"] as? [String: Any])?["bytes"] as? Int == coverB.count && (shown["artwork"] as? [String: Any])?["type"] as? String == "image/png")
        #expect((shown["position"] as? Double ?? 99) < 2 && shown["duration"] as? Double == 150)
        #expect(poll(timeout: 5) { nowPlaying()["canGoNext"] as? Bool == false && nowPlaying()["canGoPrevious"] as? Bool == true })
        #expect(poll(timeout: 5) { mpris("{{title}}") == "Second Song" } && mprisProperty("CanGoNext").hasSuffix("false"))
        #expect(mqtt.waitForOutput(mqttLine("airplayd/mr/title", "Second Song"), timeout: 5, inStdout: true))

        // The phone pauses: the state says so.
        #expect(phone.waitForOutput("STEP paused", timeout: 10, inStdout: true))
        #expect(poll(timeout: 5) { nowPlaying()["state"] as? String == "paused" })
        #expect(poll(timeout: 5) { MPRISInteropTests.value(bus.address, ["status"]) == "Paused" })
        #expect(mqtt.waitForOutput(mqttLine("airplayd/mr/state", "paused"), timeout: 5, inStdout: true))

        #expect(phone.waitForExit(timeout: 40) != nil)
        #expect(phone.stdout.contains("\"ok\": true"), "\(phone.stdout)\(phone.stderr.suffix(2000))")
        Thread.sleep(forTimeInterval: 1)   // the reader takes the last items off the FIFO (it reports only when stopped)
        let (items, errors) = try reader.finish()
        #expect(errors.isEmpty, "\(errors)")
        // The pipe: the bodies as sent (shairport-sync 5.3's `copl`), and DMAP items for readers
        // of the older form, no `prgr` (nothing sent one).
        let bodies = items.filter { $0.code == "copl" }
        #expect(bodies.count == 10, "every POST /command body: \(items.map(\.description))")
        #expect(bodies.allSatisfy { $0.data.starts(with: Data("bplist00".utf8)) })
        let titles = items.filter { $0.type == "core" && $0.code == "minm" }.map(\.text)
        #expect(titles.contains("Phone Song") && titles.last == "Second Song", "\(titles)")
        #expect(items.filter { $0.code == "PICT" }.map(\.data.count).contains(coverB.count))
        print("measure: iPhone-like now playing (bit 50): \(bodies.count) /command bodies, surfaces followed; pipe \(items.map(\.description).joined(separator: " "))")
    }
}

/// A features value (`0xLOW,0xHIGH`) as bit numbers, read independently of the code under test.
enum FeatureSetText {
    static func bits(_ text: String) -> Set<Int>? {
        let halves = text.split(separator: ",").map { UInt64($0.dropFirst(2), radix: 16) }
        guard !halves.isEmpty, halves.allSatisfy({ $0 != nil }) else { return nil }
        let value = halves[0]! | (halves.count > 1 ? halves[1]! << 32 : 0)
        return Set((0..<64).filter { value & (1 << UInt64($0)) != 0 })
    }
}
