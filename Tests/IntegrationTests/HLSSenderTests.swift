import AirPlayTesting
import Foundation
import Testing

/// The sender's HLS tools against ffmpeg-made multi-variant HLS served over loopback.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HLSSenderTests {
    static let media: TestMedia? = try? TestMedia(seconds: 6, variants: true)

    private func airplay(_ arguments: [String], timeout: Double = 60) throws -> CommandResult {
        try runCommand(try Products.executable("airplay"), arguments,
                       environment: ["XDG_STATE_HOME": Products.scratchDirectory("xdg"), "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"],
                       timeout: timeout)
    }

    @Test func inspectListsTheVariants() throws {
        let media = try #require(Self.media)
        let result = try airplay(["hls", "inspect", media.url("variants/master.m3u8"), "--json", "--prefer", "resolution >= 640x360"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let variants = try #require(object["variants"] as? [[String: Any]])
        let resolutions = variants.compactMap { ($0["video"] as? [String: Any])?["resolution"] as? String }
        #expect(resolutions == ["320x180", "640x360"])
        #expect(object["preferred"] as? Int == 1)
        let text = try airplay(["hls", "inspect", media.url("variants/master.m3u8")])
        #expect(text.stdout.contains("640x360") && text.stdout.contains("avc1"), "\(text.stdout)")
    }

    @Test func badQualifiersAndMissingPlaylistsHaveTheirExitCodes() throws {
        let media = try #require(Self.media)
        let bad = try airplay(["hls", "inspect", media.url("variants/master.m3u8"), "--prefer", "resolution > big"])
        #expect(bad.status == 65 && bad.stderr.contains("column 14"), "\(bad.stderr)")
        #expect(try airplay(["hls", "inspect", media.url("variants/none.m3u8")]).status == 69)
    }

    /// `--prefer` picks the variant, the sender serves a master with only that one, and the
    /// receiver fetches that variant's playlist and never the other.
    @Test func playPreferPlaysTheChosenVariantOnly() throws {
        let media = try #require(Self.media)
        let daemon = try LocalDaemon()
        let before = media.requests.count
        let result = try airplay(["play", media.url("variants/master.m3u8"), "--prefer", "peakBitRate < 500000",
                                  "--to", "127.0.0.1:\(daemon.port)", "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("{\"event\":\"stopped\"}"), "played to the end: \(result.stdout)")
        let requests = media.requests.dropFirst(before)
        #expect(requests.contains("/variants/v0/index.m3u8"), "\(requests)")
        #expect(!requests.contains("/variants/v1/index.m3u8"), "\(requests)")
        let none = try airplay(["play", media.url("variants/master.m3u8"), "--prefer", "peakBitRate < 1000", "--to", "127.0.0.1:\(daemon.port)"])
        #expect(none.status == 65 && none.stderr.contains("no variant"), "\(none.stderr)")
    }

    /// An offline copy of the 320x180 variant, rewritten to local paths, then played from this
    /// machine by `airplay play DIR`.
    @Test func downloadThenPlayOffline() throws {
        let media = try #require(Self.media)
        let out = Products.scratchDirectory("offline") + "/copy"
        let result = try airplay(["hls", "download", media.url("variants/master.m3u8"), "--prefer", "resolution <= 320x180", "--out", out, "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let master = try String(contentsOfFile: out + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("RESOLUTION=320x180") && master.contains("video/index.m3u8") && !master.contains("640x360"), "\(master)")
        let playlist = try String(contentsOfFile: out + "/video/index.m3u8", encoding: .utf8)
        #expect(playlist.contains("s0.ts") && !playlist.contains("http"), "\(playlist)")
        for index in 0..<3 {
            #expect(FileManager.default.contents(atPath: out + "/video/s\(index).ts")
                    == FileManager.default.contents(atPath: media.directory + "/variants/v0/index\(index).ts"))
        }
        let daemon = try LocalDaemon()
        let play = try airplay(["play", out, "--to", "127.0.0.1:\(daemon.port)"])
        #expect(play.status == 0 && play.stdout.contains("event: stopped"), "\(play.stdout)\(play.stderr)")
        #expect(daemon.process.stderr.contains("video reached its end"))
    }

    /// An interrupted download (a finished segment lost, another half-written) goes on where it
    /// stopped: finished segments are not fetched again, the partial one is completed.
    @Test func anInterruptedDownloadResumes() throws {
        let media = try #require(Self.media)
        let out = Products.scratchDirectory("resume") + "/copy"
        let arguments = ["hls", "download", media.url("variants/master.m3u8"), "--prefer", "resolution <= 320x180", "--out", out]
        #expect(try airplay(arguments).status == 0)
        let full = try #require(FileManager.default.contents(atPath: out + "/video/s1.ts"))
        try FileManager.default.removeItem(atPath: out + "/video/s1.ts")
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: out + "/video/s1.ts.part"))
        try FileManager.default.removeItem(atPath: out + "/video/s2.ts")
        let before = media.requests.count
        let again = try airplay(arguments)
        #expect(again.status == 0, "\(again.stderr)")
        let fetched = media.requests.dropFirst(before).filter { $0.hasSuffix(".ts") }
        #expect(fetched.sorted() == ["/variants/v0/index1.ts", "/variants/v0/index2.ts"], "\(fetched)")
        #expect(FileManager.default.contents(atPath: out + "/video/s1.ts") == full)
        #expect(FileManager.default.contents(atPath: out + "/video/s2.ts")
                == FileManager.default.contents(atPath: media.directory + "/variants/v0/index2.ts"))
    }

    /// `--audio fr` keeps only the French rendition of the primary variant's audio group.
    @Test func audioRenditionsAreChosenByLanguage() throws {
        let media = try #require(Self.media)
        let out = Products.scratchDirectory("lang") + "/copy"
        let before = media.requests.count
        let result = try airplay(["hls", "download", media.url("groups/master.m3u8"), "--audio", "fr", "--out", out])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOfFile: out + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("LANGUAGE=\"fr\"") && !master.contains("LANGUAGE=\"en\"") && master.contains("URI=\"audio/0/index.m3u8\""),
                "\(master)")
        #expect(FileManager.default.fileExists(atPath: out + "/audio/0/s0.ts"))
        let requests = media.requests.dropFirst(before)
        #expect(requests.contains("/groups/sFrench/index.m3u8") && !requests.contains("/groups/sEnglish/index.m3u8"), "\(requests)")
    }

    /// Auxiliary audio from a variant that shares the primary's video: its audio rendition is
    /// added as a group of its own, and the video is fetched once.
    @Test func auxiliaryAudioDoesNotDownloadTheVideoTwice() throws {
        let media = try #require(Self.media)
        let out = Products.scratchDirectory("aux") + "/copy"
        let before = media.requests.count
        let result = try airplay(["hls", "download", media.url("groups/shared.m3u8"), "--prefer", "peakBitRate < 100000",
                                  "--aux-audio", "peakBitRate >= 100000", "--out", out])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOfFile: out + "/master.m3u8", encoding: .utf8)
        #expect(master.contains("GROUP-ID=\"aux-hq\"") && master.contains("audio/aux0/index.m3u8"), "\(master)")
        let segments = media.requests.dropFirst(before).filter { $0.hasPrefix("/groups/s2/") && $0.hasSuffix(".ts") }
        let inPlaylist = try String(contentsOfFile: media.directory + "/groups/s2/index.m3u8", encoding: .utf8)
            .components(separatedBy: "#EXTINF").count - 1
        #expect(segments.count == Set(segments).count && segments.count == inPlaylist, "each video segment once: \(segments)")
        #expect(FileManager.default.fileExists(atPath: out + "/audio/aux0/s0.ts"))
    }

    /// A download killed mid-way (SIGKILL, from a server slowed to 100 kB/s) and run again from
    /// another server: the segments finished before the kill are not fetched again.
    @Test func aKilledDownloadResumesWithoutRefetching() throws {
        let media = try #require(Self.media)
        let python = try #require(TestHost.which("python3"))
        let out = Products.scratchDirectory("killed") + "/copy"
        let slow = try ManagedProcess(python, [Products.repositoryRoot + "/tools/lib/range_server.py", media.directory],
                                      environment: ["RANGE_SERVER_RATE": "100000"], directory: media.directory, label: "slow-http")
        #expect(poll(timeout: 10) { Int(slow.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let slowPort = try #require(Int(slow.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let download = try ManagedProcess(try Products.executable("airplay"), [
            "hls", "download", "http://127.0.0.1:\(slowPort)/variants/master.m3u8", "--prefer", "resolution <= 320x180", "--out", out,
        ], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"], directory: media.directory, label: "download")
        #expect(poll(timeout: 20, interval: 0.05) { FileManager.default.fileExists(atPath: out + "/video/s0.ts") })
        download.signal(SIGKILL)
        _ = download.waitForExit(timeout: 5)
        #expect(!FileManager.default.fileExists(atPath: out + "/video/s2.ts"), "killed before the end")
        let finished = (0..<3).filter { FileManager.default.fileExists(atPath: out + "/video/s\($0).ts") }
        let before = media.requests.count
        let again = try airplay(["hls", "download", media.url("variants/master.m3u8"), "--prefer", "resolution <= 320x180", "--out", out])
        #expect(again.status == 0, "\(again.stderr)")
        let fetched = Set(media.requests.dropFirst(before).filter { $0.hasSuffix(".ts") })
        for index in finished { #expect(!fetched.contains("/variants/v0/index\(index).ts"), "s\(index) was fetched again: \(fetched)") }
        for index in 0..<3 {
            #expect(FileManager.default.contents(atPath: out + "/video/s\(index).ts")
                    == FileManager.default.contents(atPath: media.directory + "/variants/v0/index\(index).ts"))
        }
        print("measure: killed download kept \(finished.count) finished segment(s); fetched again: \(fetched.sorted())")
    }
}
