import AirPlayMedia
import AirPlayWire

/// The video session protocol of `Protocol/video.md` as a value: requests and player reports
/// in, `Action`s out. It decides takeover, stop, which session a request addresses, trick-play
/// reloads and which state events a sender gets (each state once); `VideoSessions` carries the
/// actions out, building, loading and stopping players off the event loop.
///
/// Players are named by `PlayerID`, never held: a reload (trick play, another rendition)
/// replaces the session's player, and reports from a player that is no longer the session's
/// are ignored.
struct VideoSessionStateMachine: Sendable {
    /// One player the machine asked for.
    typealias PlayerID = Int

    /// The session playing now.
    struct Session: Hashable, Sendable {
        /// `X-Apple-Session-ID` of the `/play` (or `anonymous`).
        var id: String
        /// What the sender asked to play.
        var url: String
        /// The URL the player opened on the HLS gateway, when the media is a playlist.
        var gatewayURL: String?
        /// The player playing it.
        var player: PlayerID
        /// The URL that player opened (the gateway's, or its I-frame playlist in trick play).
        var playerURL: String
        /// How many more times a new player takes over when the player process dies under this
        /// session: once, so a crash in the media engine costs a rebuffer, and a second one,
        /// likely the media itself, ends the session.
        var restartsLeft = 1
        /// The player's state as it last reported it.
        var playerState: MediaState = .loading
        /// The last state event sent to the sender.
        var lastEvent: String?
        /// True while the player plays the I-frame playlist (fast rates).
        var trick = false
        /// The rate the sender asked for last (a rate of 0 pauses: the player's state says so).
        var rate = 1.0
        /// The item's `uuid`, when the sender named it (`playlistRemove` names it back).
        var itemID: String?
        /// True when the sender handed the video over (`mlhls://`): its playlists come over FCUP.
        var handedOver: Bool { url.lowercased().hasPrefix("mlhls:") }
    }

    /// Something on a player.
    enum PlayerCommand: Hashable, Sendable {
        /// `/scrub?position=`.
        case seek(Double)
        /// `/rate?value=`: 0 pauses, 1 plays, others set the rate.
        case rate(Double)
    }

    /// What `VideoSessions` does, in order.
    enum Action: Hashable, Sendable {
        /// Builds a player and loads `url` on it; the `/play` reply says how that went.
        case startPlayer(PlayerID, url: String, start: StartPosition, paused: Bool, volume: Double, trick: Bool)
        /// Builds a player for the same session and loads `url` where `old` is, at `rate` (nil:
        /// as `old` plays), then stops `old`: the sender sees a short rebuffer, not a stop.
        case replacePlayer(old: PlayerID, new: PlayerID, url: String, rate: Double?, volume: Double, trick: Bool)
        /// The player process died under `failed`: a new player loads `url` at `position`,
        /// paused or at `rate`, and the sender sees a rebuffer.
        case restartPlayer(failed: PlayerID, new: PlayerID, url: String, position: Double, rate: Double, paused: Bool,
                           volume: Double, trick: Bool)
        /// Carries out a request on a player; its reply says how that went.
        case command(PlayerID, PlayerCommand)
        /// Sets a player's volume.
        case setVolume(PlayerID, Double)
        /// Stops and releases a player.
        case stopPlayer(PlayerID)
        /// Ends the HLS gateway's session for a playlist URL.
        case closeGateway(String)
        /// Sends a state event on the session's `/reverse` channel.
        case sendEvent(sessionID: String, state: String)
        /// The handed-over video of a session ended: its playlist requests to the phone end too.
        case endHandOver(sessionID: String)
        /// The session's item ended and the next one in its queue plays now (`playlistInsert`).
        case playNext(sessionID: String, PlayRequest)
    }

    /// A request refused, with its status and reason.
    struct Refusal: Error, Hashable, Sendable {
        /// The HTTP status.
        var status: Int
        /// Why, for the sender and the log.
        var reason: String
    }

    /// Rates from which HLS plays its I-frame playlist (trick play).
    static let trickRate = 4.0

    private let takeover: VideoTakeover
    private var nextPlayer: PlayerID = 1
    /// The session playing now, if any.
    private(set) var current: Session?
    /// The volume every new player gets (`/volume`), 0...1.
    private(set) var volume = 1.0
    /// Items the sender queued after the current one (`playlistInsert`), and whose they are.
    var queue: [PlayRequest] = []
    var queueOwner: String?
    /// What happens when an item ends (`actionAtItemEnd`): the next queued item plays, unless
    /// the sender asked to pause or do nothing there.
    var itemEnd: ItemEnd = .advance

    /// A machine refusing or allowing takeovers by another sender.
    init(takeover: VideoTakeover) { self.takeover = takeover }

    private mutating func newPlayer() -> PlayerID {
        defer { nextPlayer += 1 }
        return nextPlayer
    }

    // MARK: Requests

    /// `/play`: the new session replaces the current one (which is told `stopped` when it is
    /// another sender's), unless takeovers are refused while another sender's video plays.
    /// `gatewayURL` is where the player reads an HLS playlist through the gateway.
    mutating func play(sessionID: String, url: String, gatewayURL: String?, start: StartPosition, paused: Bool,
                       itemID: String? = nil) -> Result<[Action], Refusal> {
        if takeover == .refuse, let active = current, active.id != sessionID,
           [.loading, .playing, .paused].contains(active.playerState) {
            return .failure(Refusal(status: 409, reason: "another sender's video is playing; this receiver refuses takeovers"))
        }
        var actions = current.map { end($0, tellSender: $0.id != sessionID) } ?? []
        if queueOwner != sessionID { (queue, queueOwner) = ([], nil) }
        let player = newPlayer()
        current = Session(id: sessionID, url: url, gatewayURL: gatewayURL, player: player, playerURL: gatewayURL ?? url,
                          itemID: itemID)
        actions.append(.startPlayer(player, url: gatewayURL ?? url, start: start, paused: paused, volume: volume, trick: false))
        return .success(actions)
    }

    /// `/stop`: ends the session it names (or the current one). Stopping when nothing plays is
    /// already done; naming another session is a conflict.
    mutating func stop(sessionID requested: String?) -> Result<[Action], Refusal> {
        guard let active = current else { return .success([]) }
        if let requested, requested != active.id {
            return .failure(Refusal(status: 409, reason: "session \(requested) is not the current video session"))
        }
        current = nil
        (queue, queueOwner) = ([], nil)
        return .success(end(active, tellSender: true))
    }

    /// `/action` `playlistRemove`: the item leaves the sender's queue. The current item's
    /// session ends, untold (the sender removed it itself, and usually sends the next `/play`
    /// at once); any other uuid changes nothing.
    mutating func removeItem(_ itemID: String, sessionID: String) -> [Action] {
        if queueOwner == sessionID { queue.removeAll { $0.itemID == itemID } }
        guard let active = current, active.id == sessionID, active.itemID == itemID else { return [] }
        current = nil
        return end(active, tellSender: false)
    }

    /// Shutdown: ends whatever plays.
    mutating func stopAll() -> [Action] {
        guard let active = current else { return [] }
        current = nil
        return end(active, tellSender: true)
    }

    /// `/scrub` (POST): a seek on the session's player.
    func scrub(to position: Double, sessionID: String?) -> Result<[Action], Refusal> {
        session(addressedBy: sessionID).map { [.command($0.player, .seek(position))] }
    }

    /// `/rate`: fast rates on HLS with an I-frame playlist (`trickURL`) reload onto that
    /// playlist; back under the trick rate, onto the variants again; otherwise the player's rate.
    mutating func rate(_ rate: Double, sessionID: String?, trickURL: String?) -> Result<[Action], Refusal> {
        switch session(addressedBy: sessionID) {
        case .failure(let refusal):
            return .failure(refusal)
        case .success(var active):
            if rate != 0 {
                active.rate = rate
                current = active
            }
            if let gatewayURL = active.gatewayURL {
                if abs(rate) >= Self.trickRate, !active.trick, let trickURL {
                    return .success([replacePlayer(&active, url: trickURL, rate: rate, trick: true)])
                }
                if abs(rate) < Self.trickRate, rate != 0, active.trick {
                    return .success([replacePlayer(&active, url: gatewayURL, rate: rate, trick: false)])
                }
            }
            return .success([.command(active.player, .rate(rate))])
        }
    }

    /// `/volume`: kept for the players to come and applied to the current one.
    mutating func setVolume(_ value: Double) -> [Action] {
        volume = value
        return current.map { [.setVolume($0.player, value)] } ?? []
    }

    /// Another rendition was selected: the session's playlist plays again from where it is.
    mutating func renditionsChanged() -> [Action] {
        guard var active = current, let gatewayURL = active.gatewayURL else { return [] }
        return [replacePlayer(&active, url: gatewayURL, rate: nil, trick: false)]
    }

    /// The session a request addresses: the current one, if the request names no other.
    func session(addressedBy requested: String?) -> Result<Session, Refusal> {
        guard let active = current else { return .failure(Refusal(status: 404, reason: "no video is playing")) }
        if let requested, requested != active.id {
            return .failure(Refusal(status: 409, reason: "session \(requested) is not the current video session"))
        }
        return .success(active)
    }

    // MARK: Player reports

    /// A player could not be built or load its URL: the session it was made for ends. A
    /// `/play` that fails says so in its reply; a reload that fails (`tellSender`) is told as
    /// `stopped`.
    mutating func playerFailedToStart(_ player: PlayerID, tellSender: Bool) -> [Action] {
        guard let active = current, active.player == player else { return [.stopPlayer(player)] }
        current = nil
        return end(active, tellSender: tellSender)
    }

    /// The player process died under a player (a crash in the media engine, a kill), while it
    /// played or while it loaded (`starting`; a reload the box began itself). The first time
    /// in a session a new player plays on from `position`, at the rate the sender asked for
    /// (paused if the player was); after that the session ends as for any failure.
    mutating func playerProcessEnded(_ player: PlayerID, at position: Double, starting: Bool) -> [Action] {
        guard var active = current, active.player == player else { return [] }
        guard active.restartsLeft > 0 else {
            return starting ? playerFailedToStart(player, tellSender: true) : playerChanged(player, to: .failed)
        }
        active.restartsLeft -= 1
        active.player = newPlayer()
        current = active
        return [.restartPlayer(failed: player, new: active.player, url: active.playerURL, position: max(0, position), rate: active.rate,
                               paused: active.playerState == .paused, volume: volume, trick: active.trick)]
    }

    /// A player's state changed: the sender hears of it once per state (reports from players
    /// that are no longer the session's are ignored).
    mutating func playerChanged(_ player: PlayerID, to state: MediaState) -> [Action] {
        guard var active = current, active.player == player else { return [] }
        active.playerState = state
        if state == .ended, itemEnd == .advance, queueOwner == active.id, !queue.isEmpty {
            // The session goes on with its next item: no `stopped` for the one that ended.
            current = active
            return [.playNext(sessionID: active.id, queue.removeFirst())]
        }
        defer { current = active }
        guard let event = Self.event(for: state), active.lastEvent != event else { return [] }
        active.lastEvent = event
        return [.sendEvent(sessionID: active.id, state: event)]
    }

    /// The event name senders know for a player state (`idle` sends nothing).
    static func event(for state: MediaState) -> String? {
        switch state {
        case .idle: nil
        case .loading: "loading"
        case .playing: "playing"
        case .paused: "paused"
        case .ended, .failed, .stopped: "stopped"
        }
    }

    // MARK: Helpers

    /// Stops a session's player and gateway session; the sender is told `stopped` unless it
    /// already was (or it replaces its own video, and expects nothing for the old item).
    private func end(_ session: Session, tellSender: Bool) -> [Action] {
        var actions: [Action] = [.stopPlayer(session.player)]
        if session.handedOver { actions.append(.endHandOver(sessionID: session.id)) }
        if let url = session.gatewayURL { actions.append(.closeGateway(url)) }
        if tellSender, session.lastEvent != "stopped" { actions.append(.sendEvent(sessionID: session.id, state: "stopped")) }
        return actions
    }

    private mutating func replacePlayer(_ active: inout Session, url: String, rate: Double?, trick: Bool) -> Action {
        let old = active.player
        active.player = newPlayer()
        active.playerURL = url
        active.trick = trick
        current = active
        return .replacePlayer(old: old, new: active.player, url: url, rate: rate, volume: volume, trick: trick)
    }
}
