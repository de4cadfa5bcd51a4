@testable import AirPlayHLSGateway
import AirPlayHLS
import AirPlayReceiver
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import Testing

/// The HLS gateway in front of a video an iPhone handed over (`mlhls://localhost/master.m3u8`):
/// its playlists come from the phone (here a fake that answers from a table, as FCUP would),
/// YouTube's condensed media playlists reach the player expanded, the box's language picks the
/// dubbed track, and what cannot be played is refused with a reason. The origin is a closed
/// loopback port: the gateway's bandwidth probe fails at once and nothing leaves the machine.
@Suite struct HLSGatewayFCUPTests {
    static let master = """
        #EXTM3U
        #EXT-X-MEDIA:URI="mlhls://localhost/itag/233/mediadata.m3u8",TYPE=AUDIO,GROUP-ID="233",LANGUAGE="en",NAME="English",DEFAULT=YES,AUTOSELECT=YES
        #EXT-X-MEDIA:URI="mlhls://localhost/itag/234/mediadata.m3u8",TYPE=AUDIO,GROUP-ID="233",LANGUAGE="de-DE",NAME="Deutsch",AUTOSELECT=YES
        #EXT-X-STREAM-INF:BANDWIDTH=1000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=1280x720,AUDIO="233"
        mlhls://localhost/itag/136/mediadata.m3u8

        """
    static let condensed = """
        #EXTM3U
        #YT-EXT-CONDENSED-URL:BASE-URI="https://127.0.0.1:1/videoplayback/itag/136",PARAMS="govp,gosq",PREFIX="s/"
        #EXT-X-TARGETDURATION:5
        #EXTINF:5.0,
        s/slices%3D0-219,97414-1049792/1
        #EXT-X-ENDLIST

        """

    /// A gateway whose phone answers from `playlists`, counting what it was asked.
    static func gateway(_ playlists: [String: Result<String, HandedOverPlaylistError>], language: String = "",
                        asked: NIOLockedValueBox<[String]> = NIOLockedValueBox([])) -> HLSGateway {
        let policy = VariantPolicy(maximumResolution: Resolution(width: 1920, height: 1080), hdr: false, passthrough: false,
                                   canDecode: { _ in true })
        return HLSGateway(policy: policy, caFile: nil, requestKey: nil, requestPlaylist: { sessionID, url in
            asked.withLockedValue { $0.append("\(sessionID) \(url)") }
            return playlists[url] ?? .failure(HandedOverPlaylistError(status: 502, reason: "the phone has no \(url)"))
        }, preferences: RenditionPreferences(audio: language, subtitles: "", environment: [:]), logger: Logger(label: "test"))
    }

    static func get(_ gateway: HLSGateway, _ url: String) async -> (status: Int, text: String) {
        let path = String(url.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
        let response = await gateway.answer(AirPlayRequest(method: "GET", target: path, version: .http11))
        return (response.status, String(buffer: response.body))
    }

    /// The master comes from the phone (asked with the `/play`'s session id) and reaches the
    /// player under gateway names; the variant's condensed playlist, asked of the phone in turn,
    /// reaches it expanded to the origin's HTTPS URLs.
    @Test func aHandedOverVideoIsServedFromThePhonesPlaylists() async throws {
        let asked = NIOLockedValueBox<[String]>([])
        let gateway = Self.gateway(["mlhls://localhost/master.m3u8": .success(Self.master),
                                    "mlhls://localhost/itag/136/mediadata.m3u8": .success(Self.condensed)], asked: asked)
        let url = gateway.open(origin: "mlhls://localhost/master.m3u8", headers: [:], sessionID: "S")
        let main = await Self.get(gateway, url)
        #expect(main.status == 200 && main.text.contains("v0.m3u8") && !main.text.contains("mlhls://"), "\(main.text)")
        let variant = await Self.get(gateway, url.replacingOccurrences(of: "main.m3u8", with: "v0.m3u8"))
        #expect(variant.status == 200)
        #expect(variant.text.contains("https://127.0.0.1:1/videoplayback/itag/136/govp/slices%3D0-219,97414-1049792/gosq/1"), "\(variant.text)")
        #expect(asked.withLockedValue { $0 }.first == "S mlhls://localhost/master.m3u8")
    }

    /// `video_language = "de"` keeps the German dub (tagged de-DE) and drops the English one.
    @Test func theBoxsLanguagePicksTheDub() async throws {
        let gateway = Self.gateway(["mlhls://localhost/master.m3u8": .success(Self.master)], language: "fr:de")
        let url = gateway.open(origin: "mlhls://localhost/master.m3u8", headers: [:], sessionID: "S")
        let main = await Self.get(gateway, url)
        #expect(main.text.contains("LANGUAGE=\"de-DE\"") && !main.text.contains("LANGUAGE=\"en\""), "\(main.text)")
    }

    /// FairPlay keys are refused with 415 and the reason, which `/playback-info` reports; a phone
    /// that cannot give a playlist fails it with its status and reason.
    @Test func whatCannotBePlayedIsRefusedWithAReason() async throws {
        let fairPlay = "#EXTM3U\n#EXT-X-TARGETDURATION:5\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://key\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n"
            + "#EXTINF:5,\nhttps://origin.example/1.ts\n#EXT-X-ENDLIST\n"
        let gateway = Self.gateway(["mlhls://localhost/media.m3u8": .success(fairPlay),
                                    "mlhls://localhost/silent.m3u8": .failure(.init(status: 504, reason: "the phone did not answer"))])
        let protected = gateway.open(origin: "mlhls://localhost/media.m3u8", headers: [:], sessionID: "S")
        let refused = await Self.get(gateway, protected)
        #expect(refused.status == 415 && refused.text.contains("FairPlay"))
        #expect(gateway.figures(protected)?.error?.contains("FairPlay") == true)
        let silent = gateway.open(origin: "mlhls://localhost/silent.m3u8", headers: [:], sessionID: "S")
        let failed = await Self.get(gateway, silent)
        #expect(failed.status == 504 && failed.text.contains("did not answer"))
    }

    /// A handed-over playlist whose segments sit on a loopback address is refused when
    /// `video_refuse_local_urls` is on, as any sender's would be.
    @Test func segmentsOnLoopbackAreScreened() async throws {
        let local = "#EXTM3U\n#EXT-X-TARGETDURATION:5\n#EXTINF:5,\nhttps://127.0.0.1:1/1.ts\n#EXT-X-ENDLIST\n"
        let policy = VariantPolicy(maximumResolution: Resolution(width: 1920, height: 1080), hdr: false, passthrough: false,
                                   canDecode: { _ in true })
        let gateway = HLSGateway(policy: policy, caFile: nil, refuseLocalTargets: true, requestKey: nil,
                                 requestPlaylist: { _, _ in .success(local) }, logger: Logger(label: "test"))
        let url = gateway.open(origin: "mlhls://localhost/media.m3u8", headers: [:], sessionID: "S")
        let refused = await Self.get(gateway, url)
        #expect(refused.status == 403 && refused.text.contains("loopback"))
    }
}

/// How the box's languages pick a rendition.
@Suite struct RenditionPreferencesTests {
    static let master = try! PlaylistParser.parseMaster(HLSGatewayFCUPTests.master)

    @Test func aLanguageMatchesItsRegions() {
        #expect(RenditionPreferences.matches("de", "de-DE") && RenditionPreferences.matches("pt_br", "PT-BR"))
        #expect(!RenditionPreferences.matches("pt-BR", "pt") && !RenditionPreferences.matches("d", "de"))
        let choices = RenditionPreferences(audio: "it:de", subtitles: "", environment: [:]).choices(for: Self.master)
        #expect(choices == ["AUDIO": HLSRenditionChoice(language: "de-DE", name: nil)])
    }

    /// Without configured languages the system's are tried: `LANGUAGE` first, else `LANG`
    /// without its codeset; `C` says nothing.
    @Test func theSystemsLanguageIsTheFallback() {
        #expect(RenditionPreferences(audio: "", subtitles: "", environment: ["LANG": "de_DE.UTF-8"]).choices(for: Self.master)["AUDIO"]?
            .language == "de-DE")
        #expect(RenditionPreferences(audio: "", subtitles: "", environment: ["LANGUAGE": "fr:en", "LANG": "de_DE.UTF-8"])
            .choices(for: Self.master)["AUDIO"]?.language == "en")
        #expect(RenditionPreferences(audio: "", subtitles: "", environment: ["LANG": "C.UTF-8"]).choices(for: Self.master).isEmpty)
    }
}
