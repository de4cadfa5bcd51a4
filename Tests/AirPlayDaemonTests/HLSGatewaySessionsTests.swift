@testable import AirPlayHLSGateway
import AirPlayReceiver
import AirPlayHLS
import Testing

/// The HLS gateway's playbacks without a network: how a master is rewritten for the player
/// (allowed variants only, names for every URI, the start variant first), which variant plays,
/// key names, rendition choices, a rendition switch, and trick-play chunks.
@Suite struct HLSGatewaySessionsTests {
    static let master = try! PlaylistParser.parseMaster("""
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="audio/en.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="French",LANGUAGE="fr",URI="audio/fr.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,AUDIO="aud"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=1200000,RESOLUTION=640x360,AUDIO="aud"
        mid/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=9000000,RESOLUTION=3840x2160,AUDIO="aud"
        uhd/index.m3u8
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=80000,RESOLUTION=640x360,URI="mid/iframes.m3u8"

        """)
    static let base = "https://cdn.example.com/show/master.m3u8"

    static func opened() -> HLSGatewaySessions {
        var sessions = HLSGatewaySessions()
        sessions.open(token: "t", origin: base, headers: ["Cookie": "a=1"], sessionID: "S")
        return sessions
    }

    /// Only the allowed variants reach the player, under gateway names, the one the measured
    /// bandwidth allows first (1.2 Mbit/s fits 80 % of 2 Mbit/s); renditions and I-frame
    /// playlists are named too, and every name stands for its absolute origin URL.
    @Test func aMasterIsRewrittenForThePlayer() throws {
        var sessions = Self.opened()
        let rewritten = sessions.serveMaster(token: "t", master: Self.master, base: Self.base, allowed: [0, 1],
                                             refused: [2: "larger than the display"], measured: 2_000_000)
        let served = try #require(rewritten)
        #expect(served.start == 1)
        #expect(served.playlist.variants.map(\.uri) == ["v1.m3u8", "v0.m3u8"])
        #expect(served.playlist.renditions.compactMap { $0.attributes["URI"] } == ["r0.m3u8", "r1.m3u8"])
        #expect(served.playlist.iFrameVariants.compactMap { $0["URI"] } == ["i0.m3u8"])
        let session = try #require(sessions["t"])
        #expect(session.media["v1"] == "https://cdn.example.com/show/mid/index.m3u8")
        #expect(session.media["r1"] == "https://cdn.example.com/show/audio/fr.m3u8")
        #expect(session.media["i0"] == "https://cdn.example.com/show/mid/iframes.m3u8")
        #expect(session.media["v2"] == nil, "a refused variant has no name")
        #expect(session.figures.allowed == [0, 1] && session.figures.refused == [2: "larger than the display"])
        #expect(session.figures.measuredBandwidth == 2_000_000)
    }

    /// The variant whose playlist the player reads is the one that plays; reading it again is
    /// no change.
    @Test func theVariantReadIsTheOneThatPlays() throws {
        var sessions = Self.opened()
        _ = sessions.serveMaster(token: "t", master: Self.master, base: Self.base, allowed: [0, 1], refused: [:], measured: nil)
        let first = sessions.variantRequested(token: "t", index: 1)
        let again = sessions.variantRequested(token: "t", index: 1)
        let missing = sessions.variantRequested(token: "t", index: 7)
        #expect(first?.peakBitRate == 1_200_000)
        #expect(again == nil)
        #expect(missing == nil, "no such variant")
        #expect(sessions["t"]?.figures.current == 1)
    }

    /// A key URI gets one name however often it appears.
    @Test func keysAreNamedOncePerURI() {
        var sessions = Self.opened()
        let names = ["1", "2", "1"].map { sessions.keyName(token: "t", uri: "https://keys.example.com/\($0)") }
        #expect(names == ["k0", "k1", "k0"])
    }

    /// A rendition choice is kept only when the playback has such a rendition; the renditions
    /// listed are those of the variant that plays, with the choice marked.
    @Test func renditionChoices() {
        var sessions = Self.opened()
        _ = sessions.serveMaster(token: "t", master: Self.master, base: Self.base, allowed: [0, 1], refused: [:], measured: nil)
        let german = sessions.select(token: "t", type: "AUDIO", choice: .init(language: "de", name: nil))
        let french = sessions.select(token: "t", type: "AUDIO", choice: .init(language: "FR", name: nil))
        #expect(!german && french)
        #expect(sessions.renditions(token: "t").map { "\($0.name):\($0.selected)" } == ["English:false", "French:true"])
    }

    /// A master that differs from the last one (a rendition switch made the sender's choice
    /// the only one) forgets the old names and which variant played.
    @Test func aDifferentMasterForgetsTheOldNames() throws {
        var sessions = Self.opened()
        _ = sessions.serveMaster(token: "t", master: Self.master, base: Self.base, allowed: [0, 1, 2], refused: [:], measured: nil)
        _ = sessions.variantRequested(token: "t", index: 2)
        var smaller = Self.master
        smaller.variants.removeLast()
        _ = sessions.serveMaster(token: "t", master: smaller, base: Self.base, allowed: [0, 1], refused: [:], measured: nil)
        let session = try #require(sessions["t"])
        #expect(session.media["v2"] == nil && session.figures.current == nil)
    }

    /// Trick-play chunks are numbered on from the last ones; a closed playback has none.
    @Test func chunksAreNumberedOn() {
        var sessions = Self.opened()
        let first = sessions.addChunks(token: "t", [("a.ts", nil), ("a.ts", nil)])
        let second = sessions.addChunks(token: "t", [("b.ts", nil)])
        #expect(first == 0 && second == 2)
        sessions.close(token: "t")
        #expect(sessions["t"] == nil)
        let closed = sessions.addChunks(token: "t", [("c.ts", nil)])
        #expect(closed == 0)
    }

    /// Proxied segments (`video_refuse_local_urls`) keep their name across a live playlist's
    /// reloads, and the oldest names are forgotten once a playback has named too many.
    @Test func proxiedSegmentsKeepTheirNamesAndTheOldestAreForgotten() throws {
        var sessions = Self.opened()
        let first = ["a.ts", "b.ts", "a.ts"].map { sessions.proxiedName(token: "t", url: "https://cdn.example.com/\($0)") }
        #expect(first == ["s0", "s1", "s0"])
        for index in 2...HLSGatewaySessions.maximumProxied {
            _ = sessions.proxiedName(token: "t", url: "https://cdn.example.com/\(index).ts")
        }
        let session = try #require(sessions["t"])
        #expect(session.proxied.count == HLSGatewaySessions.maximumProxied)
        #expect(session.proxied[0] == nil && session.proxiedNumbers["https://cdn.example.com/a.ts"] == nil, "the oldest is forgotten")
        #expect(session.proxied[1] == "https://cdn.example.com/b.ts")
        #expect(sessions.proxiedName(token: "t", url: "https://cdn.example.com/a.ts") == "s\(HLSGatewaySessions.maximumProxied + 1)",
                "named anew when it comes back")
    }

    /// What the proxy reads of the player's requests: its names, one byte range, extensions.
    @Test func theProxyReadsNamesRangesAndExtensions() {
        #expect(HLSGateway.proxiedNumber("s12.ts") == 12 && HLSGateway.proxiedNumber("s7") == 7)
        #expect(HLSGateway.proxiedNumber("s+1.ts") == nil && HLSGateway.proxiedNumber("main.m3u8") == nil
                && HLSGateway.proxiedNumber("s.ts") == nil && HLSGateway.proxiedNumber("s99999999999.ts") == nil)
        #expect(HLSGateway.singleByteRange("bytes=100-199") == 100...199)
        #expect(HLSGateway.singleByteRange("bytes=100-") == nil && HLSGateway.singleByteRange("bytes=0-1,5-9") == nil
                && HLSGateway.singleByteRange("bytes=9-1") == nil && HLSGateway.singleByteRange(nil) == nil)
        #expect(HLSGateway.fileExtension("https://x/seg/00001.TS?token=a.b") == ".ts")
        #expect(HLSGateway.fileExtension("https://x/a.b/segment") == "" && HLSGateway.fileExtension("https://x/s.verylong") == "")
        #expect(HLSGateway.mediaType("https://x/init.mp4") == "video/mp4" && HLSGateway.mediaType("https://x/sub.vtt") == "text/vtt")
    }

    /// The gateway finds its playback from the URL it gave the player, by a scan of the path.
    @Test func theGatewayTokenIsReadFromItsURLs() {
        #expect(HLSGateway.token(of: "http://127.0.0.1:7000/hls/3f9a/main.m3u8") == "3f9a")
        #expect(HLSGateway.token(of: "http://[::1]:7000/hls/3f9a/trick.m3u8?x=1") == "3f9a")
        #expect(HLSGateway.token(of: "/hls/3f9a/s12") == "3f9a")
        #expect(HLSGateway.token(of: "http://example.com/video/hls/3f9a/main.m3u8") == nil)
        #expect(HLSGateway.token(of: "http://127.0.0.1:7000/hls") == nil)
        #expect(HLSGateway.token(of: "http://127.0.0.1:7000") == nil)
        #expect(HLSGateway.token(of: "") == nil)
    }
}
