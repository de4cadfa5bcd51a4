import AirPlayMedia
import AirPlayPlist
import AirPlayWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Policy for a `/play` from a sender while another sender's video plays.
public enum VideoTakeover: String, Hashable, Sendable {
    /// The new sender replaces the current one, which gets a `stopped` event (Apple TV behaviour).
    case replace
    /// The new sender is refused with 409 while the current video plays.
    case refuse
}

/// The video half of the control port: one video session at a time, played by a `MediaPlayer`.
///
/// Endpoints: `/play`, `/scrub`, `/rate`, `/stop`, `/volume`, `/playback-info`,
/// `/setProperty`, `/getProperty`; state changes go to the session's `/reverse` channel.
public final class VideoSessions: Sendable {
    /// Makes a fresh player for each `/play`.
    public typealias PlayerFactory = @Sendable () throws(MediaError) -> any MediaPlayer
    /// Makes the player for trick play (fast rates on an HLS I-frame playlist).
    private let makeTrickPlayer: PlayerFactory?

    private struct Session {
        var id: String
        var player: any MediaPlayer
        var url: String
        var lastEventState: String?
        /// The URL the player opened on the HLS gateway, when the media is a playlist.
        var gatewayURL: String?
        /// True while the player plays the I-frame playlist (fast rates).
        var trick = false
    }

    private let makePlayer: PlayerFactory
    private let policy: MediaURLPolicy
    private let takeover: VideoTakeover
    private let events: EventChannels
    private let logger: Logger
    private let current = NIOLockedValueBox<Session?>(nil)
    private let volume = NIOLockedValueBox<Double>(1)
    /// Fronts HLS playlists for the player (variant choice, keys), when there is one.
    public let gateway: HLSGateway?

    /// Sessions with a player factory and policies.
    public init(makePlayer: @escaping PlayerFactory, policy: MediaURLPolicy, takeover: VideoTakeover,
                events: EventChannels, gateway: HLSGateway? = nil, makeTrickPlayer: PlayerFactory? = nil, logger: Logger) {
        self.gateway = gateway
        self.makeTrickPlayer = makeTrickPlayer
        self.makePlayer = makePlayer
        self.policy = policy
        self.takeover = takeover
        self.events = events
        self.logger = logger
    }

    /// The paths this type serves, with their methods.
    public static let routes: [String: [String]] = [
        "/play": ["POST"], "/scrub": ["GET", "POST"], "/rate": ["POST"], "/stop": ["POST"],
        "/volume": ["POST"], "/playback-info": ["GET"], "/setProperty": ["PUT", "POST"], "/getProperty": ["GET", "POST"],
    ]

    /// Answers one video request.
    public func respond(to request: AirPlayRequest) -> AirPlayResponse {
        switch request.path {
        case "/play": return play(request)
        case "/playback-info": return playbackInfo(request)
        case "/scrub": return request.method == "GET" ? scrubStatus(request) : scrub(request)
        case "/rate": return rate(request)
        case "/stop": return stop(request)
        case "/volume": return setVolume(request)
        case "/setProperty": return setProperty(request)
        case "/getProperty": return getProperty(request)
        default: return Self.text(404, "no resource at \(request.path)")
        }
    }

    /// Stops the current session (shutdown).
    public func stopAll() {
        if let session = current.withLockedValue({ value -> Session? in defer { value = nil }; return value }) {
            session.player.stop()
            if let url = session.gatewayURL { gateway?.close(url) }
            if session.lastEventState != "stopped" { sendEvent(sessionID: session.id, state: "stopped") }
        }
    }

    // MARK: Endpoints

    private func play(_ request: AirPlayRequest) -> AirPlayResponse {
        let play: PlayRequest
        do {
            play = try PlayRequest(request: request)
            try policy.check(play.url)
        } catch {
            return Self.text(error.status, error.reason)
        }
        let sessionID = play.sessionID.flatMap { $0.isEmpty ? nil : $0 } ?? "anonymous"
        let player: any MediaPlayer
        do {
            player = try makePlayer()
        } catch {
            return Self.text(500, "cannot create a player: \(error.message)")
        }
        player.setVolume(volume.withLockedValue { $0 })
        // HLS playlists go through the gateway: it picks the variants and fetches the keys.
        let gatewayURL = gateway.flatMap { gateway in
            HLSGateway.isPlaylist(play.url) ? gateway.open(origin: play.url, headers: play.httpHeaders, sessionID: sessionID) : nil
        }
        // Check and swap under one lock, so two concurrent /play cannot both pass a refusal.
        let swap = current.withLockedValue { value -> (refused: Bool, previous: Session?) in
            if takeover == .refuse, let active = value, active.id != sessionID,
               [.loading, .playing, .paused].contains(active.player.status.state) {
                return (true, nil)
            }
            defer { value = Session(id: sessionID, player: player, url: play.url, gatewayURL: gatewayURL) }
            return (false, value)
        }
        if swap.refused {
            if let gatewayURL { gateway?.close(gatewayURL) }
            return Self.text(409, "another sender's video is playing; this receiver refuses takeovers")
        }
        if let previous = swap.previous {
            previous.player.stop()
            if let url = previous.gatewayURL { gateway?.close(url) }
            // A sender that replaces its own video expects no "stopped" for the old item.
            if previous.id != sessionID, previous.lastEventState != "stopped" {
                logger.info("video session replaced", metadata: ["session": "\(previous.id)", "by": "\(sessionID)"])
                sendEvent(sessionID: previous.id, state: "stopped", force: true)
            }
        }
        player.onStateChange { [weak self] status in self?.playerChanged(sessionID: sessionID, player: player, status: status) }
        do {
            try player.load(url: gatewayURL ?? play.url, start: play.start, paused: play.rate == 0)
        } catch {
            current.withLockedValue { if $0?.player === player { $0 = nil } }
            if let gatewayURL { gateway?.close(gatewayURL) }
            return Self.text(400, error.message)
        }
        logger.info("video play", metadata: ["session": "\(sessionID)", "url": "\(play.url.prefix(300))"])
        return AirPlayResponse(status: 200)
    }

    private func playbackInfo(_ request: AirPlayRequest) -> AirPlayResponse {
        let format = ControlRouter.negotiatePlistFormat(request)
        guard let session = current.withLockedValue({ $0 }) else {
            return ControlRouter.plistResponse(Self.idleInfo(error: nil), format: format)
        }
        let status = session.player.status
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
        let status = current.withLockedValue { $0 }?.player.status ?? .idle
        let duration = status.duration.flatMap { $0.isFinite ? $0 : nil } ?? 0
        let text = String(format: "duration: %.6f\r\nposition: %.6f\r\n", duration, status.position)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "text/parameters"], body: ByteBuffer(string: text))
    }

    private func scrub(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let text = request.queryItems.first(where: { $0.name == "position" })?.value,
              let position = Double(text), position.isFinite, position >= 0 else {
            return Self.text(400, "POST /scrub needs ?position=SECONDS (a number >= 0)")
        }
        return withCurrentSession(request) { session in
            do {
                try session.player.seek(to: position)
                return AirPlayResponse(status: 200)
            } catch {
                return Self.text(422, (error as? MediaError)?.message ?? "\(error)")
            }
        }
    }

    private func rate(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let text = request.queryItems.first(where: { $0.name == "value" })?.value,
              let rate = Double(text), rate.isFinite else {
            return Self.text(400, "POST /rate needs ?value=RATE (0 pauses, 1 plays)")
        }
        return withCurrentSession(request) { session in
            // Fast playback of HLS with an I-frame playlist plays that playlist; back at a
            // normal rate, the variants again.
            if let url = session.gatewayURL, let gateway {
                if abs(rate) >= 4, !session.trick, let trickURL = gateway.trickURL(url) {
                    reload(session, url: trickURL, rate: rate, trick: true)
                    return AirPlayResponse(status: 200)
                }
                if abs(rate) < 4, rate != 0, session.trick {
                    reload(session, url: url, rate: rate, trick: false)
                    return AirPlayResponse(status: 200)
                }
            }
            do {
                if rate == 0 {
                    session.player.pause()
                } else if rate == 1 {
                    session.player.play()
                } else {
                    try session.player.setRate(rate)
                }
                return AirPlayResponse(status: 200)
            } catch {
                return Self.text(422, (error as? MediaError)?.message ?? "\(error)")
            }
        }
    }

    private func stop(_ request: AirPlayRequest) -> AirPlayResponse {
        let requested = request.headers["X-Apple-Session-ID"]
        let session = current.withLockedValue { value -> Session? in
            guard let active = value else { return nil }
            if let requested, requested != active.id { return nil }
            value = nil
            return active
        }
        guard let session else {
            if let requested, current.withLockedValue({ $0 }) != nil {
                return Self.text(409, "session \(requested) is not the current video session")
            }
            return AirPlayResponse(status: 200)  // Nothing plays: stopping is already done.
        }
        session.player.stop()
        if let url = session.gatewayURL { gateway?.close(url) }
        if session.lastEventState != "stopped" { sendEvent(sessionID: session.id, state: "stopped") }
        logger.info("video stopped", metadata: ["session": "\(session.id)"])
        return AirPlayResponse(status: 200)
    }

    private func setVolume(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let text = request.queryItems.first(where: { $0.name == "volume" })?.value,
              let value = Double(text), value.isFinite, (0...1).contains(value) else {
            return Self.text(400, "POST /volume needs ?volume=0..1")
        }
        volume.withLockedValue { $0 = value }
        current.withLockedValue { $0 }?.player.setVolume(value)
        return AirPlayResponse(status: 200)
    }

    /// Properties senders set; accepted and acknowledged (their effects arrive with HLS renditions).
    static let settableProperties: Set<String> = [
        "forwardEndTime", "reverseEndTime", "selectedMediaArray", "actionAtItemEnd", "isInterestedInDateRange",
    ]
    /// Properties senders read.
    static let readableProperties: Set<String> = ["playbackAccessLog", "playbackErrorLog"]

    private func setProperty(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let key = request.queryItems.first?.name, Self.settableProperties.contains(key) else {
            return Self.text(404, "unknown property \(request.queryItems.first?.name ?? "(none)")")
        }
        if key == "selectedMediaArray", let refusal = selectMedia(request) { return refusal }
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
        guard let session = current.withLockedValue({ $0 }), let url = session.gatewayURL, let gateway else { return nil }
        var changed = false
        for case .dictionary(let entry) in entries.prefix(16) {
            let kind = entry["MediaSelectionGroupMediaType"]?.stringValue ?? entry["type"]?.stringValue ?? ""
            let type: String
            switch kind.lowercased() {
            case "public.audible", "audio": type = "AUDIO"
            case "public.legible", "subtitles": type = "SUBTITLES"
            default: return Self.text(400, "selectedMediaArray entries need a type: public.audible or public.legible (AUDIO or SUBTITLES)")
            }
            let choice = HLSGateway.RenditionChoice(
                language: entry["MediaSelectionOptionsExtendedLanguageTag"]?.stringValue ?? entry["language"]?.stringValue,
                name: entry["MediaSelectionOptionsName"]?.stringValue ?? entry["name"]?.stringValue)
            changed = gateway.select(url, type: type, choice: choice) || changed
        }
        if changed { reload(session, url: url, rate: nil, trick: false) }
        return nil
    }

    /// Plays the same session again with a fresh player from its position (a new rendition
    /// selection): the sender sees no stop, only a short rebuffer.
    private func reload(_ session: Session, url: String, rate: Double?, trick: Bool) {
        let status = session.player.status
        let player: any MediaPlayer
        do {
            player = try (trick ? makeTrickPlayer ?? makePlayer : makePlayer)()
        } catch {
            logger.warning("rendition switch failed", metadata: ["error": "\(error.message)"])
            return
        }
        player.setVolume(volume.withLockedValue { $0 })
        let swapped = current.withLockedValue { value -> Bool in
            guard var active = value, active.player === session.player else { return false }
            active.player = player
            active.trick = trick
            value = active
            return true
        }
        guard swapped else { return }
        session.player.stop()
        let sessionID = session.id
        player.onStateChange { [weak self] status in self?.playerChanged(sessionID: sessionID, player: player, status: status) }
        do {
            try player.load(url: url, start: .seconds(status.position), paused: rate == nil && status.state == .paused)
            if let rate { try player.setRate(rate) }
            logger.info(trick ? "video trick play" : "video reloaded", metadata: [
                "session": "\(sessionID)", "position": "\(status.position)", "rate": "\(rate ?? status.rate)"])
        } catch {
            logger.warning("rendition switch failed", metadata: ["error": "\(error.message)"])
        }
    }

    private func getProperty(_ request: AirPlayRequest) -> AirPlayResponse {
        guard let key = request.queryItems.first?.name, Self.readableProperties.contains(key) else {
            return Self.text(404, "unknown property \(request.queryItems.first?.name ?? "(none)")")
        }
        var value: [PropertyList] = []
        if key == "playbackErrorLog", let error = current.withLockedValue({ $0 })?.player.status.error {
            value = [.dictionary(["errorStatusCode": .integer(Int64(error.code)), "errorDomain": .string(error.domain),
                                  "errorComment": .string(error.message)])]
        }
        return ControlRouter.plistResponse(.dictionary(["errorCode": .integer(0), "value": .array(value)]),
                                           format: ControlRouter.negotiatePlistFormat(request))
    }

    // MARK: Helpers

    /// Runs `body` on the current session when the request addresses it (or names no session).
    private func withCurrentSession(_ request: AirPlayRequest, _ body: (Session) -> AirPlayResponse) -> AirPlayResponse {
        guard let session = current.withLockedValue({ $0 }) else { return Self.text(404, "no video is playing") }
        if let requested = request.headers["X-Apple-Session-ID"], requested != session.id {
            return Self.text(409, "session \(requested) is not the current video session")
        }
        return body(session)
    }

    private func playerChanged(sessionID: String, player: any MediaPlayer, status: MediaStatus) {
        let state: String
        switch status.state {
        case .idle: return
        case .loading: state = "loading"
        case .playing: state = "playing"
        case .paused: state = "paused"
        case .ended, .failed, .stopped: state = "stopped"
        }
        if status.state == .failed {
            logger.warning("video failed", metadata: ["session": "\(sessionID)", "error": "\(status.error.map { "\($0)" } ?? "?")"])
        }
        if status.state == .ended { logger.info("video reached its end", metadata: ["session": "\(sessionID)"]) }
        sendEvent(sessionID: sessionID, state: state, from: player)
    }

    /// Sends a state event unless it repeats the last one sent to that session.
    private func sendEvent(sessionID: String, state: String, force: Bool = false, from player: (any MediaPlayer)? = nil) {
        let send = current.withLockedValue { value -> Bool in
            guard var session = value, session.id == sessionID else { return force || player == nil }
            if let player, session.player !== player { return false }
            if session.lastEventState == state { return false }
            session.lastEventState = state
            value = session
            return true
        }
        guard send || force else { return }
        // Events carry the session as a number; a stable hash of the id keeps it the same across events.
        let sessionNumber = Int64(sessionID.utf8.reduce(UInt32(5381)) { ($0 &* 33) ^ UInt32($1) } & 0x7FFF_FFFF)
        events.send(sessionID: sessionID, event: .dictionary([
            "category": .string("video"), "sessionID": .integer(sessionNumber), "state": .string(state),
        ]))
    }

    static func info(_ status: MediaStatus, hls: HLSGateway.Figures? = nil) -> PropertyList {
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
