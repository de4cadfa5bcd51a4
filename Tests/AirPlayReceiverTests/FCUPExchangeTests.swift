@testable import AirPlayReceiver
import AirPlayWire
import Testing

/// How a receiver asks an iPhone for a handed-over video's playlists (FCUP), one at a time,
/// and what it does with the answers, a silent phone and a video that ends mid-request.
@Suite struct FCUPExchangeTests {
    static let master = "mlhls://localhost/master.m3u8"
    static let video = "mlhls://localhost/itag/136/mediadata.m3u8"
    static let audio = "mlhls://localhost/itag/140/mediadata.m3u8"
    static let whole = "#EXTM3U\n#EXT-X-TARGETDURATION:5\n#EXTINF:5,\ns/1\n#EXT-X-ENDLIST\n"

    static func sent(_ actions: [FCUPExchange.Action]) -> [FCUPRequest] {
        actions.compactMap { if case .send(let request) = $0 { request } else { nil } }
    }

    static func delivered(_ actions: [FCUPExchange.Action]) -> [FCUPExchange.Waiter: Result<String, FCUPExchange.Failure>] {
        var result: [FCUPExchange.Waiter: Result<String, FCUPExchange.Failure>] = [:]
        for case .deliver(let waiter, let outcome) in actions { result[waiter] = outcome }
        return result
    }

    static func answer(_ request: FCUPRequest, _ text: String, status: Int = 0) -> FCUPResponse {
        FCUPResponse(url: request.url, requestID: request.requestID, statusCode: status, data: Array(text.utf8))
    }

    /// The master is request 1; the media playlists it names are asked one at a time, each once
    /// the previous is answered, with ids 2 and 3; each answer reaches the fetch that wanted it.
    @Test func requestsGoOneAtATimeWithIdsFromOne() throws {
        var exchange = FCUPExchange(playbackSessionID: "S")
        let first = Self.sent(exchange.fetch(Self.master, waiter: 1, now: 0))
        #expect(first == [FCUPRequest(url: Self.master, requestID: 1, playbackSessionID: "S")])
        var (reply, actions) = exchange.answer(Self.answer(first[0], "#EXTM3U\n"), now: 0.1)
        #expect(reply == .ok && Self.delivered(actions)[1] == .success("#EXTM3U\n"))
        #expect(Self.sent(exchange.fetch(Self.video, waiter: 2, now: 0.2)).map(\.requestID) == [2])
        #expect(exchange.fetch(Self.audio, waiter: 3, now: 0.2).isEmpty, "waits behind the one in flight")
        (reply, actions) = exchange.answer(FCUPResponse(url: Self.video, requestID: 2, data: Array(Self.whole.utf8)), now: 0.3)
        #expect(reply == .ok && Self.delivered(actions)[2] == .success(Self.whole))
        #expect(Self.sent(actions) == [FCUPRequest(url: Self.audio, requestID: 3, playbackSessionID: "S")])
    }

    /// A second fetch of the playlist in flight joins it; a whole playlist (and the master) is
    /// served again without asking; a live one is asked again after its target duration.
    @Test func fetchesJoinAndWholePlaylistsAreKept() throws {
        var exchange = FCUPExchange(playbackSessionID: "S")
        let request = Self.sent(exchange.fetch(Self.video, waiter: 1, now: 0))[0]
        #expect(exchange.fetch(Self.video, waiter: 2, now: 0).isEmpty)
        let (_, actions) = exchange.answer(Self.answer(request, Self.whole), now: 1)
        #expect(Self.delivered(actions).count == 2)
        #expect(Self.delivered(exchange.fetch(Self.video, waiter: 3, now: 600))[3] == .success(Self.whole))
        let live = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\ns/1\n"
        let liveRequest = Self.sent(exchange.fetch(Self.audio, waiter: 4, now: 10))[0]
        _ = exchange.answer(Self.answer(liveRequest, live), now: 10)
        #expect(Self.delivered(exchange.fetch(Self.audio, waiter: 5, now: 13))[5] == .success(live))
        #expect(Self.sent(exchange.fetch(Self.audio, waiter: 6, now: 14.5)).map(\.requestID) == [3])
    }

    /// A phone silent for 10 s: that playlist fails with 504 and the next is asked; its late
    /// answer gets 200 and changes nothing.
    @Test func aSilentPhoneFailsThePlaylistAndTheNextIsAsked() throws {
        var exchange = FCUPExchange(playbackSessionID: "S")
        let request = Self.sent(exchange.fetch(Self.video, waiter: 1, now: 0))[0]
        _ = exchange.fetch(Self.audio, waiter: 2, now: 1)
        #expect(exchange.deadline == 10 && exchange.tick(now: 9.9).isEmpty)
        let actions = exchange.tick(now: 10)
        guard case .failure(let failure) = Self.delivered(actions)[1] else { Issue.record("no failure delivered"); return }
        #expect(failure.status == 504 && failure.reason.contains("within 10 s"))
        #expect(Self.sent(actions).map(\.url) == [Self.audio])
        let (reply, late) = exchange.answer(Self.answer(request, Self.whole), now: 11)
        #expect(reply == .ok && late.isEmpty)
    }

    /// An id never sent is refused with its number; a failure status fails the playlist (502)
    /// but the phone's answer is still taken (200); StatusCode 0 is success.
    @Test func answersAreMatchedByIdOrRefused() throws {
        var exchange = FCUPExchange(playbackSessionID: "S")
        let request = Self.sent(exchange.fetch(Self.video, waiter: 1, now: 0))[0]
        let (unknown, nothing) = exchange.answer(FCUPResponse(url: Self.video, requestID: 7, data: []), now: 1)
        #expect(unknown == .refused(status: 400, reason: "unknown FCUP_Response_RequestID 7: no such playlist request is waiting"))
        #expect(nothing.isEmpty)
        let (reply, actions) = exchange.answer(Self.answer(request, "", status: 404), now: 1)
        guard case .failure(let failure) = Self.delivered(actions)[1] else { Issue.record("no failure delivered"); return }
        #expect(reply == .ok && failure.status == 502 && failure.reason.contains("status 404"))
        // Without a request id, the URL in flight is the match.
        let next = Self.sent(exchange.fetch(Self.audio, waiter: 2, now: 2))[0]
        let (byURL, delivered) = exchange.answer(FCUPResponse(url: next.url, requestID: nil, statusCode: nil, data: Array("#EXTM3U\n".utf8)), now: 2)
        #expect(byURL == .ok && Self.delivered(delivered)[2] == .success("#EXTM3U\n"))
    }

    /// The phone changes quality mid-request (`playlistRemove` while a playlist is asked, which
    /// crashes UxPlay): every waiting fetch fails, later fetches too, and the late answer gets 200.
    @Test func aVideoEndedMidRequestFailsItsFetchesAndDropsLateAnswers() throws {
        var exchange = FCUPExchange(playbackSessionID: "S")
        let request = Self.sent(exchange.fetch(Self.video, waiter: 1, now: 0))[0]
        _ = exchange.fetch(Self.audio, waiter: 2, now: 0)
        let actions = exchange.cancel(reason: "the item was removed")
        #expect(Self.delivered(actions).count == 2 && Self.sent(actions).isEmpty)
        #expect(Self.delivered(exchange.fetch(Self.master, waiter: 3, now: 1))[3] == .failure(.init(status: 503, reason: "the item was removed")))
        #expect(exchange.answer(Self.answer(request, Self.whole), now: 1).0 == .ok)
        #expect(exchange.answer(FCUPResponse(url: Self.audio, requestID: 99, data: []), now: 1).0 == .ok)
    }

    /// Bounds: at most 16 playlists wait; playlists past the cache budget are delivered, not kept;
    /// bytes that are not UTF-8 fail the playlist.
    @Test func boundsHold() throws {
        var exchange = FCUPExchange(playbackSessionID: "S", cacheBudget: 100, maximumWaiting: 2)
        let first = Self.sent(exchange.fetch("mlhls://localhost/0.m3u8", waiter: 0, now: 0))[0]
        _ = exchange.fetch("mlhls://localhost/1.m3u8", waiter: 1, now: 0)
        _ = exchange.fetch("mlhls://localhost/2.m3u8", waiter: 2, now: 0)
        guard case .failure(let full) = Self.delivered(exchange.fetch("mlhls://localhost/3.m3u8", waiter: 3, now: 0))[3] else {
            Issue.record("a third waiting playlist was taken"); return
        }
        #expect(full.status == 503)
        let big = "#EXTM3U\n" + String(repeating: "#", count: 200)
        #expect(Self.delivered(exchange.answer(Self.answer(first, big), now: 0).1)[0] == .success(big))
        #expect(Self.sent(exchange.fetch("mlhls://localhost/0.m3u8", waiter: 4, now: 0)).isEmpty, "waits again: it was not kept")
        var other = FCUPExchange(playbackSessionID: "S")
        let request = Self.sent(other.fetch(Self.master, waiter: 1, now: 0))[0]
        let (_, actions) = other.answer(FCUPResponse(url: request.url, requestID: 1, data: [0xFF, 0xFE]), now: 0)
        guard case .failure(let failure) = Self.delivered(actions)[1] else { Issue.record("not UTF-8 was delivered"); return }
        #expect(failure.reason.contains("not UTF-8"))
    }
}
