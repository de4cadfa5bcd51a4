@testable import AirPlayDaemon
import AirPlayMedia
import Testing

/// What airplayd and its video player process say to each other: every message reads back as
/// written (a live stream's infinite duration and an error included), and bytes that are not a
/// message are not taken for one.
@Suite struct PlayerMessageTests {
    @Test func everyMessageReadsBackAsWritten() {
        let setup = PlayerMessage.Setup(videoSink: "fakesink sync=true", audioOutput: "raw:/tmp/a.pcm", classic: true, followRedirects: false)
        let live = MediaStatus(state: .playing, position: 12.5, duration: .infinity, rate: 1, bufferPercent: 80,
                               loadedRanges: [TimeRange(start: 0, duration: 20)], seekableRanges: [TimeRange(start: 2, duration: 18)])
        let failed = MediaStatus(state: .failed, error: MediaError(code: -1, domain: "airplayd.player", message: "the video player process ended"))
        let messages: [PlayerMessage] = [
            .load(player: 1, request: 7, setup: setup, url: "http://127.0.0.1:7000/hls/t/main.m3u8", start: .fraction(0.5), paused: true),
            .load(player: 2, request: 8, setup: setup, url: "https://example.com/a.mp4", start: .seconds(4), paused: false),
            .play(player: 1), .pause(player: 1), .seek(player: 1, request: 9, seconds: 24), .rate(player: 1, request: 10, rate: 8),
            .volume(player: 1, volume: 0.5), .stop(player: 1), .reply(request: 9, error: nil),
            .reply(request: 10, error: MediaError(code: -5, domain: "airplayd.rate", message: "no I-frames")),
            .status(player: 1, live, change: false), .status(player: 2, failed, change: true), .status(player: 3, .idle, change: true),
        ]
        for message in messages {
            #expect(PlayerMessage(bytes: message.bytes) == message, "\(message)")
        }
        #expect(PlayerMessage(bytes: Array("not a plist".utf8)) == nil)
        #expect(PlayerMessage(plist: .dictionary(["op": .string("seek"), "player": .integer(1)])) == nil, "a seek without its request")
    }
}
