import AirPlayTesting
import Foundation
import Testing

/// airplayd in front of HLS: it chooses the variants its display and decoders take, tells which
/// one plays, and fetches AES-128 keys itself with the cookies the sender hands over.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HLSReceiverTests {
    /// One state folder for the suite, so `rate`, `stop` and `status` address the session `play` started.
    static let state = Products.scratchDirectory("xdg")
    /// Media of its own: the suite reads the server's request log, which a suite running beside
    /// it must not write to.
    static let media: TestMedia? = try? TestMedia(seconds: 6, variants: true)

    private func airplay(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try runCommand(try Products.executable("airplay"), arguments,
                       environment: ["XDG_STATE_HOME": Self.state, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"],
                       timeout: timeout)
    }

    private func config(_ text: String) throws -> String {
        let path = Products.scratchDirectory("hlsconf") + "/airplayd.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The playback info while it plays (its `hlsVariant` extension as XML text).
    private func playbackInfo(_ port: Int, until condition: (String) -> Bool) -> String {
        var text = ""
        _ = poll(timeout: 15, interval: 0.2) {
            text = (try? RawHTTPConnection(port: port).request("GET", "/playback-info").text) ?? ""
            return condition(text)
        }
        return text
    }

    /// A display that shows at most 320x180 gets only the 320x180 variant: the 640x360 one is
    /// left out of the master the player sees, and its playlist is never fetched.
    @Test func theBoxPlaysOnlyWhatItsDisplayShows() throws {
        let media = try #require(Self.media)
        let daemon = try LocalDaemon(extra: ["--config", try config("video_max_resolution = \"320x180\"\n")])
        let before = media.requests.count
        let result = try airplay(["play", media.url("variants/master.m3u8"), "--to", "127.0.0.1:\(daemon.port)", "--wait"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let requests = media.requests.dropFirst(before)
        #expect(requests.contains("/variants/v0/index.m3u8") && !requests.contains("/variants/v1/index.m3u8"), "\(requests)")
        let log = daemon.process.stderr
        #expect(log.contains("hls variants chosen") && log.contains("allowed=0 ") && log.contains("640x360 is larger than the display's 320x180"),
                "\(log.suffix(2000))")
        #expect(log.contains("hls variant playing") && log.contains("variant=0"))
    }

    /// Without limits both variants may play; `/playback-info` says which one does.
    @Test func playbackInfoSaysWhichVariantPlays() throws {
        let media = try #require(Self.media)
        let daemon = try LocalDaemon()
        let result = try airplay(["play", media.url("variants/master.m3u8"), "--to", "127.0.0.1:\(daemon.port)"])
        #expect(result.status == 0, "\(result.stderr)")
        let info = playbackInfo(daemon.port) { $0.contains("<key>hlsVariant</key>") && $0.contains("<key>index</key>") }
        #expect(info.contains("<key>allowed</key>\n\t\t<array>\n\t\t\t<integer>0</integer>\n\t\t\t<integer>1</integer>"), "\(info)")
        #expect(info.contains("<key>resolution</key>"), "\(info)")
        _ = try airplay(["stop", "--to", "127.0.0.1:\(daemon.port)"])
    }

    /// AES-128 HLS whose key sits behind an HTTPS server that wants a session cookie: with the
    /// cookie handed over in /play the box fetches the key and plays to the end; without it,
    /// playback fails and says why.
    @Test func encryptedHLSPlaysWithTheSendersCookieOnly() throws {
        let media = try #require(Self.media)
        let python = try #require(TestHost.which("python3"))
        let openssl = try #require(TestHost.which("openssl"))
        let tls = Products.scratchDirectory("tls")
        try FileManager.default.createDirectory(atPath: tls + "/www/keys", withIntermediateDirectories: true)
        let made = try runCommand(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", tls + "/key.pem",
                                            "-out", tls + "/cert.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                                            "-addext", "subjectAltName=IP:127.0.0.1"], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        try Data("0123456789abcdef".utf8).write(to: URL(fileURLWithPath: tls + "/www/keys/k.bin"))
        let keyServer = try ManagedProcess(python, [Products.repositoryRoot + "/Tests/IntegrationTests/peers/https_key_server.py",
                                                    tls + "/www", tls + "/cert.pem", tls + "/key.pem", "session=opensesame"],
                                           directory: tls, label: "https-keys")
        #expect(poll(timeout: 10) { Int(keyServer.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let keyPort = try #require(Int(keyServer.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let folder = media.directory + "/enc"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "https://127.0.0.1:\(keyPort)/keys/k.bin\n\(tls)/www/keys/k.bin\n".write(toFile: folder + "/keyinfo", atomically: true, encoding: .utf8)
        let encoded = try runCommand(try #require(TestHost.which("ffmpeg")), [
            "-loglevel", "error", "-y", "-i", media.directory + "/clip.mp4", "-c", "copy", "-t", "4", "-f", "hls", "-hls_time", "2",
            "-hls_playlist_type", "vod", "-hls_key_info_file", folder + "/keyinfo", folder + "/index.m3u8"], timeout: 60)
        #expect(encoded.status == 0, "\(encoded.stderr)")

        let daemon = try LocalDaemon(extra: ["--config", try config("tls_ca_file = \"\(tls)/cert.pem\"\n")])
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        let good = try airplay(["play", media.url("enc/index.m3u8"), "--header", "Cookie: session=opensesame", "--wait"] + to)
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(good.stdout.contains("event: stopped"))
        #expect(daemon.process.stderr.contains("hls key fetched"), "\(daemon.process.stderr.suffix(2000))")
        #expect(daemon.process.stderr.contains("video reached its end"))

        let bad = try airplay(["play", media.url("enc/index.m3u8"), "--wait"] + to)
        #expect(bad.status == 77, "\(bad.stdout)\(bad.stderr)")
        #expect(bad.stderr.contains("answered 403") && bad.stderr.contains("cookies"), "\(bad.stderr)")
        let log = try String(contentsOfFile: tls + "/www/https-requests.log", encoding: .utf8)
        #expect(log.contains("/keys/k.bin 200") && log.contains("/keys/k.bin 403"), "\(log)")
    }

    /// A key under a custom scheme (the seeds' app-resolved keys, `skd:`-style): the box cannot
    /// fetch it, so it asks the sender over the event channel (`POST /key`), and the sender's
    /// `--key-command` supplies it. Without one, playback fails and says what is missing.
    @Test func aCustomSchemeKeyComesFromTheSender() throws {
        let media = try #require(Self.media)
        let folder = media.directory + "/skd"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("fedcba9876543210".utf8).write(to: URL(fileURLWithPath: folder + "/key.bin"))
        try "skd://content/42\n\(folder)/key.bin\n".write(toFile: folder + "/keyinfo", atomically: true, encoding: .utf8)
        let encoded = try runCommand(try #require(TestHost.which("ffmpeg")), [
            "-loglevel", "error", "-y", "-i", media.directory + "/clip.mp4", "-c", "copy", "-t", "4", "-f", "hls", "-hls_time", "2",
            "-hls_playlist_type", "vod", "-hls_key_info_file", folder + "/keyinfo", folder + "/index.m3u8"], timeout: 60)
        #expect(encoded.status == 0, "\(encoded.stderr)")
        #expect(try String(contentsOfFile: folder + "/index.m3u8", encoding: .utf8).contains("URI=\"skd://content/42\""))
        let daemon = try LocalDaemon()
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        let good = try airplay(["play", media.url("skd/index.m3u8"), "--key-command", "test \"$1\" = skd://content/42 && printf fedcba9876543210",
                                "--wait"] + to)
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(daemon.process.stderr.contains("hls key fetched") && daemon.process.stderr.contains("scheme=skd"))
        #expect(daemon.process.stderr.contains("video reached its end"))

        let bad = try airplay(["play", media.url("skd/index.m3u8"), "--wait"] + to)
        #expect(bad.status == 77, "\(bad.stdout)\(bad.stderr)")
        #expect(bad.stderr.contains("--key-command"), "\(bad.stderr)")
    }

    /// Alternate audio renditions are listed (`airplay status`) and switched (`airplay select`,
    /// i.e. `/setProperty?selectedMediaArray`): the box reloads at the same position with the
    /// French rendition, whose playlist it then fetches.
    @Test func audioRenditionsAreListedAndSwitched() throws {
        let media = try #require(Self.media)
        let daemon = try LocalDaemon()
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        /// The selected audio language and all audio languages, from `airplay status --json`.
        func audio() -> (selected: [String], all: [String]) {
            guard let text = try? airplay(["status", "--json"] + to).stdout,
                  let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let renditions = object["renditions"] as? [[String: Any]] else { return ([], []) }
            let audio = renditions.filter { $0["type"] as? String == "AUDIO" }
            return (audio.filter { $0["selected"] as? Bool == true }.compactMap { $0["language"] as? String },
                    audio.compactMap { $0["language"] as? String })
        }
        #expect(try airplay(["play", media.url("groups/master.m3u8")] + to).status == 0)
        var seen = audio()
        _ = poll(timeout: 15, interval: 0.2) { seen = audio(); return !seen.all.isEmpty }
        #expect(seen.all == ["en", "fr"] && seen.selected == ["en"], "\(seen)")
        let before = media.requests.count
        let select = try airplay(["select", "--audio", "fr"] + to)
        #expect(select.status == 0, "\(select.stderr)")
        _ = poll(timeout: 10, interval: 0.2) { seen = audio(); return seen.selected == ["fr"] }
        #expect(seen.selected == ["fr"], "\(seen)")
        #expect(poll(timeout: 10) { media.requests.dropFirst(before).contains("/groups/sFrench/index.m3u8") }, "\(media.requests.suffix(10))")
        #expect(daemon.process.stderr.contains("video reloaded"))
        _ = try airplay(["stop"] + to)
    }

    /// Pre-, mid- and post-roll ads of another size and codec setting, joined by
    /// EXT-X-DISCONTINUITY: the whole 12 s plays through to the end without a stall.
    @Test func discontinuitiesPlayThroughWithoutAStall() throws {
        let media = try #require(Self.media)
        let ads = media.directory + "/ads"
        try FileManager.default.createDirectory(atPath: ads, withIntermediateDirectories: true)
        let made = try runCommand(try #require(TestHost.which("ffmpeg")), [
            "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000",
            "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "30", "-c:a", "aac", "-f", "mpegts",
            ads + "/ad0.ts"], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let ad = "#EXTINF:2.0,\n../../ads/ad0.ts\n"
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n" + ad
        playlist += "#EXT-X-DISCONTINUITY\n#EXTINF:2.0,\nindex0.ts\n#EXTINF:2.0,\nindex1.ts\n#EXT-X-DISCONTINUITY\n" + ad
        playlist += "#EXT-X-DISCONTINUITY\n#EXTINF:2.0,\nindex2.ts\n#EXT-X-DISCONTINUITY\n" + ad + "#EXT-X-ENDLIST\n"
        try playlist.write(toFile: media.directory + "/variants/v0/ads.m3u8", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon()
        let started = monotonicSeconds()
        let result = try airplay(["play", media.url("variants/v0/ads.m3u8"), "--to", "127.0.0.1:\(daemon.port)", "--wait", "--json"])
        let took = monotonicSeconds() - started
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(daemon.process.stderr.contains("video reached its end") && !daemon.process.stderr.contains("video failed"))
        #expect(took > 11 && took < 16, "12 s of media took \(took) s")
        print("measure: 12 s of HLS with 3 discontinuities played in \(String(format: "%.2f", took)) s from /play to stopped")
    }

    /// The box measures how fast the origin delivers (one segment of the leanest variant) and
    /// starts on the richest variant that fits: on a fast link the 640x360 one, on a link slowed
    /// to 320 kbit/s the 320x180 one.
    @Test func theStartVariantFollowsTheMeasuredBandwidth() throws {
        let media = try #require(Self.media)
        let daemon = try LocalDaemon()
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        #expect(try airplay(["play", media.url("variants/master.m3u8")] + to).status == 0)
        #expect(poll(timeout: 10) { daemon.process.stderr.contains("hls start variant") }, "\(daemon.process.stderr.suffix(1500))")
        #expect(daemon.process.stderr.contains("hls start variant measured.bps=") && daemon.process.stderr.contains("variant=1"),
                "\(daemon.process.stderr.suffix(1500))")
        _ = try airplay(["stop"] + to)

        let slow = try ManagedProcess(try #require(TestHost.which("python3")), [Products.repositoryRoot + "/tools/lib/range_server.py", media.directory],
                                      environment: ["RANGE_SERVER_RATE": "40000"], directory: media.directory, label: "slow-http")
        #expect(poll(timeout: 10) { Int(slow.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let port = try #require(Int(slow.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let slowDaemon = try LocalDaemon()
        #expect(try airplay(["play", "http://127.0.0.1:\(port)/variants/master.m3u8", "--to", "127.0.0.1:\(slowDaemon.port)"]).status == 0)
        #expect(poll(timeout: 15) { slowDaemon.process.stderr.contains("hls start variant") }, "\(slowDaemon.process.stderr.suffix(1500))")
        let line = slowDaemon.process.stderr.split(separator: "\n").first { $0.contains("hls start variant") }.map(String.init) ?? ""
        #expect(line.contains("variant=0"), "\(line)")
        let measured = line.split(separator: "measured.bps=").last.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0
        #expect(measured > 200_000 && measured < 400_000, "measured \(measured) b/s on a 320 kbit/s link")
        _ = try airplay(["stop", "--to", "127.0.0.1:\(slowDaemon.port)"])
        print("measure: start variant by bandwidth: \(measured) b/s measured on a 320 kbit/s link → 320x180")
    }

    /// A playlist built to hurt: an empty byte range where the box measures bandwidth, and a
    /// key URI index nobody handed out. Playback fails with a reason; the daemon stays up.
    @Test func hostilePlaylistsFailCleanly() throws {
        let media = try #require(Self.media)
        let folder = media.directory + "/hostile"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000,RESOLUTION=320x180,CODECS=\"avc1.42c00d\"\nmedia.m3u8\n"
            .write(toFile: folder + "/master.m3u8", atomically: true, encoding: .utf8)
        try "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:0\n#EXTINF:2,\n../variants/v0/index0.ts\n#EXT-X-ENDLIST\n"
            .write(toFile: folder + "/media.m3u8", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon()
        _ = try airplay(["play", media.url("hostile/master.m3u8"), "--to", "127.0.0.1:\(daemon.port)"])
        Thread.sleep(forTimeInterval: 2)   // time for the hostile playlist to fail, or to hurt the daemon
        let key = try RawHTTPConnection(port: daemon.port).request("GET", "/hls/0000/k-1.key")
        #expect(key.status == 404)
        #expect(daemon.process.isRunning, "\(daemon.process.stderr.suffix(1500))")
        #expect(try RawHTTPConnection(port: daemon.port).request("GET", "/server-info").status == 200)
        _ = try airplay(["stop", "--to", "127.0.0.1:\(daemon.port)"])
    }

    /// Fast playback (4x and more) of HLS with an I-frame playlist plays that playlist, one
    /// key frame at a time through the gateway (`trick.m3u8`, `c<n>.ts`, each I-frame with its
    /// segment's PAT/PMT); back at 1x the box returns to the variants at the same position.
    @Test func fastRatesPlayTheIFramePlaylist() throws {
        let media = try #require(Self.media)
        let folder = media.directory + "/trick"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = try runCommand(try #require(TestHost.which("ffmpeg")), [
            "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-t", "30", "-c:v", "libx264",
            "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
            "-f", "hls", "-hls_time", "4", "-hls_playlist_type", "vod", folder + "/media.m3u8"], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let frames = try runCommand(try #require(TestHost.which("python3")),
                                    [Products.repositoryRoot + "/Tests/IntegrationTests/peers/make_iframe_playlist.py",
                                     folder + "/media.m3u8", folder + "/iframes.m3u8"], timeout: 60)
        #expect(frames.status == 0, "\(frames.stderr)")
        try """
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x180,CODECS="avc1.42c00d"
            media.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=60000,RESOLUTION=320x180,CODECS="avc1.42c00d",URI="iframes.m3u8"

            """.write(toFile: folder + "/master.m3u8", atomically: true, encoding: .utf8)
        let daemon = try LocalDaemon()
        let to = ["--to", "127.0.0.1:\(daemon.port)"]
        #expect(try airplay(["play", media.url("trick/master.m3u8")] + to).status == 0)
        func status() -> [String: Any] {
            let text = (try? airplay(["status", "--json"] + to).stdout) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
        }
        #expect(poll(timeout: 15, interval: 0.2) { status()["state"] as? String == "playing" })
        #expect(try airplay(["rate", "8"] + to).status == 0)
        #expect(poll(timeout: 10) { daemon.process.stderr.contains("hls trick play") }, "\(daemon.process.stderr.suffix(1500))")
        var fast: [String: Any] = [:]
        #expect(poll(timeout: 10, interval: 0.2) { fast = status(); return fast["rate"] as? Double == 8 && fast["state"] as? String == "playing" },
                "\(fast)")
        let before = fast["position"] as? Double ?? 0
        Thread.sleep(forTimeInterval: 1.5)   // the window in which 8x must move the position
        let after = status()["position"] as? Double ?? 0
        #expect(after - before > 4, "8x moved from \(before) to \(after) in 1.5 s")
        #expect(try airplay(["rate", "1"] + to).status == 0)
        var normal: [String: Any] = [:]
        #expect(poll(timeout: 10, interval: 0.2) { normal = status(); return normal["rate"] as? Double == 1 && normal["state"] as? String == "playing" },
                "\(normal); daemon running: \(daemon.process.isRunning); GLib's messages: \(daemon.process.lines(containing: "**")); \(daemon.process.stderr.suffix(3000))")
        #expect(daemon.process.stderr.contains("video reloaded"))
        print("measure: 8x on the I-frame playlist moved \(String(format: "%.1f", after - before)) s in 1.5 s")
        _ = try airplay(["stop"] + to)
    }
}
