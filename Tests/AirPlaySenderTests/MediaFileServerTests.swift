@testable import AirPlaySender
import AirPlayHTTP
import Foundation
import Testing

/// The sender's little file server: byte ranges and a root nobody can climb out of.
@Suite struct MediaFileServerTests {
    @Test func byteRanges() {
        #expect(MediaFileServer.byteRange("bytes=0-99", size: 1000) == 0...99)
        #expect(MediaFileServer.byteRange("bytes=900-", size: 1000) == 900...999)
        #expect(MediaFileServer.byteRange("bytes=-100", size: 1000) == 900...999)
        #expect(MediaFileServer.byteRange("bytes=990-5000", size: 1000) == 990...999)
        #expect(MediaFileServer.byteRange("bytes=1000-", size: 1000) == nil)
        #expect(MediaFileServer.byteRange("bytes=5-1", size: 1000) == nil)
        #expect(MediaFileServer.byteRange("bytes=0-1,5-6", size: 1000) == nil)
        #expect(MediaFileServer.byteRange("items=0-1", size: 1000) == nil)
    }

    @Test func pathsStayInsideTheRoot() throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory() + "fs-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("hls"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: root.appendingPathComponent("hls/a b.ts"))
        let base = root.resolvingSymlinksInPath()
        #expect(MediaFileServer.resolve(path: "/hls/a%20b.ts", root: base) != nil)
        #expect(MediaFileServer.resolve(path: "/../../etc/passwd", root: base) == nil)
        #expect(MediaFileServer.resolve(path: "/hls/%2e%2e/%2e%2e/etc/passwd", root: base) == nil)
        #expect(MediaFileServer.resolve(path: "/hls", root: base) == nil, "folders are not served")
        #expect(MediaFileServer.resolve(path: "/nope.ts", root: base) == nil)
    }

    @Test func gzipRoundTripsThroughPython() throws {
        let playlist = Array(String(repeating: "#EXTINF:2.0,\nsegment.ts\n", count: 50).utf8)
        let compressed = try #require(Gzip.compress(playlist))
        #expect(compressed.starts(with: [0x1F, 0x8B]), "gzip magic")
        #expect(compressed.count < playlist.count / 4)
        let path = NSTemporaryDirectory() + "gz-\(UUID().uuidString.prefix(6)).gz"
        try Data(compressed).write(to: URL(fileURLWithPath: path))
        try Data(playlist).write(to: URL(fileURLWithPath: path + ".plain"))
        // The system's gzip must read back exactly the playlist.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "gzip -dc '\(path)' | cmp -s - '\(path).plain'"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func mimeTypesFollowTheOverviewTable() {
        #expect(MediaFileServer.mimeTypes["m3u8"] == "application/vnd.apple.mpegurl")
        #expect(MediaFileServer.mimeTypes["ts"] == "video/MP2T")
        #expect(MediaFileServer.mimeTypes["mov"] == "video/quicktime")
    }

    @Test func hostPortTargets() {
        #expect(ReceiverResolver.parseHostPort("127.0.0.1:7000")! == ("127.0.0.1", 7000))
        #expect(ReceiverResolver.parseHostPort("[::1]:7000")! == ("::1", 7000))
        #expect(ReceiverResolver.parseHostPort("Living Room") == nil)
        #expect(ReceiverResolver.parseHostPort("AA:BB:CC:DD:EE:FF") == nil)
        #expect(ReceiverResolver.parseHostPort("box:99999") == nil)
    }
}
