import AirPlayTesting
import Foundation
import Testing

/// The sender's HLS tools against ffmpeg-made multi-variant HLS served over loopback.
@Suite(.serialized) struct HLSSenderTests {
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
        let result = try airplay(["play", media.url("variants/master.m3u8"), "--prefer", "peakBitRate < 500000",
                                  "--to", "127.0.0.1:\(daemon.port)", "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("{\"event\":\"stopped\"}"), "played to the end: \(result.stdout)")
        let requests = media.requests
        #expect(requests.contains("/variants/v0/index.m3u8"), "\(requests)")
        #expect(!requests.contains("/variants/v1/index.m3u8"), "\(requests)")
        let none = try airplay(["play", media.url("variants/master.m3u8"), "--prefer", "peakBitRate < 1000", "--to", "127.0.0.1:\(daemon.port)"])
        #expect(none.status == 65 && none.stderr.contains("no variant"), "\(none.stderr)")
    }
}
