import AirPlayWire

/// One handed-over video's FCUP exchange with its phone, as a value: the HLS gateway's playlist
/// fetches, the phone's `/action` answers and the time in; requests to send, playlists (or
/// failures) to deliver, and the `/action`'s reply out. `FCUPBroker` carries the actions out.
///
/// - One request is in flight at a time (the only order known to work with phones: UxPlay sends
///   the next from inside the previous answer's handler); the others wait in order, at most
///   `maximumWaiting` playlists. Ids count from 1 (the master).
/// - Fetches of a playlist already in flight or waiting join it. A playlist with `EXT-X-ENDLIST`
///   (and the master) is kept and served again without asking; a live one is asked again once
///   its target duration has passed. What is kept stays under `cacheBudget` bytes.
/// - An answer is matched by its `FCUP_Response_RequestID`, or by its URL when it has none. A
///   late answer to a request given up on (timed out, cancelled: the phone changed quality
///   mid-request, UxPlay #545) is answered 200 and dropped; an id never sent is a 400.
/// - A phone that does not answer within `timeout` fails that playlist (504), and the next one
///   is asked.
struct FCUPExchange: Sendable {
    /// A waiting fetch, named by the broker (which holds its continuation).
    typealias Waiter = Int

    /// Why a playlist could not be had (502 the phone failed, 503 too many waiting or cancelled,
    /// 504 no answer): what the gateway answers its player with.
    typealias Failure = HandedOverPlaylistError

    /// What the broker does, in order.
    enum Action: Hashable, Sendable {
        /// Sends the request on the video's event channel.
        case send(FCUPRequest)
        /// Resumes a fetch with the playlist's text or why there is none.
        case deliver(Waiter, Result<String, Failure>)
    }

    /// What the `/action` that carried an answer gets.
    enum Reply: Hashable, Sendable {
        /// 200, no body.
        case ok
        /// A refusal with its status and reason.
        case refused(status: Int, reason: String)
    }

    private struct Pending: Sendable {
        var url: String
        var waiters: [Waiter]
    }

    private struct Kept: Sendable {
        var text: String
        /// When a live playlist is asked again (nil: never, it is whole).
        var staleAt: Double?
    }

    /// The `/play`'s `X-Apple-Session-ID`, which every request carries.
    let playbackSessionID: String
    /// Seconds the phone has to answer a request.
    let timeout: Double
    /// Bytes of playlists kept.
    let cacheBudget: Int
    /// Playlists that may wait behind the one in flight.
    let maximumWaiting: Int

    private var nextID = 1
    private var inFlight: (id: Int, pending: Pending, deadline: Double)?
    private var waiting: [Pending] = []
    private var kept: [String: Kept] = [:]
    private var keptBytes = 0
    /// Requests given up on, whose late answers are dropped (the newest 64).
    private var givenUp: [(id: Int, url: String)] = []
    private var cancelledReason: String?

    /// An exchange for the video played under `playbackSessionID`.
    init(playbackSessionID: String, timeout: Double = 10, cacheBudget: Int = 32 << 20, maximumWaiting: Int = 16) {
        self.playbackSessionID = playbackSessionID
        self.timeout = timeout
        self.cacheBudget = cacheBudget
        self.maximumWaiting = maximumWaiting
    }

    /// When `tick` must next be called (the request in flight's deadline), if anything waits.
    var deadline: Double? { inFlight?.deadline }

    /// The gateway wants the playlist at `url` for `waiter`.
    mutating func fetch(_ url: String, waiter: Waiter, now: Double) -> [Action] {
        if let reason = cancelledReason { return [.deliver(waiter, .failure(Failure(status: 503, reason: reason)))] }
        if let copy = kept[url], copy.staleAt.map({ now < $0 }) ?? true { return [.deliver(waiter, .success(copy.text))] }
        if inFlight?.pending.url == url {
            inFlight!.pending.waiters.append(waiter)
            return []
        }
        if let index = waiting.firstIndex(where: { $0.url == url }) {
            waiting[index].waiters.append(waiter)
            return []
        }
        guard waiting.count < maximumWaiting else {
            return [.deliver(waiter, .failure(Failure(status: 503, reason: "more than \(maximumWaiting) playlists wait for the phone")))]
        }
        waiting.append(Pending(url: url, waiters: [waiter]))
        return sendNext(now: now)
    }

    /// The phone answered (`/action` `unhandledURLResponse`).
    mutating func answer(_ response: FCUPResponse, now: Double) -> (Reply, [Action]) {
        guard let flight = inFlight, response.requestID.map({ $0 == flight.id }) ?? (response.url == flight.pending.url) else {
            let late = givenUp.contains { entry in response.requestID.map { $0 == entry.id } ?? (response.url == entry.url) }
            if late || cancelledReason != nil { return (.ok, []) }
            let named = response.requestID.map { "FCUP_Response_RequestID \($0)" } ?? "FCUP_Response_URL \(response.url.prefix(200))"
            return (.refused(status: 400, reason: "unknown \(named): no such playlist request is waiting"), [])
        }
        inFlight = nil
        let result: Result<String, Failure>
        if !response.succeeded {
            result = .failure(Failure(status: 502, reason: "the phone could not get \(flight.pending.url.prefix(200)): status \(response.statusCode ?? 0)"))
        } else if let text = String(validating: response.data, as: UTF8.self) {
            result = .success(text)
            keep(text, for: flight.pending.url, now: now)
        } else {
            result = .failure(Failure(status: 502, reason: "the phone's playlist \(flight.pending.url.prefix(200)) is not UTF-8 text"))
        }
        return (.ok, flight.pending.waiters.map { .deliver($0, result) } + sendNext(now: now))
    }

    /// The time passed: a request past its deadline fails, and the next is asked.
    mutating func tick(now: Double) -> [Action] {
        guard let flight = inFlight, now >= flight.deadline else { return [] }
        inFlight = nil
        giveUp(flight.id, flight.pending.url)
        let failure = Failure(status: 504, reason: "the phone did not answer the playlist request within \(Int(timeout)) s")
        return flight.pending.waiters.map { .deliver($0, .failure(failure)) } + sendNext(now: now)
    }

    /// The video ended (stop, a new `/play`, `playlistRemove`, the channel closed): every
    /// waiting fetch fails with `reason`, later ones too, and late answers are dropped.
    mutating func cancel(reason: String) -> [Action] {
        cancelledReason = reason
        var pending = waiting
        if let flight = inFlight {
            giveUp(flight.id, flight.pending.url)
            pending.insert(flight.pending, at: 0)
        }
        inFlight = nil
        waiting = []
        return pending.flatMap { $0.waiters.map { Action.deliver($0, .failure(Failure(status: 503, reason: reason))) } }
    }

    private mutating func sendNext(now: Double) -> [Action] {
        guard inFlight == nil, !waiting.isEmpty else { return [] }
        let next = waiting.removeFirst()
        let id = nextID
        nextID += 1
        inFlight = (id, next, now + timeout)
        return [.send(FCUPRequest(url: next.url, requestID: id, playbackSessionID: playbackSessionID))]
    }

    private mutating func giveUp(_ id: Int, _ url: String) {
        givenUp.append((id, url))
        if givenUp.count > 64 { givenUp.removeFirst() }
    }

    /// Keeps a playlist: a whole one for good, a live one for its target duration.
    private mutating func keep(_ text: String, for url: String, now: Double) {
        let staleAt = text.contains("#EXT-X-ENDLIST") || !text.contains("#EXTINF") ? nil : now + Self.targetDuration(of: text)
        keptBytes -= kept[url]?.text.utf8.count ?? 0
        kept[url] = nil
        guard keptBytes + text.utf8.count <= cacheBudget else { return }
        kept[url] = Kept(text: text, staleAt: staleAt)
        keptBytes += text.utf8.count
    }

    /// A live playlist's `EXT-X-TARGETDURATION` (1 to 30 s; 2 s when it says none).
    static func targetDuration(of text: String) -> Double {
        let tag = "#EXT-X-TARGETDURATION:"
        guard let line = text.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix(tag) }) else { return 2 }
        let digits = line.dropFirst(tag.count).prefix { $0.isASCII && $0.isNumber }
        return Double(min(30, max(1, Int(digits) ?? 2)))
    }
}
