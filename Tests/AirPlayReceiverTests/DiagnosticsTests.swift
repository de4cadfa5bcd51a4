@testable import AirPlayReceiver
@testable import AirPlayTiming
import AirPlayWire
import NIOCore
import Testing

/// What the box tells `airplay doctor` about itself (`GET /diagnostics`, loopback only): where
/// its mDNS records stand and how its last sessions ended.
@Suite struct DiagnosticsTests {
    final class Token {}

    static func router() -> ControlRouter {
        var router = ControlRouter(serverInfo: {
            ServerInfo(deviceID: DeviceID("02:FC:00:00:00:01")!, name: "Box", capabilities: ReceiverCapabilities(video: true, hls: true, audio: true))
        })
        router.publicationStatus = { ["state": "established"] }
        return router
    }

    static func connection(from address: String) throws -> ConnectionContext {
        ConnectionContext(id: ObjectIdentifier(Token()), local: try SocketAddress(ipAddress: "10.0.0.2", port: 7000),
                          remote: try SocketAddress(ipAddress: address, port: 50000), close: {})
    }

    /// It names senders and their addresses: programs on the box may read it, the network not,
    /// and a box under `access = "paired"` still lets them (it is loopback's either way).
    @Test func onlyProgramsOnTheBoxReadIt() throws {
        let router = Self.router()
        let request = AirPlayRequest(method: "GET", target: "/diagnostics", version: .http11)
        let local = router.reply(to: request, connection: try Self.connection(from: "127.0.0.1")).response
        #expect(local.status == 200)
        let text = String(decoding: local.body.readableBytesView, as: UTF8.self)
        #expect(text.contains(#""deviceID":"02:FC:00:00:00:01""#) && text.contains(#""mdns":{"state":"established"}"#), "\(text)")
        #expect(router.reply(to: request, connection: try Self.connection(from: "10.0.0.9")).response.status == 403)
    }

    /// The publisher's events, as the daemon hears them, and how long each state has lasted.
    @Test func publicationFollowsThePublishersEvents() {
        var status = PublicationStatus(name: "Living Room", now: 0)
        #expect(status.state == "starting")
        status.note(.waitingForDaemon(reason: "Daemon not running"), now: 1)
        #expect(status.state == "waiting" && status.reason == "Daemon not running")
        status.note(.waitingForDaemon(reason: "Daemon not running"), now: 4)
        #expect(status.json(now: 10) == ["state": "waiting", "name": "Living Room", "renamedFrom": nil, "reason": "Daemon not running",
                                         "secondsInState": .number(9)], "a repeated event does not restart the count")
        status.note(.registering(deviceName: "Living Room"), now: 11)
        status.note(.renamed(from: "Living Room", to: "Living Room #2"), now: 11.5)
        status.note(.established(deviceName: "Living Room #2"), now: 12)
        #expect(status.state == "established" && status.name == "Living Room #2" && status.renamedFrom == "Living Room" && status.reason == nil)
    }

    /// The last eight sessions are kept, newest first in the answer.
    @Test func theHistoryKeepsTheLastSessions() {
        var history = SessionHistory()
        for number in 1...10 {
            history.append(.init(session: number, sender: "10.0.0.\(number)", senderName: nil, kind: "airplay1", seconds: 5,
                                 endedAt: Double(number * 10), reason: number == 10 ? "TEARDOWN" : "taken over by a new ANNOUNCE",
                                 figures: .init(session: number, codec: "L16", playout: .init(),
                                                clock: .init(senderClock: true, exchanges: 1, driftPPM: 0, implausibleSyncs: 0))))
        }
        #expect(history.records.map(\.session) == Array(3...10))
        guard case .array(let items) = history.json(now: 105), case .object(let newest) = items.first else {
            Issue.record("an array of objects")
            return
        }
        #expect(items.count == SessionHistory.capacity)
        #expect(newest["session"] == 10 && newest["reason"] == "TEARDOWN" && newest["endedSecondsAgo"] == .number(5))
    }
}
