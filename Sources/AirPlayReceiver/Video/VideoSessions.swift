import AirPlayMedia
import AirPlayNowPlaying
import AirPlayPlist
import AirPlayWire
import FoundationEssentials
import Dispatch
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import LinuxIO

/// Policy for a `/play` from a sender while another sender's video plays.
public enum VideoTakeover: String, Hashable, Sendable {
    /// The new sender replaces the current one, which gets a `stopped` event (Apple TV behaviour).
    case replace
    /// The new sender is refused with 409 while the current video plays.
    case refuse
}

/// An answer to a video request: now, or once the players' queue has carried its actions out.
public enum VideoAnswer: Sendable {
    /// Answered on the spot.
    case now(AirPlayResponse)
    /// Answered when the future completes (a player was built, loaded, stopped or asked to seek).
    case later(@Sendable (any EventLoop) -> EventLoopFuture<AirPlayResponse>)
}

/// The video half of the control port: one video session at a time, played by a `MediaPlayer`.
///
/// Endpoints: `/play`, `/scrub`, `/rate`, `/stop`, `/volume`, `/playback-info`,
/// `/setProperty`, `/getProperty`; state changes go to the session's `/reverse` channel.
/// `VideoSessionStateMachine` decides; this class carries its actions out. Building, loading,
/// seeking and stopping players can wait on GStreamer, so they run on one serial queue of their
/// own, in request order, and the replies that depend on them are deferred: no event loop waits.
public final class VideoSessions: Sendable {
    /// Makes a fresh player for each `/play`.
    public typealias PlayerFactory = @Sendable () throws(MediaError) -> any MediaPlayer
    typealias Machine = VideoSessionStateMachine

    private let makePlayer: PlayerFactory
    /// Makes the player for trick play (fast rates on an HLS I-frame playlist).
    /// Players on classic playbin: trick play, and progressive media (see `startPlayer`).
    private let makeClassicPlayer: PlayerFactory?
    let policy: MediaURLPolicy
    let events: EventChannels
    /// Asks senders for the playlists of videos they handed over (`mlhls://`, FCUP).
    let fcup: FCUPBroker?
    let logger: Logger
    let machine: NIOLockedValueBox<Machine>
    /// The players the machine asked for, by id.
    let players = NIOLockedValueBox<[Machine.PlayerID: any MediaPlayer]>([:])
    /// Where players are built, loaded, driven and stopped: off the event loops, in order.
    let playerQueue = DispatchQueue(label: "airplayd.video-players")
    /// Fronts HLS playlists for the player (variant choice, keys), when there is one.
    public let gateway: (any HLSProxy)?
    /// The box's now-playing state, which video sessions appear in too.
    let nowPlaying: NowPlaying?
    /// Recent `/playback-info` answers, for senders polling together.
    private let playbackInfoCache = PlaybackInfoCache()
    private let clock = SystemClock()

    /// Sessions with a player factory and policies.
    public init(makePlayer: @escaping PlayerFactory, policy: MediaURLPolicy, takeover: VideoTakeover,
                events: EventChannels, gateway: (any HLSProxy)? = nil, makeClassicPlayer: PlayerFactory? = nil,
                nowPlaying: NowPlaying? = nil, fcup: FCUPBroker? = nil, logger: Logger) {
        self.gateway = gateway
        self.fcup = fcup
        self.nowPlaying = nowPlaying
        self.makeClassicPlayer = makeClassicPlayer
        self.makePlayer = makePlayer
        self.policy = policy
        machine = NIOLockedValueBox(Machine(takeover: takeover))
        self.events = events
        self.logger = logger
    }

    /// The paths this type serves, with their methods.
    public static let routes: [String: [String]] = [
        "/play": ["POST"], "/scrub": ["GET", "POST"], "/rate": ["POST"], "/stop": ["POST"],
        "/volume": ["POST"], "/playback-info": ["GET"], "/setProperty": ["PUT", "POST"], "/getProperty": ["GET", "POST"],
        "/action": ["POST"], "/fp-setup2": ["POST"],
    ]

    /// Answers one video request.
    public func answer(_ request: AirPlayRequest) -> VideoAnswer {
        if request.path != "/playback-info" { playbackInfoCache.clear() }
        switch request.path {
        case "/play": return play(request)
        case "/playback-info": return .now(playbackInfo(request))
        case "/scrub": return request.method == "GET" ? .now(scrubStatus(request)) : scrub(request)
        case "/rate": return rate(request)
        case "/stop": return stop(request)
        case "/volume": return .now(setVolume(request))
        case "/setProperty": return .now(setProperty(request))
        case "/getProperty": return .now(getProperty(request))
        case "/action": return action(request)
        case "/fp-setup2": return .now(fairPlayVideoSetup(request))
        default: return .now(Self.text(404, "no resource at \(request.path)"))
        }
    }

    /// Stops the current session (shutdown), waiting until its player has stopped.
    public func stopAll() {
        let actions = machine.withLockedValue { $0.stopAll() }
        playerQueue.sync { _ = carryOut(actions) }
    }

    // MARK: Carrying out actions

    /// Runs `actions` on the players' queue and answers once they ran: `success`, or the first failure.
    func later(_ actions: [Machine.Action], success: AirPlayResponse = AirPlayResponse(status: 200)) -> VideoAnswer {
        .later { [self] eventLoop in
            let promise = eventLoop.makePromise(of: AirPlayResponse.self)
            playerQueue.async { promise.succeed(self.carryOut(actions) ?? success) }
            return promise.futureResult
        }
    }

    /// Carries out actions, on the players' queue; returns the response of the first that failed.
    func carryOut(_ actions: [Machine.Action]) -> AirPlayResponse? {
        var failure: AirPlayResponse?
        for action in actions {
            switch action {
            case .startPlayer(let id, let url, let start, let paused, let volume, let trick):
                if let refusal = startPlayer(id, url: url, start: start, paused: paused, volume: volume, trick: trick) {
                    failure = failure ?? refusal.response
                    _ = carryOut(machine.withLockedValue { $0.playerFailedToStart(id, tellSender: false) })
                }
            case .replacePlayer(let old, let new, let url, let rate, let volume, let trick):
                replacePlayer(old: old, new: new, url: url, rate: rate, volume: volume, trick: trick)
            case .restartPlayer(let failed, let new, let url, let position, let rate, let paused, let volume, let trick):
                restartPlayer(failed: failed, new: new, url: url, position: position, rate: rate, paused: paused, volume: volume, trick: trick)
            case .command(let id, let command):
                guard let player = players.withLockedValue({ $0[id] }) else {
                    failure = failure ?? Self.text(404, "no video is playing")
                    continue
                }
                do {
                    switch command {
                    case .seek(let position): try player.seek(to: position)
                    case .rate(0): player.pause()
                    case .rate(1): player.play()
                    case .rate(let rate): try player.setRate(rate)
                    }
                } catch {
                    failure = failure ?? Self.text(422, error.message)
                }
            case .setVolume(let id, let volume):
                players.withLockedValue { $0[id] }?.setVolume(volume)
            case .stopPlayer(let id):
                players.withLockedValue { $0.removeValue(forKey: id) }?.stop()
            case .closeGateway(let url):
                gateway?.close(url)
            case .endHandOver(let sessionID):
                fcup?.end(sessionID: sessionID, reason: "the video ended")
            case .playNext(let sessionID, let play):
                playNext(play, sessionID: sessionID)
            case .sendEvent(let sessionID, let state):
                sendEvent(sessionID: sessionID, state: state)
            }
        }
        // What the actions changed shows in the next `/playback-info`, not a copy from before.
        playbackInfoCache.clear()
        return failure
    }

    /// A player that could not be built or load its URL.
    private struct StartFailure: Error {
        /// What `/play` answers.
        var response: AirPlayResponse
        /// Why.
        var error: MediaError
    }

    /// Builds and loads a player; the failure `/play` answers with, if it fails.
    private func startPlayer(_ id: Machine.PlayerID, url: String, start: StartPosition, paused: Bool, volume: Double,
                             trick: Bool) -> StartFailure? {
        let player: any MediaPlayer
        do {
            // Only HLS needs playbin3 (hlsdemux2). Progressive media plays on classic playbin:
            // playbin3 1.22 crashed in its own teardown (SIGSEGV in gst_object_replace) in 4 of 8
            // runs of 200 rapid MP4 play/stop cycles (`tools/soak --kinds mp4`), playbin in none of 3.
            let classic = trick || !(url.contains("/hls/") || PlaylistURL.isPlaylist(url))
            player = try (classic ? makeClassicPlayer ?? makePlayer : makePlayer)()
        } catch {
            return StartFailure(response: Self.text(500, "cannot create a player: \(error.message)"), error: error)
        }
        player.setVolume(volume)
        players.withLockedValue { $0[id] = player }
        player.onStateChange { [weak self] status in self?.playerChanged(id, status: status) }
        do {
            try player.load(url: url, start: start, paused: paused)
        } catch {
            return StartFailure(response: Self.text(400, error.message), error: error)
        }
        return nil
    }

    /// Plays the same session again with a fresh player from the old one's position (trick
    /// play, another rendition): the sender sees no stop, only a short rebuffer.
    private func replacePlayer(old: Machine.PlayerID, new: Machine.PlayerID, url: String, rate: Double?, volume: Double, trick: Bool) {
        let previous = players.withLockedValue { $0.removeValue(forKey: old) }
        let status = previous?.status ?? .idle
        previous?.stop()
        let paused = rate == nil && status.state == .paused
        if let failure = startPlayer(new, url: url, start: .seconds(status.position), paused: paused, volume: volume, trick: trick) {
            logger.warning("video reload failed", metadata: ["url": "\(url.prefix(300))", "error": "\(failure.error)"])
            _ = carryOut(machine.withLockedValue { machine in
                failure.error.isPlayerProcessEnd
                    ? machine.playerProcessEnded(new, at: status.position, starting: true)
                    : machine.playerFailedToStart(new, tellSender: true)
            })
            return
        }
        if let rate { try? players.withLockedValue { $0[new] }?.setRate(rate) }
        logger.info(trick ? "video trick play" : "video reloaded", metadata: [
            "position": "\(status.position)", "rate": "\(rate ?? status.rate)"])
    }

    /// The player process died under `failed`: a new player plays on where it was.
    private func restartPlayer(failed: Machine.PlayerID, new: Machine.PlayerID, url: String, position: Double, rate: Double,
                               paused: Bool, volume: Double, trick: Bool) {
        players.withLockedValue { $0.removeValue(forKey: failed) }?.stop()
        if let failure = startPlayer(new, url: url, start: .seconds(position), paused: paused, volume: volume, trick: trick) {
            logger.warning("video restart failed", metadata: ["url": "\(url.prefix(300))", "error": "\(failure.error)"])
            _ = carryOut(machine.withLockedValue { machine in
                failure.error.isPlayerProcessEnd
                    ? machine.playerProcessEnded(new, at: position, starting: true)
                    : machine.playerFailedToStart(new, tellSender: true)
            })
            return
        }
        if !paused, rate != 1 { try? players.withLockedValue { $0[new] }?.setRate(rate) }
        logger.info("video restarted in a new player process", metadata: ["position": "\(position)", "rate": "\(paused ? 0 : rate)"])
    }

    // MARK: Endpoints

    private func play(_ request: AirPlayRequest) -> VideoAnswer {
        let play: PlayRequest
        do {
            play = try PlayRequest(request: request)
        } catch {
            return .now(Self.text(error.status, error.reason))
        }
        if HandOver.isHandedOver(play.url) { return handOver(play, request: request) }
        guard policy.refuseLocalTargets else {
            do {
                try policy.check(play.url)
            } catch {
                return .now(Self.text(error.status, error.reason))
            }
            return begin(play, url: play.url, request: request)
        }
        // Screening looks names up and follows redirects, which can take seconds: off the loop.
        return .later { [self] eventLoop in
            let promise = eventLoop.makePromise(of: AirPlayResponse.self)
            DispatchQueue.global().async { [self] in
                screenThenBegin(play, request: request, eventLoop: eventLoop, promise: promise)
            }
            return promise.futureResult
        }
    }

    /// Screens a `/play` URL under `video_refuse_local_urls` (name lookups, redirects), then
    /// starts it; blocking, so never on an event loop.
    private func screenThenBegin(_ play: PlayRequest, request: AirPlayRequest, eventLoop: any EventLoop,
                                 promise: EventLoopPromise<AirPlayResponse>) {
        let url: String
        do {
            try policy.check(play.url)
            url = try policy.destination(of: play.url, headers: play.httpHeaders)
        } catch {
            promise.succeed(Self.text(error.status, error.reason))
            return
        }
        if url != play.url { logger.info("video redirect followed", metadata: ["to": "\(url.prefix(300))"]) }
        switch begin(play, url: url, request: request) {
        case .now(let response): promise.succeed(response)
        case .later(let answer): promise.completeWith(answer(eventLoop))
        }
    }

    /// Starts playing `url` (the request's URL, or where its redirects lead) for a `/play`.
    func begin(_ play: PlayRequest, url: String, request: AirPlayRequest) -> VideoAnswer {
        let sessionID = play.sessionID.flatMap { $0.isEmpty ? nil : $0 } ?? "anonymous"
        switch start(play, url: url, sessionID: sessionID, paused: play.rate == 0) {
        case .failure(let refusal):
            return .now(Self.text(refusal.status, refusal.reason))
        case .success(let actions):
            logger.info("video play", metadata: ["session": "\(sessionID)", "url": "\(play.url.prefix(300))",
                                                 "app": "\(play.clientName ?? "-")"])
            announce(play, request: request)
            return later(actions)
        }
    }

    /// The machine's decision on playing `url` for a session: HLS playlists go through the
    /// gateway (it picks the variants and fetches the keys), closed again when refused.
    func start(_ play: PlayRequest, url: String, sessionID: String, paused: Bool) -> Result<[Machine.Action], Machine.Refusal> {
        let gatewayURL = gateway.flatMap { gateway in
            PlaylistURL.isPlaylist(url) ? gateway.open(origin: url, headers: play.httpHeaders, sessionID: sessionID) : nil
        }
        let decision = machine.withLockedValue {
            $0.play(sessionID: sessionID, url: url, gatewayURL: gatewayURL, start: play.start, paused: paused, itemID: play.itemID)
        }
        if case .failure = decision, let gatewayURL { gateway?.close(gatewayURL) }
        return decision
    }

    private func playbackInfo(_ request: AirPlayRequest) -> AirPlayResponse {
        let format = ControlRouter.negotiatePlistFormat(request)
        let now = clock.now()
        if let cached = playbackInfoCache.answer(format: format, now: now) { return cached }
        let generation = playbackInfoCache.generation()
        let response = renderPlaybackInfo(format: format)
        playbackInfoCache.store(response, format: format, now: now, generation: generation)
        return response
    }

    private func renderPlaybackInfo(format: PropertyListFormat) -> AirPlayResponse {
        guard let (session, player) = currentPlayer() else {
            return ControlRouter.plistResponse(Self.idleInfo(error: nil), format: format)
        }
        let status = player.status
        let hls = session.gatewayURL.flatMap { gateway?.figures($0) }
        switch status.state {
        case .loading, .playing, .paused:
            var info = Self.info(status, hls: hls)
            if let url = session.gatewayURL, let renditions = gateway?.renditions(url), !renditions.isEmpty,
               case .dictionary(var dictionary) = info {
                // Our extension: the alternate renditions, for senders that offer a choice.
                dictionary["hlsRenditions"] = .array(renditions.map { rendition in
                    var entry: [String: PropertyList] = ["type": .string(rendition.type), "group": .string(rendition.group),
                                                         "name": .string(rendition.name), "selected": .bool(rendition.selected)]
                    if let language = rendition.language { entry["language"] = .string(language) }
                    return .dictionary(entry)
                })
                info = .dictionary(dictionary)
            }
            return ControlRouter.plistResponse(info, format: format)
        default:
            // A playlist or key the gateway could not get explains a failure better than the player can.
            var error = status.error
            if status.state == .failed, let reason = hls?.error {
                error = MediaError(code: error?.code ?? -1, domain: "airplayd.hls", message: reason)
            }
            return ControlRouter.plistResponse(Self.idleInfo(error: error), format: format)
        }
    }

    private func scrubStatus(_ request: AirPlayRequest) -> AirPlayResponse {
        let status = currentPlayer()?.player.status ?? .idle
        let duration = status.duration.flatMap { $0.isFinite ? $0 : nil } ?? 0
        let answer = TextParameters([.init(name: "duration", value: TextFormatting.fixed(duration)),
                                     .init(name: "position", value: TextFormatting.fixed(status.position))])
        return AirPlayResponse(status: 200, headers: ["Content-Type": TextParameters.contentType], body: ByteBuffer(bytes: answer.encoded))
    }

    private func scrub(_ request: AirPlayRequest) -> VideoAnswer {
        guard let text = request.queryItems.first(where: { $0.name == "position" })?.value,
              let position = Double(text), position.isFinite, position >= 0 else {
            return .now(Self.text(400, "POST /scrub needs ?position=SECONDS (a number >= 0)"))
        }
        return decided(machine.withLockedValue { $0.scrub(to: position, sessionID: request.headers["X-Apple-Session-ID"]) })
    }

    private func rate(_ request: AirPlayRequest) -> VideoAnswer {
        guard let text = request.queryItems.first(where: { $0.name == "value" })?.value,
              let rate = Double(text), rate.isFinite else {
            return .now(Self.text(400, "POST /rate needs ?value=RATE (0 pauses, 1 plays)"))
        }
        let requested = request.headers["X-Apple-Session-ID"]
        // The gateway knows whether the playlist has an I-frame variant for trick play.
        let trickURL = abs(rate) >= Machine.trickRate
            ? machine.withLockedValue { $0.current?.gatewayURL }.flatMap { gateway?.trickURL($0) } : nil
        return decided(machine.withLockedValue { $0.rate(rate, sessionID: requested, trickURL: trickURL) })
    }

    private func stop(_ request: AirPlayRequest) -> VideoAnswer {
        let (id, decision) = machine.withLockedValue { machine in
            (machine.current?.id, machine.stop(sessionID: request.headers["X-Apple-Session-ID"]))
        }
        if case .success(let actions) = decision, !actions.isEmpty {
            logger.info("video stopped", metadata: ["session": "\(id ?? "-")"])
            nowPlaying?.post(.ended)
        }
        return decided(decision)
    }

    /// A refusal now, or the actions' outcome later.
    private func decided(_ decision: Result<[Machine.Action], Machine.Refusal>) -> VideoAnswer {
        switch decision {
        case .failure(let refusal): .now(Self.text(refusal.status, refusal.reason))
        case .success(let actions) where actions.isEmpty: .now(AirPlayResponse(status: 200))
        case .success(let actions): later(actions)
        }
    }

    private func setVolume(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let text = request.queryItems.first(where: { $0.name == "volume" })?.value,
              let value = Double(text), value.isFinite, (0...1).contains(value) else {
            return Self.text(400, "POST /volume needs ?volume=0..1")
        }
        let actions = machine.withLockedValue { $0.setVolume(value) }
        playerQueue.async { [self] in _ = carryOut(actions) }
        return AirPlayResponse(status: 200)
    }

    /// Properties senders set; accepted and acknowledged (their effects arrive with HLS renditions).
    static let settableProperties: Set<String> = [
        "forwardEndTime", "reverseEndTime", "selectedMediaArray", "actionAtItemEnd", "isInterestedInDateRange",
        "interstitialEvents", "textMarkupArray",
    ]
    /// Properties senders read.
    static let readableProperties: Set<String> = ["playbackAccessLog", "playbackErrorLog"]

    private func setProperty(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let key = request.queryItems.first?.name, Self.settableProperties.contains(key) else {
            return Self.text(404, "unknown property \(request.queryItems.first?.name ?? "(none)")")
        }
        if key == "selectedMediaArray", let refusal = selectMedia(request) { return refusal }
        if key == "actionAtItemEnd", let body = try? PropertyList(decoding: Array(request.body.readableBytesView)),
           let value = (body["value"] ?? body).integerValue {
            machine.withLockedValue { $0.setItemEnd(Int(clamping: value)) }
        }
        return ControlRouter.plistResponse(.dictionary(["errorCode": .integer(0)]), format: ControlRouter.negotiatePlistFormat(request))
    }

    /// `selectedMediaArray`: audio and subtitle renditions to play, as a plist array (or
    /// `{value: array}`) of dictionaries naming a type (`MediaSelectionGroupMediaType`
    /// public.audible / public.legible, or `type` AUDIO / SUBTITLES) and a language
    /// (`MediaSelectionOptionsExtendedLanguageTag` or `language`) or name (`MediaSelectionOptionsName`
    /// or `name`); a subtitles entry with neither turns subtitles off. The player is reloaded at
    /// its position when the selection changes what plays. Nil when accepted.
    private func selectMedia(_ request: AirPlayRequest) -> AirPlayResponse? {
        guard let plist = try? PropertyList(decoding: Array(request.body.readableBytesView)) else {
            return Self.text(400, "selectedMediaArray needs a property list body")
        }
        var entries: [PropertyList] = []
        if case .array(let array) = plist { entries = array }
        if case .dictionary(let dictionary) = plist, case .array(let array)? = dictionary["value"] { entries = array }
        guard let url = machine.withLockedValue({ $0.current?.gatewayURL }), let gateway else { return nil }
        var changed = false
        for case .dictionary(let entry) in entries.prefix(16) {
            let kind = entry["MediaSelectionGroupMediaType"]?.stringValue ?? entry["type"]?.stringValue ?? ""
            let type: String
            switch kind.lowercased() {
            case "public.audible", "audio": type = "AUDIO"
            case "public.legible", "subtitles": type = "SUBTITLES"
            default: return Self.text(400, "selectedMediaArray entries need a type: public.audible or public.legible (AUDIO or SUBTITLES)")
            }
            let choice = HLSRenditionChoice(
                language: entry["MediaSelectionOptionsExtendedLanguageTag"]?.stringValue ?? entry["language"]?.stringValue,
                name: entry["MediaSelectionOptionsName"]?.stringValue ?? entry["name"]?.stringValue)
            changed = gateway.select(url, type: type, choice: choice) || changed
        }
        if changed {
            let actions = machine.withLockedValue { $0.renditionsChanged() }
            playerQueue.async { [self] in _ = carryOut(actions) }
        }
        return nil
    }

    private func getProperty(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let key = request.queryItems.first?.name, Self.readableProperties.contains(key) else {
            return Self.text(404, "unknown property \(request.queryItems.first?.name ?? "(none)")")
        }
        var value: [PropertyList] = []
        if key == "playbackErrorLog", let error = currentPlayer()?.player.status.error {
            value = [.dictionary(["errorStatusCode": .integer(Int64(error.code)), "errorDomain": .string(error.domain),
                                  "errorComment": .string(error.message)])]
        }
        return ControlRouter.plistResponse(.dictionary(["errorCode": .integer(0), "value": .array(value)]),
                                           format: ControlRouter.negotiatePlistFormat(request))
    }

    // MARK: Helpers

    /// The current session and its player.
    func currentPlayer() -> (session: Machine.Session, player: any MediaPlayer)? {
        guard let session = machine.withLockedValue({ $0.current }),
              let player = players.withLockedValue({ $0[session.player] }) else { return nil }
        return (session, player)
    }

    /// A player reported a state (from its own thread): logged, and told to the sender once.
    /// The player process dying under it is the machine's to answer (a new player, once).
    private func playerChanged(_ id: Machine.PlayerID, status: MediaStatus) {
        playbackInfoCache.clear()
        let processEnded = status.state == .failed && status.error?.isPlayerProcessEnd == true
        // The decision and the session it was for, under one lock: a `/stop` between would
        // otherwise leave an event the machine counts as sent unsent.
        let (actions, session) = machine.withLockedValue { machine in
            let session = machine.current.flatMap { $0.player == id ? $0.id : nil }
            let actions = processEnded ? machine.playerProcessEnded(id, at: status.position, starting: false)
                                       : machine.playerChanged(id, to: status.state)
            return (actions, session)
        }
        guard let sessionID = session else { return }
        if case .restartPlayer? = actions.first {
            logger.warning("video player process ended under a video; a new player plays on", metadata: ["position": "\(status.position)"])
            playerQueue.async { [self] in _ = carryOut(actions) }
            return
        }
        playerReported(status)
        if status.state == .failed {
            logger.warning("video failed", metadata: ["session": "\(sessionID)", "error": "\(status.error.map { "\($0)" } ?? "?")"])
        }
        if status.state == .ended { logger.info("video reached its end", metadata: ["session": "\(sessionID)"]) }
        for case .sendEvent(let session, let state) in actions { sendEvent(sessionID: session, state: state) }
        for case .playNext(let session, let play) in actions { playerQueue.async { [self] in playNext(play, sessionID: session) } }
    }

    /// Sends a state event to a session's `/reverse` channel.
    func sendEvent(sessionID: String, state: String) {
        // Events carry the session as a number; a stable hash of the id keeps it the same across events.
        let sessionNumber = Int64(sessionID.utf8.reduce(UInt32(5381)) { ($0 &* 33) ^ UInt32($1) } & 0x7FFF_FFFF)
        events.send(sessionID: sessionID, event: .dictionary([
            "category": .string("video"), "sessionID": .integer(sessionNumber), "state": .string(state),
        ]))
    }

    static func info(_ status: MediaStatus, hls: HLSFigures? = nil) -> PropertyList {
        let duration = status.duration.map { $0.isFinite ? $0 : 0 } ?? 0
        let ranges = { (ranges: [TimeRange]) -> PropertyList in
            .array(ranges.map { .dictionary(["start": .real($0.start), "duration": .real($0.duration)]) })
        }
        var dictionary: [String: PropertyList] = [
            "duration": .real(duration),
            "position": .real(status.position),
            "rate": .real(status.rate),
            "readyToPlay": .bool(status.readyToPlay),
            "playbackBufferEmpty": .bool(status.bufferPercent == 0 && status.state == .loading),
            "playbackBufferFull": .bool(status.bufferPercent >= 100),
            "playbackLikelyToKeepUp": .bool(status.bufferPercent >= 100 || status.state == .playing),
            "loadedTimeRanges": ranges(status.loadedRanges),
            "seekableTimeRanges": ranges(status.seekableRanges),
        ]
        if let hls {
            // Our extension (Protocol/video.md): which HLS variants may play, and which does.
            var variant: [String: PropertyList] = ["allowed": .array(hls.allowed.map { .integer(Int64($0)) }),
                                                   "count": .integer(Int64(hls.variants))]
            if let current = hls.currentDescription {
                variant["index"] = .integer(Int64(current.index))
                variant["bandwidth"] = .integer(Int64(current.peakBitRate))
                variant["uri"] = .string(current.variant.uri)
                if let resolution = current.video?.resolution { variant["resolution"] = .string(resolution.description) }
            }
            if let measured = hls.measuredBandwidth { variant["measuredBandwidth"] = .integer(Int64(measured)) }
            dictionary["hlsVariant"] = .dictionary(variant)
        }
        return .dictionary(dictionary)
    }

    static func idleInfo(error: MediaError?) -> PropertyList {
        var dictionary: [String: PropertyList] = ["readyToPlay": .bool(false)]
        if let error {
            dictionary["error"] = .dictionary(["code": .integer(Int64(error.code)), "domain": .string(error.domain),
                                               "description": .string(error.message)])
        }
        return .dictionary(dictionary)
    }

    static func text(_ status: Int, _ reason: String) -> AirPlayResponse {
        AirPlayResponse.text(status: status, reason)
    }
}
