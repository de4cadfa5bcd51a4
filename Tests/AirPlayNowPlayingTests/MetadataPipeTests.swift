@testable import AirPlayNowPlaying
import AirPlayWire
import Foundation
import Testing

/// The shairport-sync metadata pipe's bytes, item by item.
@Suite struct MetadataPipeEncodingTests {
    @Test func itemsAreFramedAsShairportSyncFramesThem() {
        #expect(String(decoding: MetadataPipe.Item("ssnc", "pbeg").encoded, as: UTF8.self)
            == "<item><type>73736e63</type><code>70626567</code><length>0</length></item>\n")
        #expect(String(decoding: MetadataPipe.Item("core", "minm", Array("Hello".utf8)).encoded, as: UTF8.self)
            == "<item><type>636f7265</type><code>6d696e6d</code><length>5</length>\n<data encoding=\"base64\">\nSGVsbG8=</data></item>\n")
        // Our base64 is the standard one, padding and all.
        for count in 0..<8 {
            let data = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 97 + 13) }
            var ours: [UInt8] = []
            MetadataPipe.Item.appendBase64(data, to: &ours)
            #expect(String(decoding: ours, as: UTF8.self) == Data(data).base64EncodedString())
        }
        // Long payloads stay on one base64 line.
        let cover = MetadataPipe.Item("ssnc", "PICT", [UInt8](repeating: 7, count: 300)).encoded
        #expect(String(decoding: cover, as: UTF8.self).split(separator: "\n").count == 3)
    }

    @Test func aSessionWritesWhatReadersExpect() {
        let sender = NowPlayingSender(kind: .audio, name: "192.168.1.20", address: "192.168.1.20", serverAddress: "192.168.1.2",
                                      userAgent: "AirPlay/550.10", dacpID: "A1B2C3D4E5F60718", activeRemote: "1234567890")
        var state = NowPlayingState()
        var codes: [String] = []
        let fields = [DMAPField(tag: "minm", text: "Song"), DMAPField(tag: "asar", text: "Band")]
        for event: NowPlayingEvent in [.began(sender, format: nil), .streamStarted, .volume(decibels: -15),
                                       .metadata(fields, rtpTime: 1234), .artwork(type: "image/jpeg", bytes: [1, 2], rtpTime: 1234),
                                       .progress(start: 1, current: 2, end: 3, sampleRate: 44100), .flushed, .resumed,
                                       .volume(decibels: -144), .ended] {
            state = state.applying(event, now: 0)
            let items = MetadataPipe.items(for: event, state: state)
            codes += items.map(\.code)
            if case .volume(-15) = event { #expect(items.first?.data == Array("-15.00,-15.00,-30.00,0.00".utf8)) }
            if case .metadata = event { #expect(items.first?.data == Array("1234".utf8) && items[1].type == "core") }
            if case .progress = event { #expect(items.first?.data == Array("1/2/3".utf8)) }
        }
        // No snam: the sender gave no X-Apple-Client-Name. Nothing on mute, as shairport-sync.
        #expect(codes == ["snua", "acre", "daid", "clip", "svip", "abeg", "pbeg", "pvol", "pvol", "mdst", "minm", "asar", "mden",
                          "pcst", "PICT", "pcen", "prgr", "pfls", "pffr", "prsm", "pend", "aend"])
    }

    @Test func thePipeIsWrittenWithoutAReaderAndReadByOneThatComesLater() throws {
        let path = NSTemporaryDirectory() + "pipe-\(UUID().uuidString.prefix(8))"
        defer { unlink(path) }
        let hub = NowPlaying()
        let pipe = try MetadataPipe(path: path)
        hub.attach(pipe)
        // Nobody reads: the item is dropped, nothing blocks.
        hub.post(.began(NowPlayingSender(kind: .audio, name: "x", clientName: "x"), format: nil))
        #expect(hub.drain())
        #expect(poll(2) { pipe.droppedItems == 0 ? false : true })
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        hub.post(.streamStarted)
        var bytes = [UInt8](repeating: 0, count: 4096)
        var text = ""
        #expect(poll(2) {
            let count = read(reader, &bytes, bytes.count)
            if count > 0 { text += String(decoding: bytes[..<count], as: UTF8.self) }
            return text.contains("70626567")
        }, "the reader gets abeg and pbeg: \(text)")
    }

    @Test func aReaderThatStopsReadingNeverHoldsTheWriterUp() throws {
        let path = NSTemporaryDirectory() + "pipe-\(UUID().uuidString.prefix(8))"
        defer { unlink(path) }
        let pipe = try MetadataPipe(path: path)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        // 10 MB of covers into a pipe nobody empties: no call waits for the reader (which would
        // take 2 s a cover), what cannot wait is dropped.
        let start = Date()
        let cover = NowPlayingEvent.artwork(type: "image/jpeg", bytes: [UInt8](repeating: 0xAB, count: 200_000))
        for _ in 0..<50 { pipe.nowPlaying(cover, state: NowPlayingState(), at: 0) }
        #expect(Date().timeIntervalSince(start) < 10, "writing never waits for the reader")
        #expect(poll(5) { pipe.droppedItems > 0 }, "what the reader cannot take is dropped, whole items first")
    }

    @Test func somethingElseAtThePathIsRefused() {
        #expect(throws: (any Error).self) { try MetadataPipe(path: "/etc/hostname") }
    }

    private func poll(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
