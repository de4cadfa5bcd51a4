@testable import AirPlayReceiver
import AirPlayMedia
import AirPlayPlist
import AirPlayTesting
import AirPlayWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// An iPhone's YouTube hand-over into `VideoSessions`: `/play` of `mlhls://localhost/master.m3u8`
/// needs the sender's `/reverse` channel; the playlists are asked on it (FCUP) and answered with
/// `POST /action`; a removed item ends the video mid-request without harm; FairPlay video is
/// refused; the properties iOS sets are acknowledged.
@Suite struct VideoHandOverTests {
    /// A gateway stand-in: opens and closes, and reads playlists through the broker as the HLS
    /// gateway does when its player asks.
    final class Gateway: HLSProxy, @unchecked Sendable {
        let opened = NIOLockedValueBox<[String]>([])
        func open(origin: String, headers: [String: String], sessionID: String) -> String {
            opened.withLockedValue { $0.append(origin) }
            return "http://127.0.0.1:7000/hls/t/main.m3u8"
        }
        func close(_ url: String) {}
        func figures(_ url: String) -> HLSFigures? { nil }
        func renditions(_ url: String) -> [HLSRenditionInfo] { [] }
        func select(_ url: String, type: String, choice: HLSRenditionChoice) -> Bool { false }
        func trickURL(_ url: String) -> String? { nil }
        func respond(to request: AirPlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<AirPlayResponse> {
            eventLoop.makeSucceededFuture(AirPlayResponse(status: 404))
        }
    }

    struct Setup {
        let sessions: VideoSessions
        let events: EventChannels
        let broker: FCUPBroker
        let sent: NIOLockedValueBox<[FCUPRequest]>
        let player: ScriptedMediaPlayer
    }

    static func setup() -> Setup {
        let events = EventChannels(logger: Logger(label: "test"))
        let sent = NIOLockedValueBox<[FCUPRequest]>([])
        let broker = FCUPBroker(timeout: 1, logger: Logger(label: "test")) { _, request in
            sent.withLockedValue { $0.append(request) }
            return true
        }
        let player = ScriptedMediaPlayer()
        let sessions = VideoSessions(makePlayer: { () throws(MediaError) -> any MediaPlayer in player },
                                     policy: MediaURLPolicy(refusingLocalTargetsWith: nil), takeover: .replace, events: events,
                                     gateway: Gateway(), fcup: broker, logger: Logger(label: "test"))
        return Setup(sessions: sessions, events: events, broker: broker, sent: sent, player: player)
    }

    /// The `/play` an iPhone's YouTube app sends: a binary plist.
    static func play(uuid: String = "0B1C2D3E-4F50-6172-8394-A5B6C7D8E9F0") -> AirPlayRequest {
        let body = PropertyList.dictionary([
            "Content-Location": .string("mlhls://localhost/master.m3u8"), "Start-Position": .real(0),
            "Start-Position-Seconds": .real(0), "uuid": .string(uuid), "clientProcName": .string("YouTube"), "rate": .real(1),
        ]).encoded(as: .binary)
        return AirPlayRequest(method: "POST", target: "/play", version: .http11,
                              headers: ["X-Apple-Session-ID": "S", "Content-Type": "application/x-apple-binary-plist"],
                              body: ByteBuffer(bytes: body))
    }

    static func action(_ action: VideoAction) -> AirPlayRequest {
        AirPlayRequest(method: "POST", target: "/action", version: .http11,
                       headers: ["X-Apple-Session-ID": "S", "Content-Type": "application/x-apple-binary-plist"],
                       body: ByteBuffer(bytes: action.plist.encoded(as: .binary)))
    }

    static func response(_ answer: VideoAnswer) throws -> AirPlayResponse { try VideoSessionsTests.response(answer) }

    /// Without the sender's event channel the box could never ask for the playlists: 400, why.
    @Test func aHandOverNeedsTheReverseChannel() throws {
        let setup = Self.setup()
        let refused = try Self.response(setup.sessions.answer(Self.play()))
        #expect(refused.status == 400 && String(buffer: refused.body).contains("POST /reverse first"))
    }

    /// With the channel, `/play` answers once the player loads (no FCUP waited for); the master,
    /// when the gateway asks for it, goes out as request 1 and the phone's `/action` delivers it.
    /// An answer naming an id never sent is a 400 with its number.
    @Test func thePlaylistsAreAskedOfThePhoneAndItsAnswersDelivered() async throws {
        let setup = Self.setup()
        setup.events.register(sessionID: "S", channel: EmbeddedChannel())
        #expect(try Self.response(setup.sessions.answer(Self.play())).status == 200)
        #expect(setup.player.calls.last == .load(url: "http://127.0.0.1:7000/hls/t/main.m3u8", paused: false))
        async let master = setup.broker.requestPlaylist(sessionID: "S", url: "mlhls://localhost/master.m3u8")
        try await Self.waitUntil { setup.sent.withLockedValue { $0.count } == 1 }
        let request = try #require(setup.sent.withLockedValue { $0.first })
        #expect(request == FCUPRequest(url: "mlhls://localhost/master.m3u8", requestID: 1, playbackSessionID: "S"))
        let unknown = try Self.response(setup.sessions.answer(Self.action(.unhandledURLResponse(
            FCUPResponse(url: request.url, requestID: 9, data: [])))))
        #expect(unknown.status == 400 && String(buffer: unknown.body).contains("FCUP_Response_RequestID 9"))
        let answered = try Self.response(setup.sessions.answer(Self.action(.unhandledURLResponse(
            FCUPResponse(url: request.url, requestID: 1, data: Array("#EXTM3U\n".utf8))))))
        #expect(answered.status == 200)
        #expect(try await master.get() == "#EXTM3U\n")
    }

    /// The phone changes quality while a playlist is asked (`playlistRemove` of the playing
    /// item, which crashes UxPlay): the video ends, the waiting playlist fails, the late answer
    /// gets 200, and the box goes on answering.
    @Test func aRemovedItemEndsTheVideoMidRequest() async throws {
        let setup = Self.setup()
        setup.events.register(sessionID: "S", channel: EmbeddedChannel())
        _ = try Self.response(setup.sessions.answer(Self.play(uuid: "ITEM-1")))
        async let media = setup.broker.requestPlaylist(sessionID: "S", url: "mlhls://localhost/itag/136/mediadata.m3u8")
        try await Self.waitUntil { setup.sent.withLockedValue { $0.count } == 1 }
        #expect(try Self.response(setup.sessions.answer(Self.action(.playlistRemove(uuid: "ITEM-1")))).status == 200)
        #expect(setup.player.calls.last == .stop)
        guard case .failure(let failure) = await media else { Issue.record("the waiting playlist was delivered"); return }
        #expect(failure.status == 503 && failure.reason.contains("ended"))
        let late = try Self.response(setup.sessions.answer(Self.action(.unhandledURLResponse(
            FCUPResponse(url: "mlhls://localhost/itag/136/mediadata.m3u8", requestID: 1, data: [])))))
        #expect(late.status == 200)
        #expect(try Self.response(setup.sessions.answer(VideoSessionsTests.request("GET", "/playback-info"))).status == 200)
    }

    /// `fp-setup2` (FairPlay video) is refused with 421 and the reason; the queue's insert is
    /// taken, one without a URL refused; the properties iOS 18 sets are acknowledged with `errorCode` 0; a broken
    /// `/action` gets its reason.
    @Test func whatTheBoxDoesNotPlayIsSaid() throws {
        let setup = Self.setup()
        let fairPlay = try Self.response(setup.sessions.answer(VideoSessionsTests.request("POST", "/fp-setup2", body: "FPLY")))
        #expect(fairPlay.status == 421 && String(buffer: fairPlay.body).contains("FairPlay"))
        let queued = PropertyList.string("https://example.com/next.m3u8")
        #expect(try Self.response(setup.sessions.answer(Self.action(.playlistInsert(item: ["uuid": .string("NEXT"),
                                                                                         "Content-Location": queued])))).status == 200)
        let nowhere = try Self.response(setup.sessions.answer(Self.action(.playlistInsert(item: ["uuid": .string("NEXT")]))))
        #expect(nowhere.status == 400 && String(buffer: nowhere.body).contains("Content-Location"))
        for property in ["interstitialEvents", "textMarkupArray"] {
            let answer = try Self.response(setup.sessions.answer(VideoSessionsTests.request("PUT", "/setProperty?\(property)")))
            #expect(answer.status == 200, "\(property)")
        }
        let broken = AirPlayRequest(method: "POST", target: "/action", version: .http11, headers: ["X-Apple-Session-ID": "S"],
                                    body: ByteBuffer(bytes: PropertyList.dictionary(["params": .dictionary([:])]).encoded(as: .binary)))
        let refused = try Self.response(setup.sessions.answer(broken))
        #expect(refused.status == 400 && String(buffer: refused.body).contains("type"))
    }

    static func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        for _ in 0..<200 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
