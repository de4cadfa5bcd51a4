@testable import AirPlayReceiver
import AirPlayMedia
import Testing

/// The video session protocol of `Protocol/video.md`, driven through the receiver's state
/// machine with no player and no socket: `/play` and takeover, `/stop`, which session a request
/// addresses, trick play on HLS, volume, and the state events a sender hears (each once).
@Suite struct VideoSessionStateMachineTests {
    typealias Machine = VideoSessionStateMachine

    static func played(_ machine: inout Machine, _ session: String, gateway: String? = nil) throws -> [Machine.Action] {
        try machine.play(sessionID: session, url: "https://example.com/\(session).m3u8", gatewayURL: gateway,
                         start: .seconds(0), paused: false).get()
    }

    /// The first `/play` starts player 1 on the URL, or on the gateway's URL for a playlist.
    @Test func playStartsAPlayer() throws {
        var machine = Machine(takeover: .replace)
        #expect(try Self.played(&machine, "A") == [.startPlayer(1, url: "https://example.com/A.m3u8", start: .seconds(0),
                                                                paused: false, volume: 1, trick: false)])
        #expect(try Self.played(&machine, "B", gateway: "http://127.0.0.1:7000/hls/1/master.m3u8").last
                == .startPlayer(2, url: "http://127.0.0.1:7000/hls/1/master.m3u8", start: .seconds(0), paused: false, volume: 1, trick: false))
    }

    /// Another sender's `/play` replaces the video: the old player stops, its gateway session
    /// closes and its sender is told `stopped`; a sender replacing its own video is told nothing.
    @Test func takeoverStopsTheOldSessionAndTellsItsSender() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A", gateway: "gw-A")
        let actions = try Self.played(&machine, "B")
        #expect(actions.prefix(3) == [.stopPlayer(1), .closeGateway("gw-A"), .sendEvent(sessionID: "A", state: "stopped")])
        let again = try Self.played(&machine, "B")
        #expect(!again.contains { if case .sendEvent = $0 { true } else { false } })
        #expect(again.first == .stopPlayer(2))
    }

    /// A handed-over video (`mlhls://`) ends its FCUP exchange whenever it ends; `playlistRemove`
    /// of the playing item ends it untold (the sender removed it itself), of another item changes
    /// nothing.
    @Test func aHandedOverItemEndsWithItsExchange() throws {
        var machine = Machine(takeover: .replace)
        _ = try machine.play(sessionID: "S", url: "mlhls://localhost/master.m3u8", gatewayURL: "gw", start: .seconds(0),
                             paused: false, itemID: "ITEM-1").get()
        #expect(machine.removeItem("ITEM-2", sessionID: "S").isEmpty)
        #expect(machine.removeItem("ITEM-1", sessionID: "other").isEmpty)
        #expect(machine.removeItem("ITEM-1", sessionID: "S") == [.stopPlayer(1), .endHandOver(sessionID: "S"), .closeGateway("gw")])
        #expect(machine.current == nil)
        _ = try machine.play(sessionID: "S", url: "mlhls://localhost/master.m3u8", gatewayURL: "gw2", start: .seconds(0),
                             paused: false).get()
        #expect(try machine.stop(sessionID: "S").get().contains(.endHandOver(sessionID: "S")))
    }

    /// `playlistInsert` queues items after the playing one: when it ends, the next plays in the
    /// same session (no `stopped` for the one that ended); a removed item leaves the queue;
    /// `actionAtItemEnd` 1 (pause) keeps the queue waiting; another sender's video clears it.
    @Test func queuedItemsPlayWhenTheCurrentOneEnds() throws {
        var machine = Machine(takeover: .replace)
        _ = try machine.play(sessionID: "S", url: "https://example.com/a.m3u8", gatewayURL: nil, start: .seconds(0), paused: false,
                             itemID: "A").get()
        var next = PlayRequest(url: "https://example.com/b.m3u8", sessionID: "S")
        next.itemID = "B"
        var third = PlayRequest(url: "https://example.com/c.m3u8", sessionID: "S")
        third.itemID = "C"
        #expect(throws: Never.self) { try machine.insertItem(next, sessionID: "S").get() }
        #expect(throws: Never.self) { try machine.insertItem(third, sessionID: "S").get() }
        #expect(machine.insertItem(PlayRequest(url: "https://example.com/d.m3u8"), sessionID: "S").isFailure, "an item needs its uuid")
        #expect(machine.removeItem("C", sessionID: "S").isEmpty && machine.queue.map(\.itemID) == ["B"])
        #expect(machine.playerChanged(1, to: .ended) == [.playNext(sessionID: "S", next)])
        #expect(machine.queue.isEmpty)
        // Nothing queued: the end is the session's.
        _ = try machine.play(sessionID: "S", url: "https://example.com/b.m3u8", gatewayURL: nil, start: .seconds(0), paused: false,
                             itemID: "B").get()
        #expect(machine.playerChanged(2, to: .ended) == [.sendEvent(sessionID: "S", state: "stopped")])
        // Pause at the item's end: the queue waits.
        _ = try machine.play(sessionID: "S", url: "https://example.com/b.m3u8", gatewayURL: nil, start: .seconds(0), paused: false).get()
        _ = machine.insertItem(third, sessionID: "S")
        machine.setItemEnd(1)
        #expect(machine.playerChanged(3, to: .ended) == [.sendEvent(sessionID: "S", state: "stopped")])
        // Another sender's video takes the queue away.
        machine.setItemEnd(0)
        _ = try machine.play(sessionID: "T", url: "https://example.com/t.mp4", gatewayURL: nil, start: .seconds(0), paused: false).get()
        #expect(machine.queue.isEmpty)
    }

    /// With `video_takeover = "refuse"`, another sender gets 409 while the video loads, plays
    /// or is paused, and may take over once it has ended.
    @Test func refusedTakeoverWhileAnotherVideoPlays() throws {
        var machine = Machine(takeover: .refuse)
        _ = try Self.played(&machine, "A")
        for state in [MediaState.loading, .playing, .paused] {
            _ = machine.playerChanged(1, to: state)
            let refusal = machine.play(sessionID: "B", url: "u", gatewayURL: nil, start: .seconds(0), paused: false)
            #expect(throws: Machine.Refusal(status: 409, reason: "another sender's video is playing; this receiver refuses takeovers")) {
                try refusal.get()
            }
        }
        #expect(try Self.played(&machine, "A").first == .stopPlayer(1), "the same sender may replace its own video")
        _ = machine.playerChanged(2, to: .ended)
        #expect(try Self.played(&machine, "B").first == .stopPlayer(2))
    }

    /// `/stop` ends the current session (or the one it names); naming another is 409, and
    /// stopping when nothing plays is already done.
    @Test func stopEndsTheAddressedSession() throws {
        var machine = Machine(takeover: .replace)
        #expect(try machine.stop(sessionID: nil).get() == [])
        _ = try Self.played(&machine, "A")
        #expect(throws: Machine.Refusal.self) { try machine.stop(sessionID: "B").get() }
        #expect(try machine.stop(sessionID: "A").get() == [.stopPlayer(1), .sendEvent(sessionID: "A", state: "stopped")])
        #expect(machine.current == nil)
    }

    /// A sender hears each state once, in the names senders know, and nothing from a player
    /// that is no longer the session's; `stopped` is not repeated when it stops.
    @Test func stateEventsAreSentOncePerState() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A")
        #expect(machine.playerChanged(1, to: .loading) == [.sendEvent(sessionID: "A", state: "loading")])
        #expect(machine.playerChanged(1, to: .loading) == [])
        #expect(machine.playerChanged(1, to: .playing) == [.sendEvent(sessionID: "A", state: "playing")])
        #expect(machine.playerChanged(1, to: .idle) == [])
        #expect(machine.playerChanged(7, to: .paused) == [], "not this session's player")
        #expect(machine.playerChanged(1, to: .ended) == [.sendEvent(sessionID: "A", state: "stopped")])
        #expect(try machine.stop(sessionID: nil).get() == [.stopPlayer(1)])
    }

    /// Requests that need a session: 404 when nothing plays, 409 for another session's id.
    @Test func requestsAddressTheCurrentSession() throws {
        var machine = Machine(takeover: .replace)
        #expect(throws: Machine.Refusal(status: 404, reason: "no video is playing")) { try machine.scrub(to: 3, sessionID: nil).get() }
        _ = try Self.played(&machine, "A")
        #expect(try machine.scrub(to: 3, sessionID: nil).get() == [.command(1, .seek(3))])
        #expect(try machine.scrub(to: 3, sessionID: "A").get() == [.command(1, .seek(3))])
        #expect(throws: Machine.Refusal.self) { try machine.rate(0, sessionID: "B", trickURL: nil).get() }
        #expect(try machine.rate(0, sessionID: nil, trickURL: nil).get() == [.command(1, .rate(0))])
    }

    /// On HLS with an I-frame playlist, rates from 4× reload onto that playlist with a new
    /// player; back under 4× (not 0), onto the variants; without one, the player's rate.
    @Test func trickPlayReloadsOntoTheIFramePlaylistAndBack() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A", gateway: "gw")
        #expect(try machine.rate(8, sessionID: nil, trickURL: "gw-iframes").get()
                == [.replacePlayer(old: 1, new: 2, url: "gw-iframes", rate: 8, volume: 1, trick: true)])
        #expect(try machine.rate(-8, sessionID: nil, trickURL: "gw-iframes").get() == [.command(2, .rate(-8))])
        #expect(try machine.rate(0, sessionID: nil, trickURL: nil).get() == [.command(2, .rate(0))], "pausing stays in trick play")
        #expect(try machine.rate(1, sessionID: nil, trickURL: nil).get()
                == [.replacePlayer(old: 2, new: 3, url: "gw", rate: 1, volume: 1, trick: false)])
        #expect(try machine.rate(8, sessionID: nil, trickURL: nil).get() == [.command(3, .rate(8))], "no I-frame playlist")
        #expect(machine.playerChanged(2, to: .playing) == [], "the replaced player is not heard")
    }

    /// `/volume` applies to the current player and to every player after it.
    @Test func volumeIsKeptForLaterPlayers() throws {
        var machine = Machine(takeover: .replace)
        #expect(machine.setVolume(0.5) == [])
        #expect(try Self.played(&machine, "A") == [.startPlayer(1, url: "https://example.com/A.m3u8", start: .seconds(0),
                                                                paused: false, volume: 0.5, trick: false)])
        #expect(machine.setVolume(0.25) == [.setVolume(1, 0.25)])
    }

    /// A player that cannot start ends its session (the `/play` reply says why); a failed
    /// reload tells the sender `stopped`.
    @Test func aPlayerThatCannotStartEndsItsSession() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A", gateway: "gw")
        #expect(machine.playerFailedToStart(1, tellSender: false) == [.stopPlayer(1), .closeGateway("gw")])
        #expect(machine.current == nil)
        _ = try Self.played(&machine, "B", gateway: "gw2")
        _ = machine.renditionsChanged()
        #expect(machine.playerFailedToStart(3, tellSender: true)
                == [.stopPlayer(3), .closeGateway("gw2"), .sendEvent(sessionID: "B", state: "stopped")])
    }

    /// The player process dying under a session (a crash in GStreamer) costs a rebuffer the
    /// first time: a new player plays on from where the old one was, on the URL it played
    /// (trick play's I-frame playlist stays), at the rate the sender asked for, paused if the
    /// player was; the second time the session ends as for any failure: the sender hears `stopped`.
    @Test func aDeadPlayerProcessIsReplacedOnceThenEndsTheSession() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A", gateway: "gw")
        _ = machine.playerChanged(1, to: .playing)
        _ = try machine.rate(8, sessionID: nil, trickURL: "gw-iframes").get()
        #expect(machine.playerProcessEnded(2, at: 41.5, starting: false)
                == [.restartPlayer(failed: 2, new: 3, url: "gw-iframes", position: 41.5, rate: 8, paused: false, volume: 1, trick: true)])
        #expect(machine.playerProcessEnded(2, at: 0, starting: false) == [], "the dead player is no longer the session's")
        #expect(machine.playerChanged(3, to: .loading) == [.sendEvent(sessionID: "A", state: "loading")], "a rebuffer, not a stop")
        #expect(machine.playerChanged(3, to: .playing) == [.sendEvent(sessionID: "A", state: "playing")])
        #expect(machine.playerProcessEnded(3, at: 50, starting: false) == [.sendEvent(sessionID: "A", state: "stopped")])

        _ = try Self.played(&machine, "B", gateway: "gw2")
        _ = machine.playerChanged(4, to: .paused)
        #expect(machine.playerProcessEnded(4, at: -1, starting: false)
                == [.restartPlayer(failed: 4, new: 5, url: "gw2", position: 0, rate: 1, paused: true, volume: 1, trick: false)])
        #expect(machine.playerProcessEnded(5, at: 3, starting: true)
                == [.stopPlayer(5), .closeGateway("gw2"), .sendEvent(sessionID: "B", state: "stopped")],
                "a replacement that cannot start ends the session")
        #expect(machine.current == nil)
    }

    /// A reload the box began itself (back from trick play) whose player process dies while it
    /// loads plays on in a new one: the sender asked for 1x and gets it.
    @Test func aReloadWhoseProcessDiesWhileLoadingIsTriedOnceMore() throws {
        var machine = Machine(takeover: .replace)
        _ = try Self.played(&machine, "A", gateway: "gw")
        _ = try machine.rate(8, sessionID: nil, trickURL: "gw-iframes").get()
        #expect(try machine.rate(1, sessionID: nil, trickURL: "gw-iframes").get()
                == [.replacePlayer(old: 2, new: 3, url: "gw", rate: 1, volume: 1, trick: false)])
        #expect(machine.playerProcessEnded(3, at: 20, starting: true)
                == [.restartPlayer(failed: 3, new: 4, url: "gw", position: 20, rate: 1, paused: false, volume: 1, trick: false)])
    }
}

extension Result {
    var isFailure: Bool { if case .failure = self { true } else { false } }
}
