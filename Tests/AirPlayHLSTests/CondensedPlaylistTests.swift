@testable import AirPlayHLS
import Foundation
import Testing

/// YouTube's condensed media playlists, as an iPhone hands them over by FCUP: each segment line
/// after `PREFIX` is `/`-separated pieces that go with `PARAMS` in order, under `BASE-URI`.
@Suite struct CondensedPlaylistTests {
    /// The example of the issue, from the fixture: every segment becomes its full origin URL,
    /// the tag goes, and the rest of the playlist is as it was.
    @Test func youTubesSegmentsExpandToTheirOriginURLs() throws {
        let text = try Fixtures.text("youtube-condensed-media.m3u8")
        let playlist = try PlaylistParser.parseMedia(text)
        let base = "https://rr3---sn-4g5e6nsz.googlevideo.com/videoplayback/id/3aa39fa2cc27967f/itag/136/source/yt_live_broadcast"
        let form = try #require(try CondensedPlaylist.form(in: text))
        #expect(form == CondensedPlaylist.Form(baseURI: base, parameters: ["govp", "gosq"], prefix: "s/"))
        let expanded = try CondensedPlaylist.parseMedia(text)
        #expect(expanded.segments.map(\.uri) == [
            base + "/govp/slices%3D0-219,97414-1049792/gosq/1",
            base + "/govp/slices%3D1049793-2011230/gosq/2",
            base + "/govp/slices%3D2011231-2731447/gosq/3",
        ])
        #expect(!expanded.text.contains("YT-EXT-CONDENSED-URL") && expanded.endList && expanded.targetDuration == 5)
        #expect(expanded.segments.map(\.duration) == playlist.segments.map(\.duration))
    }

    /// What the phone sends may end lines in CRLF and lack ENDLIST (a live stream), and put the
    /// tag after other header tags: all taken.
    @Test func crlfNoEndListAndALaterTagAreTaken() throws {
        let text = "#EXTM3U\r\n#EXT-X-TARGETDURATION:5\r\n#YT-EXT-CONDENSED-URL:BASE-URI=\"https://o.example/v\",PARAMS=\"sq\",PREFIX=\"s/\"\r\n"
            + "#EXTINF:5,\r\ns/7\r\n#EXTINF:5,\r\ns/8\r\n"
        let expanded = try CondensedPlaylist.parseMedia(text)
        #expect(expanded.segments.map(\.uri) == ["https://o.example/v/sq/7", "https://o.example/v/sq/8"] && !expanded.endList)
    }

    /// A BASE-URI ending in `/` gives one slash, not two; an `EXT-X-MAP` URI in the condensed
    /// form is expanded too; a line without the prefix (already whole) is left alone.
    @Test func edgesOfTheForm() throws {
        let text = "#EXTM3U\n#YT-EXT-CONDENSED-URL:BASE-URI=\"https://o.example/v/\",PARAMS=\"sq\",PREFIX=\"s/\"\n#EXT-X-TARGETDURATION:5\n"
            + "#EXT-X-MAP:URI=\"s/0\"\n#EXTINF:5,\ns/1\n#EXTINF:5,\nhttps://other.example/whole.ts\n#EXT-X-ENDLIST\n"
        let expanded = try CondensedPlaylist.parseMedia(text)
        #expect(expanded.segments.map(\.uri) == ["https://o.example/v/sq/1", "https://other.example/whole.ts"])
        #expect(expanded.segments.first?.map?["URI"] == "https://o.example/v/sq/0")
    }

    /// Without the tag nothing changes; a segment whose pieces do not match PARAMS, or a tag
    /// without BASE-URI, is refused with a reason rather than expanded into a wrong URL.
    @Test func aPlaylistThatDoesNotFitIsRefused() throws {
        let plain = try Fixtures.text("ffmpeg-media-ts.m3u8")
        #expect(try CondensedPlaylist.parseMedia(plain) == PlaylistParser.parseMedia(plain))
        let mismatch = "#EXTM3U\n#YT-EXT-CONDENSED-URL:BASE-URI=\"https://o.example\",PARAMS=\"govp,gosq\",PREFIX=\"s/\"\n"
            + "#EXT-X-TARGETDURATION:5\n#EXTINF:5,\ns/only-one\n#EXT-X-ENDLIST\n"
        #expect { try CondensedPlaylist.parseMedia(mismatch) } throws: {
            ($0 as? PlaylistError)?.message.contains("segment 1: condensed segment s/only-one has 1 pieces for 2 PARAMS") == true
        }
        let noBase = "#EXTM3U\n#YT-EXT-CONDENSED-URL:PARAMS=\"sq\",PREFIX=\"s/\"\n#EXT-X-TARGETDURATION:5\n#EXTINF:5,\ns/1\n"
        #expect { try CondensedPlaylist.parseMedia(noBase) } throws: {
            ($0 as? PlaylistError)?.message.contains("needs BASE-URI and PREFIX") == true
        }
    }

    /// A two-hour film's playlist (20 000 condensed segments) expands quickly enough to serve
    /// while the player waits (checked loosely; the speed itself belongs to a benchmark).
    @Test func aLongPlaylistExpandsWhole() throws {
        var text = "#EXTM3U\n#YT-EXT-CONDENSED-URL:BASE-URI=\"https://o.example/v\",PARAMS=\"govp,gosq\",PREFIX=\"s/\"\n"
            + "#EXT-X-TARGETDURATION:5\n"
        for index in 0..<20_000 { text += "#EXTINF:5,\ns/slices%3D\(index * 1000)-\(index * 1000 + 999)/\(index)\n" }
        text += "#EXT-X-ENDLIST\n"
        let expanded = try CondensedPlaylist.parseMedia(text)
        #expect(expanded.segments.count == 20_000)
        #expect(expanded.segments.last?.uri == "https://o.example/v/govp/slices%3D19999000-19999999/gosq/19999")
    }
}

/// What a receiver cannot play and must refuse with a reason: DRM and SAMPLE-AES.
@Suite struct PlaylistProtectionTests {
    static func media(keys: [String]) throws -> MediaPlaylist {
        try PlaylistParser.parseMedia("#EXTM3U\n#EXT-X-TARGETDURATION:5\n" + keys.map { "#EXT-X-KEY:\($0)\n" }.joined()
                                      + "#EXTINF:5,\nhttps://o.example/1.ts\n#EXT-X-ENDLIST\n")
    }

    @Test func fairPlayIsRefusedByItsSchemeOrItsKeyFormat() throws {
        let skd = try Self.media(keys: ["METHOD=SAMPLE-AES,URI=\"skd://key65\",KEYFORMAT=\"com.apple.streamingkeydelivery\",KEYFORMATVERSIONS=\"1\""])
        #expect(PlaylistProtection.refusal(media: skd)?.contains("FairPlay") == true)
        let format = try Self.media(keys: ["METHOD=SAMPLE-AES-CTR,URI=\"data:text/plain;base64,AAAA\",KEYFORMAT=\"com.apple.streamingkeydelivery\""])
        #expect(PlaylistProtection.refusal(media: format)?.contains("FairPlay") == true)
        let master = try PlaylistParser.parseMaster("#EXTM3U\n#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI=\"skd://k\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n"
                                                    + "#EXT-X-STREAM-INF:BANDWIDTH=1000\nv.m3u8\n")
        #expect(PlaylistProtection.refusal(master: master)?.contains("FairPlay") == true)
    }

    @Test func otherDRMAndSampleAESAreRefused() throws {
        let widevine = try Self.media(keys: ["METHOD=SAMPLE-AES-CTR,URI=\"data:text/plain;base64,AAAA\",KEYFORMAT=\"urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed\""])
        #expect(PlaylistProtection.refusal(media: widevine)?.contains("KEYFORMAT urn:uuid:edef8ba9") == true)
        let sampleAES = try Self.media(keys: ["METHOD=SAMPLE-AES,URI=\"https://k.example/key\""])
        #expect(PlaylistProtection.refusal(media: sampleAES)?.contains("SAMPLE-AES") == true)
    }

    /// Clear video, AES-128 by URL, and a multi-key playlist that offers AES-128 beside FairPlay play.
    @Test func whatThePlayerCanOpenPasses() throws {
        #expect(PlaylistProtection.refusal(media: try Self.media(keys: [])) == nil)
        #expect(PlaylistProtection.refusal(media: try Self.media(keys: ["METHOD=NONE"])) == nil)
        #expect(PlaylistProtection.refusal(media: try PlaylistParser.parseMedia(try Fixtures.text("ffmpeg-media-aes128.m3u8"))) == nil)
        let both = try Self.media(keys: ["METHOD=AES-128,URI=\"https://k.example/key\"",
                                         "METHOD=SAMPLE-AES,URI=\"skd://k\",KEYFORMAT=\"com.apple.streamingkeydelivery\""])
        #expect(PlaylistProtection.refusal(media: both) == nil)
        // A custom-scheme AES-128 key (the sender hands it over: `hls.md` §5.8), skd:// included.
        #expect(PlaylistProtection.refusal(media: try Self.media(keys: ["METHOD=AES-128,URI=\"skd://key1\""])) == nil)
    }
}
