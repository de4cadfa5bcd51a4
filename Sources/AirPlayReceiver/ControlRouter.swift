import AirPlayNowPlaying
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import NIOCore
import NIOPosix

/// What the connection does with a reply: send it, and maybe turn into an event channel.
public struct ControlReply: Sendable {
    /// The response to write.
    public var response: AirPlayResponse
    /// After a `POST /reverse` upgrade: the session whose events this connection now carries.
    public var upgradeToEventChannel: String?
    /// Set when the answer takes I/O (the HLS gateway): the response comes from this future,
    /// and `response` is unused. Common headers are added to it as well.
    public var deferred: (@Sendable (any EventLoop) -> EventLoopFuture<AirPlayResponse>)?
    /// After a pair-verify or transient pair-setup: encrypt the connection with these keys from
    /// the byte after this response.
    public var startEncryption: ControlChannelKeys?
}

/// Answers requests on the control port: server info here, video requests through `VideoSessions`.
public struct ControlRouter: Sendable {
    /// Supplies the current server info (the name can change after an mDNS collision).
    public var serverInfo: @Sendable () -> ServerInfo
    /// Video playback, when the media stack can offer it.
    public var video: VideoSessions?
    /// Whether video is offered right now (a reload can turn it off and on).
    public var videoEnabled: @Sendable () -> Bool
    /// RAOP audio, when offered.
    public var audio: AudioSessions?
    /// Whether audio is offered right now.
    public var audioEnabled: @Sendable () -> Bool
    /// The HLS gateway the player reads playlists and keys from (loopback only).
    public var hlsGateway: (any HLSProxy)?
    /// HAP pairing and the access rule, when pairing is offered.
    public var pairing: ReceiverPairing?
    /// Under `access = "password"`: Digest for the video endpoints too (RAOP has its own).
    public var videoPassword: DigestAuthenticator?
    /// The PTP follower's state for `GET /ptp` (loopback), when it runs.
    public var ptpStatus: (@Sendable () -> JSONValue)?
    /// Why the PTP follower could not start, when it was meant to (for `GET /diagnostics`).
    public var ptpUnavailable: String?
    /// Where the box's mDNS records stand (`PublicationStatus`), for `GET /diagnostics`.
    public var publicationStatus: (@Sendable () -> JSONValue)?

    /// A router reading server info from a closure.
    public init(serverInfo: @escaping @Sendable () -> ServerInfo, video: VideoSessions? = nil,
                videoEnabled: @escaping @Sendable () -> Bool = { true }, audio: AudioSessions? = nil,
                audioEnabled: @escaping @Sendable () -> Bool = { true }) {
        self.serverInfo = serverInfo
        self.video = video
        self.videoEnabled = videoEnabled
        self.audio = audio
        self.audioEnabled = audioEnabled
    }

    var activeAudio: AudioSessions? { audioEnabled() ? audio : nil }

    var activeVideo: VideoSessions? { videoEnabled() ? video : nil }

    /// The paths served and the methods each allows.
    var routes: [String: [String]] {
        var routes: [String: [String]] = ["/server-info": ["GET"], "/info": ["GET"]]
        if activeVideo != nil {
            routes.merge(VideoSessions.routes) { old, _ in old }
            routes["/reverse"] = ["POST"]
        }
        return routes
    }

    /// The response to a request answered on the spot (server info, refusals); for one answered
    /// later (a player, the HLS gateway) use `reply(to:connection:)`, whose future carries it.
    /// Every reply carries `Server` and, for RTSP, the request's `CSeq`.
    public func respond(to request: AirPlayRequest) -> AirPlayResponse {
        reply(to: request).response
    }

    /// How an endpoint answers: now, later (the answer takes I/O or a player), and whether the
    /// connection then becomes a `/reverse` event channel.
    enum Answer: Sendable {
        /// A response to send now.
        case now(AirPlayResponse, upgradeToEventChannel: String? = nil)
        /// A response that comes from a future.
        case later(@Sendable (any EventLoop) -> EventLoopFuture<AirPlayResponse>)
        /// A response after which the connection is encrypted with these keys.
        case encrypting(AirPlayResponse, ControlChannelKeys)
    }

    /// One endpoint of the control port: which requests it takes, and how it answers them.
    struct Endpoint: Sendable {
        /// What it serves, for logs and documentation.
        var name: String
        /// Whether it takes a request, given the router as it is now (audio and video can be
        /// turned on and off by a reload).
        var takes: @Sendable (ControlRouter, AirPlayRequest, ConnectionContext?) -> Bool
        /// Its answer.
        var answer: @Sendable (ControlRouter, AirPlayRequest, ConnectionContext?) -> Answer
    }

    /// The endpoints, asked in order; the first that takes a request answers it. Pairing
    /// endpoints join here.
    static let endpoints: [Endpoint] = [
        Endpoint(name: "HAP pairing (/pair-*)",
                 takes: { router, request, connection in
                     router.pairing != nil && connection != nil && ReceiverPairing.takes(request)
                 },
                 answer: { router, request, connection in
                     let (pairing, connection) = (router.pairing!, connection!)
                     // SRP at M1 and the fsyncs of a stored pairing must not hold an event loop;
                     // these answers never switch encryption on, so they can come later.
                     if ReceiverPairing.runsOffLoop(request) {
                         return .later { eventLoop in
                             NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { pairing.answer(request, connection: connection).0 }
                         }
                     }
                     let (response, keys) = pairing.answer(request, connection: connection)
                     return keys.map { .encrypting(response, $0) } ?? .now(response)
                 }),
        Endpoint(name: "FairPlay setup handshake (/fp-setup)",
                 takes: { router, request, _ in
                     request.path == "/fp-setup" && request.method == "POST" && router.serverInfo().capabilities.fairPlaySetup
                 },
                 answer: { _, request, _ in .now(FairPlaySetup.response(to: Array(request.body.readableBytesView))) }),
        Endpoint(name: "Home app setup (/configure)",
                 takes: { router, request, _ in
                     request.path == "/configure" && request.method == "POST" && router.pairing != nil
                         && router.serverInfo().capabilities.appleProfile
                 },
                 answer: { router, request, _ in .now(router.pairing!.configure(request, name: router.serverInfo().name)) }),
        Endpoint(name: "RAOP audio (RTSP, /feedback)",
                 takes: { router, request, connection in router.activeAudio != nil && connection != nil && isRAOP(request) },
                 answer: { router, request, connection in .now(router.activeAudio!.respond(to: request, connection: connection!)) }),
        Endpoint(name: "PTP clocks (loopback JSON)",
                 takes: { _, request, _ in request.path == "/ptp" && request.method == "GET" },
                 answer: { router, _, connection in
                     guard isLoopback(connection) else { return .now(AirPlayResponse.text(status: 403, "/ptp is served to programs on this box only")) }
                     guard let status = router.ptpStatus else {
                         return .now(AirPlayResponse.text(status: 404, "PTP is not running: airplay2 is off, or UDP ports 319/320 could not be bound"))
                     }
                     var body = ByteBuffer()
                     body.writeBytes(status().bytes)
                     return .now(AirPlayResponse(status: 200, headers: ["Content-Type": "application/json"], body: body))
                 }),
        Endpoint(name: "diagnostics (JSON: on the box, or to a paired admin)",
                 takes: { _, request, _ in request.path == "/diagnostics" && request.method == "GET" },
                 answer: { router, _, connection in .now(diagnostics(router, connection: connection)) }),
        Endpoint(name: "now playing (loopback JSON)",
                 takes: { router, request, _ in request.path == "/now-playing" && request.method == "GET" && router.activeAudio != nil },
                 answer: { router, _, connection in .now(nowPlaying(router.activeAudio!, pairing: router.pairing, connection: connection)) }),
        Endpoint(name: "remote control (loopback)",
                 takes: { router, request, _ in request.path == "/now-playing/remote" && router.activeAudio != nil },
                 answer: { router, request, connection in remoteControl(router.activeAudio!.nowPlaying, request, connection: connection) }),
        Endpoint(name: "RAOP methods while audio is off",
                 takes: { _, request, _ in request.version.isRTSP && AudioSessions.methods.contains(request.method) },
                 answer: { router, _, _ in
                     .now(router.activeAudio == nil ? AirPlayResponse.text(status: 405, "audio is turned off on this receiver")
                                                    : AirPlayResponse.text(status: 454, "no connection context"))
                 }),
        Endpoint(name: "video (AirPlay 2 senders send PUT /setProperty and POST /rate as RTSP)",
                 takes: { router, request, _ in
                     router.activeVideo != nil && VideoSessions.routes[request.path]?.contains(request.method) == true
                 },
                 answer: { router, request, connection -> Answer in
                     // A video's sender is alive for its audio session too (iOS 27 sends no RTSP
                     // /feedback while a video plays).
                     router.activeAudio?.senderActive(remote: connection?.remote)
                     switch router.activeVideo!.answer(request) {
                     case .now(let response): return .now(response)
                     case .later(let future): return .later(future)
                     }
                 }),
        Endpoint(name: "other RTSP methods",
                 takes: { _, request, _ in request.version.isRTSP && !["GET", "POST"].contains(request.method) },
                 answer: { _, request, _ in .now(AirPlayResponse.text(status: 501, "RTSP method \(request.method.prefix(40)) is not implemented")) }),
        Endpoint(name: "event channel (/reverse)",
                 takes: { router, request, _ in request.path == "/reverse" && request.method == "POST" && router.activeVideo != nil },
                 answer: { _, request, _ in
                     let (response, upgrade) = reverse(request)
                     return .now(response, upgradeToEventChannel: upgrade)
                 }),
        Endpoint(name: "HLS gateway (the player's, loopback)",
                 takes: { router, request, _ in request.path.hasPrefix("/hls/") && router.hlsGateway != nil },
                 answer: { router, request, connection in
                     guard request.method == "GET", isLoopback(connection), let gateway = router.hlsGateway else {
                         return .now(AirPlayResponse.text(status: 403, "/hls/ is the player's own, served on loopback only"))
                     }
                     return .later { eventLoop in gateway.respond(to: request, on: eventLoop) }
                 }),
        Endpoint(name: "server info, and 404/405 for the rest",
                 takes: { _, _, _ in true },
                 answer: { router, request, _ in .now(router.route(request)) }),
    ]

    /// The reply to one request, with what the connection must do after sending it.
    public func reply(to request: AirPlayRequest, connection: ConnectionContext? = nil) -> ControlReply {
        let version = request.version, cseq = request.cseq
        if let refusal = accessRefusal(request, connection: connection) {
            return ControlReply(response: finish(refusal, version: version, cseq: cseq), upgradeToEventChannel: nil)
        }
        let endpoint = Self.endpoints.first { $0.takes(self, request, connection) }!
        switch endpoint.answer(self, request, connection) {
        case .now(var response, let upgrade):
            response.version = version
            addCommonHeaders(&response, cseq: cseq)
            return ControlReply(response: response, upgradeToEventChannel: upgrade)
        case .encrypting(let response, let keys):
            return ControlReply(response: finish(response, version: version, cseq: cseq), upgradeToEventChannel: nil, startEncryption: keys)
        case .later(let future):
            return ControlReply(response: AirPlayResponse(status: 500), upgradeToEventChannel: nil) { eventLoop in
                future(eventLoop).map { answer in
                    var answer = answer
                    answer.version = version
                    addCommonHeaders(&answer, cseq: cseq)
                    return answer
                }
            }
        }
    }

    /// What stays open under `access = "paired"`: who the box is, pairing itself, RTSP OPTIONS,
    /// and the loopback-only endpoints of programs on the box.
    /// Method and path both decide: an RTSP method aimed at an open path is still RAOP's.
    static func isOpenWithoutPairing(_ request: AirPlayRequest) -> Bool {
        switch (request.method, request.path) {
        case ("GET", "/info"), ("GET", "/server-info"), ("OPTIONS", _), ("GET", "/now-playing"), ("GET", "/diagnostics"): true
        case ("POST", let path): ReceiverPairing.paths.contains(path)
        case ("GET", let path): path.hasPrefix("/hls/") && !request.version.isRTSP
        default: false
        }
    }

    /// 470 for a request that needs a verified pairing on a connection that has none; 401 for a
    /// video request without the password under `access = "password"`.
    func accessRefusal(_ request: AirPlayRequest, connection: ConnectionContext?) -> AirPlayResponse? {
        if let videoPassword, let connection, VideoSessions.routes[request.path] != nil || request.path == "/reverse" {
            return videoPassword.check(request, connection: connection.id)
        }
        guard let pairing, pairing.access == .paired, !Self.isOpenWithoutPairing(request) else { return nil }
        if let connection, pairing.isVerified(connection.id) { return nil }
        return .text(status: 470, "pair with this receiver first (airplay pair)")
    }

    /// RTSP methods of RAOP, and the `/feedback` keep-alive senders post during a stream.
    static func isRAOP(_ request: AirPlayRequest) -> Bool {
        if request.method == "POST", AudioSessions.postPaths.contains(request.path) { return true }
        return request.version.isRTSP && AudioSessions.methods.contains(request.method)
    }

    /// `GET /now-playing`: JSON, for programs on the box only (loopback peers).
    /// True for connections from this box: from a loopback address (127.0.0.0/8, ::1,
    /// IPv4-mapped loopback), or from the very address they reached, which only the box itself
    /// can be (a zone bound to its own `address` sees its own programs that way).
    /// A loopback address: 127.0.0.0/8, ::1, or IPv4-mapped 127.x.
    package static func isLoopbackAddress(_ ip: String) -> Bool {
        ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }

    static func isLoopback(_ connection: ConnectionContext?) -> Bool {
        let peer = connection?.remote?.ipAddress ?? ""
        if isLoopbackAddress(peer) { return true }
        return !peer.isEmpty && peer == connection?.local?.ipAddress
    }

    static func nowPlaying(_ audio: AudioSessions, pairing: ReceiverPairing?, connection: ConnectionContext?) -> AirPlayResponse {
        guard isLoopback(connection) else { return AirPlayResponse.text(status: 403, "/now-playing is served to programs on this box only") }
        var body = ByteBuffer()
        // While a pair-setup waits for its PIN, the box shows it (`pairing.pin`).
        let pin: JSONValue = pairing?.displayedPIN.map { .string($0) } ?? .null
        var object = audio.nowPlaying.state.json(now: audio.nowPlaying.now())
        object["stream"] = audio.streamFigures?.json ?? .null
        object["pairing"] = ["pin": pin]
        body.writeBytes(JSONValue.object(object).bytes)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/json"], body: body)
    }

    /// `POST /now-playing/remote?command=NAME` (loopback only): the box's remote control, as the
    /// surfaces use it (`pause`, `next`, `seek:-10`, `volume:-12`…; `RemoteCommand(name:)`).
    /// 204 when it was carried out, 409 with the reason when not (nothing plays, the sender's
    /// remote cannot be reached).
    static func remoteControl(_ nowPlaying: NowPlaying, _ request: AirPlayRequest, connection: ConnectionContext?) -> Answer {
        guard isLoopback(connection) else { return .now(.text(status: 403, "/now-playing/remote is served to programs on this box only")) }
        guard request.method == "POST" else { return .now(.text(status: 405, "POST /now-playing/remote?command=NAME")) }
        guard let name = request.queryItems.first(where: { $0.name == "command" })?.value, let command = RemoteCommand(name: name) else {
            return .now(.text(status: 400, "command must be play, pause, playpause, stop, next, previous, volumeup, volumedown, seek:SECONDS, position:SECONDS or volume:DB"))
        }
        return .later { eventLoop in
            let promise = eventLoop.makePromise(of: AirPlayResponse.self)
            nowPlaying.perform(command) { result in
                switch result {
                case .success: promise.succeed(AirPlayResponse(status: 204))
                case .failure(let error): promise.succeed(.text(status: 409, error.description))
                }
            }
            return promise.futureResult
        }
    }

    /// `POST /reverse` with `Upgrade: PTTH/1.0`: 101, and the connection carries the session's events.
    static func reverse(_ request: AirPlayRequest) -> (AirPlayResponse, String?) {
        guard request.headers["Upgrade"]?.uppercased() == "PTTH/1.0" else {
            return (AirPlayResponse.text(status: 400, "POST /reverse needs Upgrade: PTTH/1.0"), nil)
        }
        let session = request.headers["X-Apple-Session-ID"] ?? "anonymous"
        return (AirPlayResponse(status: 101, headers: ["Upgrade": "PTTH/1.0", "Connection": "Upgrade"]), session)
    }

    /// The response to a request the decoder refused.
    public func respond(to rejection: RequestRejection) -> AirPlayResponse {
        var response = AirPlayResponse.text(status: rejection.status, rejection.reason)
        // Answer in a version we speak: a 505 for HTTP/9.9 goes out as HTTP/1.1.
        response.version = rejection.version.name == "RTSP" ? .rtsp10 : .http11
        if rejection.closesConnection { response.headers.add(name: "Connection", value: "close") }
        addCommonHeaders(&response, cseq: rejection.cseq)
        return response
    }

    /// Server info, and the answers for paths nobody serves or methods a path does not allow.
    func route(_ request: AirPlayRequest) -> AirPlayResponse {
        let path = request.path
        guard let methods = routes[path] else {
            return AirPlayResponse.text(status: 404, "no resource at \(path.prefix(200))")
        }
        guard methods.contains(request.method) else {
            var response = AirPlayResponse.text(status: 405, "\(request.method) is not allowed on \(path)")
            response.headers.add(name: "Allow", value: methods.joined(separator: ", "))
            return response
        }
        switch path {
        case "/server-info", "/info":
            return Self.plistResponse(serverInfo().propertyList, format: Self.negotiatePlistFormat(request))
        default:
            return AirPlayResponse.text(status: 404, "no resource at \(path)")
        }
    }

    /// Binary when the client asks for it (`Accept`), speaks it (a binary plist body) or asks
    /// over RTSP (AirPlay 2 senders, whose `GET /info` is RTSP, read binary), else XML, which
    /// every HTTP client reads.
    static func negotiatePlistFormat(_ request: AirPlayRequest) -> PropertyListFormat {
        let binaryType = PropertyListFormat.binary.contentType
        if let accept = request.headers["Accept"]?.lowercased() {
            if accept.contains(binaryType) { return .binary }
            if accept.contains("xml") { return .xml }
        }
        if request.version.isRTSP { return .binary }
        if request.headers["Content-Type"]?.lowercased().contains(binaryType) == true { return .binary }
        if request.body.readableBytesView.starts(with: Array("bplist".utf8)) { return .binary }
        return .xml
    }

    static func plistResponse(_ plist: PropertyList, format: PropertyListFormat, status: Int = 200) -> AirPlayResponse {
        var body = ByteBuffer()
        body.writeBytes(plist.encoded(as: format))
        return AirPlayResponse(status: status, headers: ["Content-Type": format.contentType], body: body)
    }

    /// A response made ready to send for a request of `version` with `cseq`: version, `Server`, `CSeq`.
    func finish(_ response: AirPlayResponse, version: ProtocolVersion, cseq: String?) -> AirPlayResponse {
        var response = response
        response.version = version
        addCommonHeaders(&response, cseq: cseq)
        return response
    }

    /// The `Server` header, as the receiver's profile names its version.
    var serverHeader: String { serverInfo().capabilities.serverHeader }

    private func addCommonHeaders(_ response: inout AirPlayResponse, cseq: String?) {
        response.headers.replaceOrAdd(name: "Server", value: serverHeader)
        if let cseq { response.headers.replaceOrAdd(name: "CSeq", value: cseq) }
    }
}
