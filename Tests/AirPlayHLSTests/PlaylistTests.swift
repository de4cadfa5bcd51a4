@testable import AirPlayHLS
import Foundation
import Testing

/// The fixtures: the seed documents' two example playlists, playlists ffmpeg writes, and two
/// hand-written ones that use every tag the parser knows.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    static var all: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".m3u8") }.sorted()
    }
}

@Suite struct MasterPlaylistTests {
    /// The AirPlay overview's alternate streams: the old PROGRAM-ID, and the third variant's
    /// attribute list broken over two lines after a comma.
    @Test func theAirPlayOverviewExample() throws {
        let master = try PlaylistParser.parseMaster(try Fixtures.text("seed-airplay-overview-master.m3u8"))
        #expect(master.variants.map(\.bandwidth) == [150_000, 640_000, 1_500_000])
        #expect(master.variants.map(\.uri).last == "http://example.com/airplay/index.m3u8")
        let airplay = master.variants[2]
        #expect(airplay.resolution == Resolution(width: 1280, height: 720))
        #expect(airplay.codecs == ["avc1.42e01e", "ac-3"])
        #expect(airplay.attributes["PROGRAM-ID"] == "1")
        let described = VariantDescription(master, index: 2)
        #expect(described.audio?.codecs == ["ac-3"])
        #expect(described.video?.codec == "avc1")
    }

    /// WWDC21's master: indented lines, spaces after commas, stereo and Atmos groups in English
    /// and French, an SDR avc1 1080p variant and a Dolby Vision PQ 3840x1920 one.
    @Test func theWWDC21VariantsExample() throws {
        let master = try PlaylistParser.parseMaster(try Fixtures.text("seed-wwdc21-variants-master.m3u8"))
        #expect(master.version == 7 && master.independentSegments)
        #expect(master.renditions.count == 4)
        #expect(master.renditions.map(\.autoselect) == [true, true, true, true])
        let variants = VariantDescription.all(master)
        #expect(variants.count == 2)
        let (sdr, dolby) = (variants[0], variants[1])
        #expect(sdr.video?.range == .sdr && sdr.video?.codec == "avc1" && sdr.video?.frameRate == 23.976)
        #expect(sdr.audio?.channels == [2] && sdr.audio?.languages == ["en", "fr"] && sdr.audio?.atmos == false)
        #expect(dolby.video?.range == .pq && dolby.video?.isDolbyVision == true)
        #expect(dolby.video?.resolution == Resolution(width: 3840, height: 1920))
        #expect(dolby.audio?.atmos == true && dolby.audio?.channels == [16] && dolby.audio?.codecs == ["ec-3"])
        #expect(dolby.badges == ["4K", "Dolby Vision", "Dolby Atmos"])
    }

    /// A trailing comma continues an attribute list only onto a line that starts with NAME=;
    /// a URI with a query string stays a URI.
    @Test func aBrokenAttributeListIsJoinedButAURIIsNot() throws {
        let master = try PlaylistParser.parseMaster("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,\nhttps://x.example/v.m3u8?token=A=\n")
        #expect(master.variants.first?.uri == "https://x.example/v.m3u8?token=A=")
    }

    @Test func everyMasterTag() throws {
        let master = try PlaylistParser.parseMaster(try Fixtures.text("everything-master.m3u8"))
        #expect(master.sessionData.first?["VALUE"] == "Big Buck Bunny")
        #expect(master.sessionKeys.first?["URI"] == "https://keys.example/k1")
        #expect(master.start?.decimal("TIME-OFFSET") == 10.5)
        #expect(master.unknownTags.map(\.line) == ["EXT-X-CONTENT-STEERING:SERVER-URI=\"https://steer.example/s\""])
        #expect(master.iFrameVariants.map { $0["URI"] } == ["video/360p-iframes.m3u8", "video/1080p-iframes.m3u8"])
        let variants = VariantDescription.all(master)
        #expect(variants.map(\.peakBitRate) == [800_000, 5_000_000, 16_000_000])
        #expect(variants[0].averageBitRate == 600_000 && variants[0].subtitleLanguages == ["en", "fr"])
        #expect(variants[1].video?.range == .hlg && variants[1].hdcpLevel == "TYPE-0" && variants[1].audio?.channels == [6])
        #expect(variants[1].badges == ["HD", "HDR HLG", "5.1"])
        #expect(variants[2].badges == ["4K", "HDR PQ", "5.1"])
        #expect(master.renditions.first { $0.type == "CLOSED-CAPTIONS" }?.attributes["INSTREAM-ID"] == "CC1")
    }

    @Test func ffmpegMasters() throws {
        let master = try PlaylistParser.parseMaster(try Fixtures.text("ffmpeg-master.m3u8"))
        #expect(master.variants.map(\.uri) == ["v0/index.m3u8", "v1/index.m3u8"])
        let grouped = try PlaylistParser.parseMaster(try Fixtures.text("ffmpeg-master-audio-group.m3u8"))
        let audioOnly = VariantDescription(grouped, index: 0)
        #expect(audioOnly.video == nil && audioOnly.audio?.languages == ["en"])
        #expect(VariantDescription(grouped, index: 1).video?.resolution == Resolution(width: 320, height: 180))
    }
}

@Suite struct MediaPlaylistTests {
    @Test func everyMediaTag() throws {
        let media = try PlaylistParser.parseMedia(try Fixtures.text("everything-media.m3u8"))
        #expect(media.targetDuration == 6 && media.mediaSequence == 100 && media.discontinuitySequence == 3)
        #expect(media.playlistType == "EVENT" && media.endList && media.independentSegments)
        #expect(media.unknownTags.map(\.line) == ["EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=36"])
        let segments = media.segments
        #expect(segments.count == 6)
        #expect(segments[0].title == "pre-roll ad" && segments[0].map?["BYTERANGE"] == "720@0" && segments[0].keys.isEmpty)
        #expect(segments[0].programDateTime == "2026-11-22T01:00:00.000Z")
        #expect(segments[1].discontinuity && segments[1].map?["URI"] == "init.mp4")
        #expect(segments[1].aes128Key?["IV"] == "0x0000000000000000000000000000ABCD")
        #expect(segments[2].byteRange == ByteRange(length: 1024, offset: 0))
        #expect(segments[3].byteRange == ByteRange(length: 2048, offset: nil) && segments[3].aes128Key != nil)
        #expect(segments[4].discontinuity && segments[4].keys.isEmpty && segments[4].unknownTags.map(\.line) == ["EXT-X-CUE-OUT:DURATION=12"])
        #expect(segments[5].keys.count == 2, "one key per KEYFORMAT")
        #expect(segments[5].keys.first?["URI"] == "skd://content/42")
        #expect(abs(media.duration - 33.505) < 1e-9)
    }

    @Test func ffmpegMediaPlaylists() throws {
        let ts = try PlaylistParser.parseMedia(try Fixtures.text("ffmpeg-media-ts.m3u8"))
        #expect(ts.segments.map(\.uri) == ["index0.ts", "index1.ts", "index2.ts"] && ts.endList)
        let fmp4 = try PlaylistParser.parseMedia(try Fixtures.text("ffmpeg-media-fmp4.m3u8"))
        #expect(fmp4.segments.allSatisfy { $0.map?["URI"] == "init.mp4" })
        let ranged = try PlaylistParser.parseMedia(try Fixtures.text("ffmpeg-media-byterange.m3u8"))
        #expect(ranged.segments.map(\.byteRange) == [ByteRange(length: 57904, offset: 0), ByteRange(length: 58844, offset: 57904)])
        let encrypted = try PlaylistParser.parseMedia(try Fixtures.text("ffmpeg-media-aes128.m3u8"))
        #expect(encrypted.segments.allSatisfy { $0.aes128Key?["URI"] == "https://keys.example/key.bin" })
    }
}

@Suite struct PlaylistErrorTests {
    @Test(arguments: [
        ("#EXT-X-VERSION:3\n", 1, "starts with #EXTM3U"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8\n", 2, "needs BANDWIDTH"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-VERSION:3\n", 2, "not followed by its URI"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\nx.ts\n", 3, "not a number"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\nx.ts\n", 3, "must follow #EXTINF"),
        ("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x\n", 2, "unterminated"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:2,\nx.ts\n", 4, "master playlist cannot"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128\n", 3, "needs URI"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n", 3, "no segment URI"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:x@1\n", 3, "length[@offset]"),
    ])
    func malformedPlaylistsSayWhere(text: String, line: Int, message: String) {
        do {
            _ = try PlaylistParser.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }

    @Test func attributeErrorsCarryTheColumn() {
        do {
            _ = try AttributeList(parsing: "BANDWIDTH=1,lower=2")
            Issue.record("parsed")
        } catch {
            #expect(error.column == 13)
        }
    }
}

/// Printing a playlist and reading it back keeps every attribute, for every fixture and for
/// playlists built at random.
@Suite struct RoundTripTests {
    @Test(arguments: Fixtures.all)
    func fixturesRoundTrip(name: String) throws {
        let parsed = try PlaylistParser.parse(try Fixtures.text(name))
        let again = try PlaylistParser.parse(parsed.text)
        #expect(again == parsed, "\(name):\n\(parsed.text)")
    }

    @Test func randomPlaylistsRoundTrip() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        for _ in 0..<300 {
            let master = Self.randomMaster(&generator)
            #expect(try PlaylistParser.parse(master.text) == .master(master), "\(master.text)")
            let media = Self.randomMedia(&generator)
            #expect(try PlaylistParser.parse(media.text) == .media(media), "\(media.text)")
        }
    }

    static func word(_ generator: inout SeededGenerator) -> String {
        let pool = ["en", "fr", "Main", "Stéréo 2.0", "a,b", "x y", "aac", "日本語", "UPPER", "v-1"]
        return pool[Int(generator.next() % UInt64(pool.count))]
    }

    static func randomMaster(_ generator: inout SeededGenerator) -> MasterPlaylist {
        var master = MasterPlaylist()
        if generator.next() % 2 == 0 { master.version = Int(generator.next() % 10) }
        master.independentSegments = generator.next() % 2 == 0
        for index in 0..<Int(generator.next() % 4) {
            var attributes = AttributeList()
            attributes.attributes = [
                .init(name: "TYPE", value: ["AUDIO", "SUBTITLES"][index % 2], quoted: false),
                .init(name: "GROUP-ID", value: word(&generator), quoted: true),
                .init(name: "NAME", value: word(&generator), quoted: true),
                .init(name: "DEFAULT", value: generator.next() % 2 == 0 ? "YES" : "NO", quoted: false),
                .init(name: "CHANNELS", value: ["2", "6", "16/JOC"][Int(generator.next() % 3)], quoted: true),
            ]
            master.renditions.append(Rendition(attributes: attributes))
        }
        for index in 0..<Int(1 + generator.next() % 4) {
            var attributes = AttributeList()
            attributes.attributes = [
                .init(name: "BANDWIDTH", value: String(generator.next() % 50_000_000), quoted: false),
                .init(name: "CODECS", value: "avc1.64001f,mp4a.40.2", quoted: true),
                .init(name: "RESOLUTION", value: "\(320 * (index + 1))x\(180 * (index + 1))", quoted: false),
                .init(name: "FRAME-RATE", value: "23.976", quoted: false),
                .init(name: "VIDEO-RANGE", value: ["SDR", "PQ", "HLG"][index % 3], quoted: false),
            ]
            master.variants.append(Variant(attributes: attributes, uri: "v\(index)/\(word(&generator)).m3u8"))
        }
        if generator.next() % 2 == 0 {
            master.iFrameVariants.append(["BANDWIDTH": "1000", "URI": "i.m3u8"])
            master.sessionData.append(["DATA-ID": "com.example", "VALUE": word(&generator)])
        }
        return master
    }

    static func randomMedia(_ generator: inout SeededGenerator) -> MediaPlaylist {
        var media = MediaPlaylist()
        media.targetDuration = Int(1 + generator.next() % 10)
        media.mediaSequence = Int(generator.next() % 1000)
        media.endList = generator.next() % 2 == 0
        var keys: [AttributeList] = []
        var map: AttributeList?
        for index in 0..<Int(1 + generator.next() % 12) {
            var segment = Segment(duration: Double(generator.next() % 10_000) / 1000, uri: "s\(index).ts")
            if generator.next() % 4 == 0 {
                keys = generator.next() % 2 == 0 ? [] : [["METHOD": "AES-128", "URI": "https://k/\(index)", "IV": "0x\(String(index, radix: 16))"]]
            }
            if generator.next() % 5 == 0 { map = ["URI": "init\(index).mp4"] }
            segment.keys = keys
            segment.map = map
            segment.discontinuity = generator.next() % 6 == 0
            if generator.next() % 3 == 0 { segment.byteRange = ByteRange(length: Int(generator.next() % 10_000), offset: Int(generator.next() % 1000)) }
            if generator.next() % 3 == 0 { segment.title = word(&generator) }
            media.segments.append(segment)
        }
        return media
    }
}

/// A small deterministic generator (SplitMix64) so random tests repeat.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Values a hostile playlist can carry: they parse or fail, and never trap in arithmetic.
@Suite struct HostileValueTests {
    @Test func byteRangesThatAreEmptyOrOverflowHaveNoClosedRange() {
        #expect(ByteRange(length: 0, offset: nil).closedRange == nil)
        #expect(ByteRange(length: 1, offset: Int.max).closedRange == nil)
        #expect(ByteRange(length: 10, offset: 5).closedRange == 5...14)
        #expect(ByteRange("1@9223372036854775807")?.closedRange == nil)
    }

    @Test func hugeResolutionsCompareWithoutOverflow() throws {
        let master = try PlaylistParser.parseMaster("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=4294967296x4294967296\nv.m3u8\n")
        let variant = VariantDescription(master, index: 0)
        #expect(try VariantQualifier(parsing: "resolution >= 3840x2160").matches(variant))
    }

    @Test func aBandwidthBeyondIntIsRefusedWithItsLine() {
        do {
            _ = try PlaylistParser.parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=99999999999999999999\nv.m3u8\n")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 2)
        }
    }
}

