@testable import AirPlayReceiver
import AirPlayMedia
import AirPlayTesting
import AirPlayWire
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

/// `VideoSessions` carrying out its machine's actions with scripted players: a player that
/// takes its time to build or load never holds up the caller (the event loop), and the reply
/// says how it went.
@Suite struct VideoSessionsTests {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static func sessions(_ players: @escaping @Sendable () -> ScriptedMediaPlayer) -> VideoSessions {
        VideoSessions(makePlayer: { () throws(MediaError) -> any MediaPlayer in players() },
                      policy: MediaURLPolicy(refusingLocalTargetsWith: nil), takeover: .replace,
                      events: EventChannels(logger: Logger(label: "test")), logger: Logger(label: "test"))
    }

    static func request(_ method: String, _ target: String, body: String = "", session: String? = nil) -> AirPlayRequest {
        var headers: MessageHeaders = ["Content-Type": "text/parameters"]
        if let session { headers.add(name: "X-Apple-Session-ID", value: session) }
        return AirPlayRequest(method: method, target: target, version: .http11, headers: headers, body: ByteBuffer(string: body))
    }

    static func play(_ url: String) -> AirPlayRequest {
        request("POST", "/play", body: "Content-Location: \(url)\nStart-Position: 0\n", session: "S")
    }

    /// The answer, waited for off the loop.
    static func response(_ answer: VideoAnswer) throws -> AirPlayResponse {
        switch answer {
        case .now(let response): return response
        case .later(let future): return try future(group.next()).wait()
        }
    }

    /// A player whose load takes half a second: `/play` is answered later, the call itself
    /// returns at once, and the reply (200) comes once the player has loaded.
    @Test func aSlowPlayerDoesNotHoldUpTheCaller() throws {
        let player = ScriptedMediaPlayer(loadDelay: 0.5)
        let sessions = Self.sessions { player }
        let start = ProcessInfo.processInfo.systemUptime
        let answer = sessions.answer(Self.play("https://example.com/movie.mp4"))
        #expect(ProcessInfo.processInfo.systemUptime - start < 0.1)
        guard case .later = answer else { Issue.record("a /play that builds a player is answered later"); return }
        #expect(try Self.response(answer).status == 200)
        #expect(ProcessInfo.processInfo.systemUptime - start >= 0.5)
        #expect(player.calls == [.volume(1), .load(url: "https://example.com/movie.mp4", paused: false)])
    }

    /// A URL the player cannot load: 400 with the player's reason, and nothing plays after.
    @Test func aFailedLoadIsAnsweredWithItsReason() throws {
        let sessions = Self.sessions { ScriptedMediaPlayer(loadError: MediaError(code: -1, domain: "test", message: "no such stream")) }
        let response = try Self.response(sessions.answer(Self.play("https://example.com/missing.mp4")))
        #expect(response.status == 400 && String(buffer: response.body).contains("no such stream"))
        #expect(try Self.response(sessions.answer(Self.request("POST", "/rate?value=0"))).status == 404)
    }

    /// Requests on the playing session reach its player in order; `/stop` stops it.
    @Test func requestsReachThePlayerInOrder() throws {
        let player = ScriptedMediaPlayer()
        let sessions = Self.sessions { player }
        _ = try Self.response(sessions.answer(Self.play("https://example.com/movie.mp4")))
        #expect(try Self.response(sessions.answer(Self.request("POST", "/scrub?position=12.5"))).status == 200)
        #expect(try Self.response(sessions.answer(Self.request("POST", "/rate?value=0"))).status == 200)
        #expect(try Self.response(sessions.answer(Self.request("POST", "/rate?value=1"))).status == 200)
        #expect(try Self.response(sessions.answer(Self.request("POST", "/stop", session: "other"))).status == 409)
        #expect(try Self.response(sessions.answer(Self.request("POST", "/stop"))).status == 200)
        #expect(player.calls.suffix(4) == [.seek(12.5), .pause, .play, .stop])
    }
}
