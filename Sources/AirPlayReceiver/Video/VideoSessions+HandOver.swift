import AirPlayPlist
import AirPlayWire
import NIOCore

/// Videos an iPhone hands over (its YouTube app: `mlhls://localhost/master.m3u8`), whose
/// playlists only the phone can reach: the box asks for each over the `/reverse` channel (FCUP,
/// `FCUPBroker`) and the phone answers with `POST /action`, which also carries its queue's
/// changes (`playlistInsert`, `playlistRemove`). `/play` never waits for FCUP: it answers once
/// the player is loading, and the player's first read of the master starts the exchange.
enum HandOver {
    /// True for a URL only the sender can fetch (`mlhls://`).
    static func isHandedOver(_ url: String) -> Bool { url.prefix(8).lowercased() == "mlhls://" }
}

extension VideoSessions {
    /// A `/play` of a handed-over video: taken when the sender has an event channel to be asked
    /// on; nothing is fetched from the URL itself, so there is nothing to screen (its segments
    /// are screened by the gateway).
    func handOver(_ play: PlayRequest, request: AirPlayRequest) -> VideoAnswer {
        let sessionID = play.sessionID.flatMap { $0.isEmpty ? nil : $0 } ?? "anonymous"
        guard fcup != nil, gateway != nil else {
            return .now(Self.text(400, "this receiver cannot ask a sender for its playlists (mlhls://)"))
        }
        guard play.url.utf8.count <= 8192, play.url.lowercased().hasPrefix("mlhls://localhost/"), PlaylistURL.isPlaylist(play.url) else {
            return .now(Self.text(400, "a handed-over URL must be an mlhls://localhost/ playlist, not \(play.url.prefix(200))"))
        }
        guard events.has(sessionID: sessionID) else {
            return .now(Self.text(400, "mlhls:// needs the sender's /reverse event channel (POST /reverse first) to ask it for the playlists"))
        }
        // A new video of the session starts a new exchange (request ids from 1).
        fcup?.end(sessionID: sessionID, reason: "a new video replaced it")
        return begin(play, url: play.url, request: request)
    }

    /// `POST /action`: the phone's answer to a playlist request, or a change of its queue.
    func action(_ request: AirPlayRequest) -> VideoAnswer {
        let sessionID = request.headers["X-Apple-Session-ID"] ?? "anonymous"
        let action: VideoAction
        do {
            action = try VideoAction(plist: try PropertyList(decoding: Array(request.body.readableBytesView)))
        } catch let error as FCUPError {
            return .now(Self.text(400, error.description))
        } catch {
            return .now(Self.text(400, "the /action body is not a property list: \(error)"))
        }
        switch action {
        case .unhandledURLResponse(let response):
            guard let fcup else { return .now(Self.text(400, "no playlist request is waiting")) }
            let (status, reason) = fcup.answer(sessionID: sessionID, response: response)
            logger.info("fcup answer", metadata: ["session": "\(sessionID)", "id": "\(response.requestID.map(String.init) ?? "-")",
                                                  "bytes": "\(response.data.count)", "status": "\(status)"])
            return .now(reason.map { Self.text(status, $0) } ?? AirPlayResponse(status: status))
        case .playlistRemove(let uuid):
            let actions = machine.withLockedValue { $0.removeItem(uuid, sessionID: sessionID) }
            logger.info("video item removed", metadata: ["session": "\(sessionID)", "uuid": "\(uuid.prefix(64))",
                                                         "current": "\(!actions.isEmpty)"])
            return later(actions)
        case .playlistInsert(let item):
            return .now(insert(item, sessionID: sessionID))
        case .other(let type):
            logger.info("video action ignored", metadata: ["session": "\(sessionID)", "type": "\(type)"])
            return .now(AirPlayResponse(status: 200))
        }
    }

    /// `playlistInsert`: the item (a `/play` body's keys) is queued after the current one; its URL
    /// must be one `/play` would take (screened when it is played).
    func insert(_ item: [String: PropertyList], sessionID: String) -> AirPlayResponse {
        var request = AirPlayRequest(method: "POST", target: "/play", version: .http11,
                                     headers: ["X-Apple-Session-ID": sessionID, "Content-Type": "application/x-apple-binary-plist"])
        request.body = ByteBuffer(bytes: PropertyList.dictionary(item).encoded(as: .binary))
        let play: PlayRequest
        do {
            play = try PlayRequest(request: request)
            if !HandOver.isHandedOver(play.url) { try MediaURLPolicy(refusingLocalTargetsWith: nil).check(play.url) }
        } catch {
            return Self.text(400, "playlistInsert: \(error.reason)")
        }
        switch machine.withLockedValue({ $0.insertItem(play, sessionID: sessionID) }) {
        case .failure(let refusal): return Self.text(refusal.status, refusal.reason)
        case .success:
            logger.info("video item queued", metadata: ["session": "\(sessionID)", "uuid": "\(play.itemID?.prefix(64) ?? "-")",
                                                        "url": "\(play.url.prefix(300))"])
            return AirPlayResponse(status: 200)
        }
    }

    /// The next queued item plays (the current one ended): as a `/play` of the session would,
    /// its URL screened here, off the event loops. On the players' queue.
    func playNext(_ play: PlayRequest, sessionID: String) {
        var url = play.url
        if !HandOver.isHandedOver(url) {
            do {
                try policy.check(url)
                url = try policy.destination(of: url, headers: play.httpHeaders)
            } catch {
                logger.notice("queued video refused", metadata: ["session": "\(sessionID)", "reason": "\(error.reason)"])
                sendEvent(sessionID: sessionID, state: "stopped")
                return
            }
        }
        switch start(play, url: url, sessionID: sessionID, paused: false) {
        case .failure(let refusal):
            logger.notice("queued video refused", metadata: ["session": "\(sessionID)", "reason": "\(refusal.reason)"])
        case .success(let actions):
            logger.info("video next item", metadata: ["session": "\(sessionID)", "url": "\(play.url.prefix(300))"])
            _ = carryOut(actions)
        }
    }

    /// `POST /fp-setup2`: FairPlay for video (protected films) is not spoken here. 421, as
    /// UxPlay answers, with the reason; the body is never read.
    func fairPlayVideoSetup(_ request: AirPlayRequest) -> AirPlayResponse {
        logger.notice("FairPlay video refused", metadata: ["session": "\(request.headers["X-Apple-Session-ID"] ?? "-")"])
        return Self.text(421, "FairPlay-protected video (fp-setup2) is not supported by this receiver")
    }
}
