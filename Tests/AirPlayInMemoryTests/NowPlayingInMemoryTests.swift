import AirPlayInMemory
import AirPlayNowPlaying
import AirPlayPlist
import AirPlayReceiver
@testable import AirPlaySender
import AirPlayWire
import FoundationEssentials
import NIOCore
import Testing

/// What `airplay stream` tells a receiver with feature bit 50 (a HomePod on OS 27, airplayd),
/// read by the receiver's own session machine in memory: the commands it takes, the item with
/// its cover once, where it stands, and a pause. `Protocol/now-playing.md` §7.
@Suite struct NowPlayingInMemoryTests {
    static func post(_ body: PropertyList, to receiver: inout InMemoryReceiver, from connection: InMemoryConnection, now: Double) -> Int {
        var buffer = ByteBuffer()
        buffer.writeBytes(body.encoded(as: .binary))
        let request = AirPlayRequest(method: "POST", target: "/command", version: .rtsp10,
                                     headers: ["Content-Type": "application/x-apple-binary-plist"], body: buffer)
        return receiver.handle(request, from: connection, now: now).status
    }

    @Test func theSendersMessagesTellABit50ReceiverWhatPlays() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        _ = try setup.run(SetupInMemoryTests.realtime(), against: &receiver, now: 0).get()
        var messages = MediaRemoteNowPlayingMessages()
        var item = DMAP.Item()
        item.title = "Sweep Song"
        item.artist = "Test Artist"
        let cover: (type: String, bytes: [UInt8]) = ("image/jpeg", [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 0xFF, 0xD9])
        // 12 s into a 60 s item at 44.1 kHz.
        let progress: (UInt32, UInt32, UInt32) = (1000, 1000 + 12 * 44100, 1000 + 60 * 44100)
        let first = messages.item(item, artwork: cover, progress: progress, sampleRate: 44100, playing: true, now: Date())
        #expect(first.map { $0["type"]?.stringValue } == ["updateMRSupportedCommands", "updateMRNowPlayingInfo", "updateMRPlaybackState"])
        for body in first { #expect(Self.post(body, to: &receiver, from: setup.connection, now: 1) == 200) }
        let events = receiver.actions.compactMap { if case .nowPlaying(let event) = $0 { event } else { nil } }
        #expect(events.contains(.senderCommands([0, 1, 2, 3, 4, 5])))
        #expect(events.contains { if case .metadata(let fields, _) = $0 { fields.first == DMAPField(tag: "minm", text: "Sweep Song") } else { false } })
        #expect(events.contains(.artwork(type: "image/jpeg", bytes: cover.bytes)))
        #expect(events.contains { if case .position(let seconds, 60) = $0 { abs(seconds - 12) < 0.5 } else { false } }, "\(events)")

        // The same item again (a resume): the cover is named, not sent, and the receiver keeps it.
        let again = messages.item(item, artwork: cover, progress: progress, sampleRate: 44100, playing: true, now: Date())
        #expect(again.count == 2 && again[0]["params"]?["params"]?["kMRMediaRemoteNowPlayingInfoArtworkData"] == nil)
        for body in again { #expect(Self.post(body, to: &receiver, from: setup.connection, now: 2) == 200) }
        #expect(receiver.machine.current?.mediaRemote?.artworkData == cover.bytes)
        #expect(Self.post(MediaRemotePlaybackState.paused.plist, to: &receiver, from: setup.connection, now: 3) == 200)
        #expect(receiver.actions.last == .nowPlaying(.rate(0)))
    }
}
