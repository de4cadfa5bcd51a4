import AirPlayHLS
import AirPlayHTTP
import AirPlayReceiver
import AirPlayWire
import Dispatch
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Serves the HLS playlists the player reads, from the box's own control port (loopback only).
///
/// Why a gateway: the box decides which variants it plays (its display, HDR, decoders, audio
/// output) before the player sees the master playlist; it learns which variant plays (the player
/// reads that variant's playlist from us); and it fetches the keys itself, over HTTPS with the
/// cookies or headers the sender handed over in `/play`, or, for a custom-scheme key URI, from
/// the sender over the reverse event channel. Segments are not proxied: their URIs are made
/// absolute and the player fetches them from the origin; with `refuseLocalTargets` they are
/// (`HLSGateway+Segments.swift`), as the player follows their redirects unscreened.
public final class HLSGateway: HLSProxy {
    /// Asks the sender of a session for a key it can reach and we cannot (a custom scheme).
    public typealias KeyRequester = @Sendable (_ sessionID: String, _ uri: String) async -> Result<[UInt8], HLSKeyError>
    /// Asks the sender of a session for a playlist only it can reach (`mlhls://`, over FCUP).
    public typealias PlaylistRequester = @Sendable (_ sessionID: String, _ url: String) async -> Result<String, HandedOverPlaylistError>

    let sessions = NIOLockedValueBox(HLSGatewaySessions())
    private let policy: VariantPolicy
    let options: HTTPRequestOptions
    /// Where the player reaches the control port: `127.0.0.1:PORT`, or the zone's own address.
    private let playerOrigin = NIOLockedValueBox("127.0.0.1:0")
    private let requestKey: KeyRequester?
    private let requestPlaylist: PlaylistRequester?
    private let preferences: RenditionPreferences
    private let logger: Logger

    /// A gateway with a variant policy, an optional extra CA file and a way to ask senders for keys.
    /// With `refuseLocalTargets` (`video_refuse_local_urls`), nothing behind the gateway is
    /// fetched from a loopback or link-local address: not a playlist, key or redirect (checked at
    /// each connection), nor the segments the player fetches (their hosts, checked when served).
    /// Playlists a sender handed over as `mlhls://` come from `requestPlaylist` (its phone, over
    /// FCUP); their segments are fetched by the player from the origin like any other.
    public init(policy: VariantPolicy, caFile: String?, refuseLocalTargets: Bool = false, requestKey: KeyRequester?,
                requestPlaylist: PlaylistRequester? = nil, preferences: RenditionPreferences? = nil, logger: Logger) {
        self.preferences = preferences ?? RenditionPreferences(audio: "", subtitles: "", environment: [:])
        self.policy = policy
        options = HTTPRequestOptions(timeout: 15, maximumBytes: 8 << 20, caFile: caFile, refuseLocalTargets: refuseLocalTargets)
        self.requestKey = requestKey
        self.requestPlaylist = requestPlaylist
        self.logger = logger
    }

    /// The control port, once bound: the player reaches the gateway there on 127.0.0.1, or on
    /// `host` when the port listens on one address only (a zone's `address`).
    public func setPort(_ value: Int, host: String? = nil) {
        let name = host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "127.0.0.1"
        playerOrigin.withLockedValue { $0 = "\(name):\(value)" }
    }

    /// Starts fronting a playlist; returns the URL the player should open.
    public func open(origin: String, headers: [String: String], sessionID: String) -> String {
        let token = (0..<4).map { _ in TextFormatting.hex(UInt32.random(in: 0...UInt32.max), width: 8) }.joined()
        sessions.withLockedValue { $0.open(token: token, origin: origin, headers: headers, sessionID: sessionID) }
        return "http://\(playerOrigin.withLockedValue { $0 })/hls/\(token)/main.m3u8"
    }

    /// Stops fronting the playlist behind a gateway URL.
    public func close(_ url: String) {
        guard let token = Self.token(of: url) else { return }
        sessions.withLockedValue { $0.close(token: token) }
    }

    /// The figures of the playback behind a gateway URL.
    public func figures(_ url: String) -> HLSFigures? {
        guard let token = Self.token(of: url) else { return nil }
        return sessions.withLockedValue { $0[token]?.figures }
    }

    /// The playback token of one of our gateway URLs (`http://HOST:PORT/hls/<token>/<name>`, or
    /// its path). A scan rather than URL parsing: `/playback-info` asks on every poll, and
    /// `URLComponents` was a tenth of the poll's CPU with 64 senders polling.
    static func token(of url: String) -> String? {
        let bytes = Array(url.utf8)
        var start = 0
        // Past a scheme and authority when there is one: a "://" before the first "/".
        if let slash = bytes.firstIndex(of: UInt8(ascii: "/")), slash >= 1, bytes[slash - 1] == UInt8(ascii: ":"),
           slash + 1 < bytes.count, bytes[slash + 1] == UInt8(ascii: "/") {
            start = bytes[(slash + 2)...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
        }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        let parts = bytes[start..<end].split(separator: UInt8(ascii: "/"))
        guard parts.count >= 2, parts[0].elementsEqual("hls".utf8) else { return nil }
        return String(decoding: parts[1], as: UTF8.self)
    }

    /// Answers `GET /hls/<token>/<name>` (the player's requests).
    public func respond(to request: AirPlayRequest, on eventLoop: any EventLoop) -> EventLoopFuture<AirPlayResponse> {
        let promise = eventLoop.makePromise(of: AirPlayResponse.self)
        Task { promise.succeed(await answer(request)) }
        return promise.futureResult
    }

    /// The answer to one of the player's requests.
    func answer(_ request: AirPlayRequest) async -> AirPlayResponse {
        let parts = request.path.split(separator: "/")
        guard parts.count == 3, parts[0] == "hls", sessions.withLockedValue({ $0[String(parts[1])] != nil }) else {
            return Self.text(404, "no such HLS playback")
        }
        let token = String(parts[1]), name = String(parts[2])
        switch name {
        case "main.m3u8": return await main(token)
        case "trick.m3u8": return trickMaster(token)
        case _ where name.hasPrefix("t") && name.hasSuffix(".m3u8"): return await trickPlaylist(token, name: String(name.dropLast(5)))
        case _ where name.hasPrefix("c") && name.hasSuffix(".ts"): return await chunk(token, name: String(name.dropLast(3)))
        case _ where name.hasPrefix("k") && name.hasSuffix(".key"): return await key(token, name: String(name.dropLast(4)))
        case _ where Self.proxiedNumber(name) != nil:
            return await proxied(token, number: Self.proxiedNumber(name)!, range: request.headers["Range"])
        case _ where name.hasSuffix(".m3u8"): return await mediaPlaylist(token, name: String(name.dropLast(5)))
        default: return Self.text(404, "no \(name) in this playback")
        }
    }

    // MARK: Playlists

    private func main(_ token: String) async -> AirPlayResponse {
        guard let session = sessions.withLockedValue({ $0[token] }) else { return Self.text(404, "playback ended") }
        let text: String, base: String
        switch await fetchText(session.origin, headers: session.headers, token: token) {
        case .success(let fetched): (text, base) = fetched
        case .failure(let response): return response
        }
        let playlist: Playlist
        do {
            playlist = try PlaylistParser.parse(text)
        } catch {
            return fail(token, 502, "\(session.origin) is not a valid playlist: \(error)")
        }
        switch playlist {
        case .media:
            let media: MediaPlaylist
            do {
                media = try CondensedPlaylist.parseMedia(text)
            } catch {
                return fail(token, 502, "\(session.origin) is not a valid media playlist: \(error)")
            }
            if let refusal = PlaylistProtection.refusal(media: media) { return fail(token, 415, refusal) }
            // A media playlist played directly: rewritten like a variant's.
            sessions.withLockedValue { $0.servedMediaDirectly(token: token, base: base) }
            let rewritten = rewrite(media, base: base, token: token)
            if let problem = await screen(rewritten) { return fail(token, 403, problem) }
            return Self.playlist(proxying(rewritten, token: token).text)
        case .master(let master):
            if let refusal = PlaylistProtection.refusal(master: master) { return fail(token, 415, refusal) }
            let (allowed, refused) = policy.choose(master)
            guard !allowed.isEmpty else {
                let reasons = refused.sorted { $0.key < $1.key }.map { "variant \($0.key): \($0.value)" }.joined(separator: "; ")
                return fail(token, 415, "no variant of \(session.origin) can be played here (\(reasons))")
            }
            // Start where the measured bandwidth allows: players begin with the first variant
            // listed, and adapt from there among the ones that fit.
            let measured = session.figures.measuredBandwidth == nil
                ? await probeBandwidth(master, allowed: allowed, base: base, headers: session.headers, sessionID: session.sessionID) : session.figures.measuredBandwidth
            guard let served = sessions.withLockedValue({
                $0.serveMaster(token: token, master: master, base: base, allowed: allowed, refused: refused, measured: measured,
                           preferred: preferences.choices(for: master))
            }) else { return Self.text(404, "playback ended") }
            if let start = served.start {
                logger.info("hls start variant", metadata: ["variant": "\(start)",
                                                            "measured.bps": "\(measured.map { String(Int($0)) } ?? "unknown")"])
            }
            let all = VariantDescription.all(master)
            logger.info("hls variants chosen", metadata: [
                "variants": "\(master.variants.count)", "allowed": "\(allowed.map(String.init).joined(separator: ","))",
                "best": "\(allowed.map { all[$0] }.max { $0.peakBitRate < $1.peakBitRate }.map { Self.describe($0) } ?? "-")",
                "refused": "\(refused.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))",
            ])
            return Self.playlist(served.playlist.text)
        }
    }

    private func mediaPlaylist(_ token: String, name: String) async -> AirPlayResponse {
        let media: MediaPlaylist, base: String
        switch await fetchMedia(token, name: name) {
        case .success(let fetched): (media, base) = fetched
        case .failure(let response): return response
        }
        if name.hasPrefix("v"), let index = Int(name.dropFirst()) {
            let changed = sessions.withLockedValue { $0.variantRequested(token: token, index: index) }
            if let changed { logger.info("hls variant playing", metadata: ["variant": "\(index)", "stream": "\(Self.describe(changed))"]) }
        }
        let rewritten = rewrite(media, base: base, token: token)
        if let problem = await screen(rewritten) { return fail(token, 403, problem) }
        return Self.playlist(proxying(rewritten, token: token).text)
    }

    /// Segments and maps absolute (the player fetches them from the origin); keys through us.
    private func rewrite(_ media: MediaPlaylist, base: String, token: String) -> MediaPlaylist {
        var copy = media
        copy.segments = media.segments.map { segment in
            var segment = segment
            segment.uri = Self.absolute(segment.uri, base)
            if var map = segment.map, let uri = map["URI"] {
                map["URI"] = Self.absolute(uri, base)
                segment.map = map
            }
            segment.keys = segment.keys.map { key in
                // Only keys the player itself would fetch (the identity format) go through us.
                guard let uri = key["URI"], (key["KEYFORMAT"] ?? "identity") == "identity" else { return key }
                var key = key
                key["URI"] = keyName(token, uri: Self.absolute(uri, base)) + ".key"
                return key
            }
            return segment
        }
        return copy
    }

    /// Hosts one media playlist may spread its segments over (each is looked up when screened).
    static let maximumSegmentHosts = 16

    /// Why a rewritten media playlist may not go to the player, if it may not: its segments and
    /// maps must be http(s) URLs (always), on few hosts, and with `refuseLocalTargets` on hosts
    /// that resolve to no loopback or link-local address.
    private func screen(_ media: MediaPlaylist) async -> String? {
        var hosts = Set<String>()
        for segment in media.segments {
            for uri in [segment.uri] + (segment.map?["URI"].map { [$0] } ?? []) {
                guard HTTPClient.isFetchable(uri), let host = URLComponents(string: uri)?.host, !host.isEmpty else {
                    return "the playlist lists \(uri.prefix(80)), which is not an http(s) URL with a host"
                }
                hosts.insert(host.lowercased())
            }
        }
        guard hosts.count <= Self.maximumSegmentHosts else {
            return "the playlist spreads its segments over \(hosts.count) hosts (at most \(Self.maximumSegmentHosts))"
        }
        guard options.refuseLocalTargets else { return nil }
        // Name lookups block: not on the concurrency pool's few threads.
        let names = hosts.sorted()
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                for host in names {
                    if let address = LocalAddressScreen.firstLocalAddress(of: host) {
                        return continuation.resume(returning:
                            "the playlist's segments are on \(host) (\(address)), a loopback or link-local address; refused by configuration")
                    }
                }
                continuation.resume(returning: nil)
            }
        }
    }

    private func keyName(_ token: String, uri: String) -> String {
        sessions.withLockedValue { $0.keyName(token: token, uri: uri) }
    }

    /// How fast the origin delivers: the first segment of the leanest allowed variant, fetched
    /// once (at most 4 MiB, 4 s). Nil when it cannot be measured. A handed-over playlist is asked
    /// of the sender (and kept there, so the player's own request for it is answered at once).
    private func probeBandwidth(_ master: MasterPlaylist, allowed: [Int], base: String, headers: [String: String],
                                sessionID: String) async -> Double? {
        guard let leanest = allowed.min(by: { master.variants[$0].bandwidth < master.variants[$1].bandwidth }) else { return nil }
        var options = self.options
        options.headers = headers
        options.timeout = 4
        let url = Self.absolute(master.variants[leanest].uri, base)
        let text: String?, playlistURL: String
        if url.lowercased().hasPrefix("mlhls://") {
            text = try? await requestPlaylist?(sessionID, url).get()
            playlistURL = url
        } else {
            let playlist = try? await HTTPClient.get(url, options: options)
            (text, playlistURL) = (playlist?.text, playlist?.finalURL ?? url)
        }
        guard let text, let media = try? CondensedPlaylist.parseMedia(text), let first = media.segments.first else { return nil }
        options.maximumBytes = 4 << 20
        let started = ContinuousClock.now
        guard let segment = try? await HTTPClient.get(Self.absolute(first.uri, playlistURL), options: options,
                                                       range: first.byteRange.flatMap(\.closedRange)),
              (200..<300).contains(segment.status), segment.body.count >= 1024 else { return nil }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Double(segment.body.count * 8) / seconds : nil
    }

    /// The alternate audio and subtitle renditions the player may use, and which is selected.
    public func renditions(_ url: String) -> [HLSRenditionInfo] {
        guard let token = Self.token(of: url) else { return [] }
        return sessions.withLockedValue { $0.renditions(token: token) }
    }

    /// Records a choice for a rendition type; true when the playback has such renditions (the
    /// caller then reloads the player at its position).
    public func select(_ url: String, type: String, choice: HLSRenditionChoice) -> Bool {
        guard let token = Self.token(of: url) else { return false }
        return sessions.withLockedValue { $0.select(token: token, type: type, choice: choice) }
    }

    // MARK: Trick play

    /// The URL the player opens for fast playback, when the playlist has an I-frame playlist
    /// the display can show; nil otherwise.
    public func trickURL(_ url: String) -> String? {
        guard let token = Self.token(of: url), let session = sessions.withLockedValue({ $0[token] }), let master = session.master,
              trickVariant(master) != nil else { return nil }
        return "http://\(playerOrigin.withLockedValue { $0 })/hls/\(token)/trick.m3u8"
    }

    /// The richest I-frame playlist within the display, and its index.
    func trickVariant(_ master: MasterPlaylist) -> (index: Int, attributes: AttributeList)? {
        master.iFrameVariants.enumerated().filter { _, list in
            guard let size = list["RESOLUTION"].flatMap(Resolution.init) else { return true }
            return size.width <= policy.maximumResolution.width && size.height <= policy.maximumResolution.height
        }.max { ($0.element.integer("BANDWIDTH") ?? 0) < ($1.element.integer("BANDWIDTH") ?? 0) }.map { ($0.offset, $0.element) }
    }

    /// A master whose one variant is the I-frame playlist, played as ordinary segments.
    private func trickMaster(_ token: String) -> AirPlayResponse {
        guard let session = sessions.withLockedValue({ $0[token] }), let master = session.master,
              let (index, list) = trickVariant(master), session.masterURL != nil, let uri = list["URI"] else {
            return Self.text(404, "this playback has no I-frame playlist")
        }
        sessions.withLockedValue { $0.nameTrickPlaylist(token: token, index: index, uri: uri) }
        var trick = MasterPlaylist()
        var attributes = AttributeList()
        for name in ["BANDWIDTH", "CODECS", "RESOLUTION", "VIDEO-RANGE"] {
            if let value = list[name] { attributes.attributes.append(.init(name: name, value: value, quoted: name == "CODECS")) }
        }
        trick.variants = [Variant(attributes: attributes, uri: "t\(index).m3u8")]
        logger.info("hls trick play", metadata: ["iframes": "\(index)"])
        return Self.playlist(trick.text)
    }

    /// The I-frame playlist with each I-frame as a chunk of its own (`c<n>.ts`), so players
    /// that only know ordinary segments can play it.
    private func trickPlaylist(_ token: String, name: String) async -> AirPlayResponse {
        var media: MediaPlaylist, base: String
        switch await fetchMedia(token, name: name) {
        case .success(let fetched): (media, base) = fetched
        case .failure(let response): return response
        }
        media = rewrite(media, base: base, token: token)
        media.iFramesOnly = false
        let first = sessions.withLockedValue { $0.addChunks(token: token, media.segments.map { ($0.uri, $0.byteRange) }) }
        media.segments = media.segments.enumerated().map { offset, segment in
            var segment = segment
            segment.uri = "c\(first + offset).ts"
            segment.byteRange = nil
            return segment
        }
        return Self.playlist(media.text)
    }

    /// One I-frame: its resource's leading PSI packets (so a demuxer knows the streams), then
    /// its byte range.
    private func chunk(_ token: String, name: String) async -> AirPlayResponse {
        guard let index = Int(name.dropFirst()), index >= 0, let session = sessions.withLockedValue({ $0[token] }),
              index < session.chunks.count else { return Self.text(404, "no chunk \(name) in this playback") }
        let (url, range) = session.chunks[index]
        var options = self.options
        options.headers = session.headers
        do {
            var psi = session.psi[url]
            if psi == nil, (range?.offset ?? 0) > 0 {
                let head = try await HTTPClient.get(url, options: options, range: 0...(188 * 16 - 1))
                psi = Self.leadingPSI(head.body)
                sessions.withLockedValue { $0.cache(token: token, psi: psi, for: url) }
            }
            let frame = try await HTTPClient.get(url, options: options, range: range?.closedRange)
            guard (200..<300).contains(frame.status) else { return fail(token, 502, "\(url) answered \(frame.status)") }
            var buffer = ByteBuffer()
            if (range?.offset ?? 0) > 0 { buffer.writeBytes(psi ?? []) }
            buffer.writeBytes(frame.body)
            return AirPlayResponse(status: 200, headers: ["Content-Type": "video/mp2t"], body: buffer)
        } catch {
            return fail(token, 502, error.message)
        }
    }

    // MARK: Keys

    private func key(_ token: String, name: String) async -> AirPlayResponse {
        guard let index = Int(name.dropFirst()), index >= 0, let session = sessions.withLockedValue({ $0[token] }),
              index < session.keys.count else {
            return Self.text(404, "no key \(name) in this playback")
        }
        let uri = session.keys[index]
        if let cached = session.keyCache[uri] { return Self.key(cached) }
        let bytes: [UInt8]
        if HTTPClient.isFetchable(uri) {
            var options = self.options
            options.headers = session.headers
            options.maximumBytes = 1024
            let result: HTTPResult
            do {
                result = try await HTTPClient.get(uri, options: options)
            } catch {
                return fail(token, 502, "key \(uri): \(error.message)")
            }
            guard (200..<300).contains(result.status) else {
                let hint = result.status == 401 || result.status == 403 ? " (the sender's cookies or headers are missing or refused)" : ""
                return fail(token, 502, "key \(uri) answered \(result.status)\(hint)")
            }
            bytes = result.body
        } else {
            guard let requestKey else { return fail(token, 502, "key \(uri): custom-scheme keys need the sender, and none can be asked") }
            switch await requestKey(session.sessionID, uri) {
            case .success(let key): bytes = key
            case .failure(let error): return fail(token, 502, "key \(uri): \(error.message)")
            }
        }
        guard bytes.count == 16 else { return fail(token, 502, "key \(uri) is \(bytes.count) bytes, not the 16 of AES-128") }
        sessions.withLockedValue { $0.cache(token: token, key: bytes, for: uri) }
        logger.info("hls key fetched", metadata: ["key": "\(index)", "scheme": "\(URLComponents(string: uri)?.scheme ?? "?")"])
        return Self.key(bytes)
    }

    // MARK: Helpers

    /// A fetched playlist's text and final URL, or the response that tells the player why not.
    enum Fetched {
        case success((String, String))
        case failure(AirPlayResponse)
    }

    /// A parsed media playlist and the URL its URIs resolve against, or the response saying why not.
    enum FetchedMedia {
        case success((MediaPlaylist, String))
        case failure(AirPlayResponse)
    }

    /// The media playlist behind a gateway name (`v3`, `r1`, `t0`…), fetched from the origin and parsed.
    private func fetchMedia(_ token: String, name: String) async -> FetchedMedia {
        guard let session = sessions.withLockedValue({ $0[token] }), let origin = session.media[name] else {
            return .failure(Self.text(404, "no playlist \(name) in this playback"))
        }
        switch await fetchText(origin, headers: session.headers, token: token) {
        case .failure(let response):
            return .failure(response)
        case .success(let (text, base)):
            let media: MediaPlaylist
            do {
                // YouTube's condensed segment lines expanded (any other playlist is as parsed).
                media = try CondensedPlaylist.parseMedia(text)
            } catch {
                return .failure(fail(token, 502, "\(origin) is not a valid media playlist: \(error)"))
            }
            if let refusal = PlaylistProtection.refusal(media: media) { return .failure(fail(token, 415, refusal)) }
            return .success((media, base))
        }
    }

    private func fetchText(_ url: String, headers: [String: String], token: String) async -> Fetched {
        if url.lowercased().hasPrefix("mlhls://") {
            // Only the sender's phone reaches it: asked over FCUP, relative URIs resolving against it.
            guard let requestPlaylist, let session = sessions.withLockedValue({ $0[token] }) else {
                return .failure(fail(token, 502, "\(url.prefix(200)): only the sender can fetch it, and it cannot be asked"))
            }
            switch await requestPlaylist(session.sessionID, url) {
            case .success(let text): return .success((text, url))
            case .failure(let error): return .failure(fail(token, error.status, error.reason))
            }
        }
        var options = self.options
        options.headers = headers
        do {
            let result = try await HTTPClient.get(url, options: options)
            guard (200..<300).contains(result.status) else { return .failure(fail(token, 502, "\(url) answered \(result.status)")) }
            guard let text = result.text else { return .failure(fail(token, 502, "\(url) is not UTF-8 text")) }
            return .success((text, result.finalURL))
        } catch {
            return .failure(fail(token, 502, error.message))
        }
    }

    func fail(_ token: String, _ status: Int, _ reason: String) -> AirPlayResponse {
        sessions.withLockedValue { $0.fail(token: token, reason: reason) }
        logger.notice("hls gateway", metadata: ["error": "\(reason)"])
        return Self.text(status, reason)
    }

    static func absolute(_ uri: String, _ base: String) -> String { PlaylistURI.resolve(uri, against: base) }

    static func describe(_ variant: VariantDescription) -> String {
        "\(variant.peakBitRate) b/s" + (variant.video?.resolution.map { " \($0)" } ?? "") + (variant.video.map { " \($0.codec) \($0.range.rawValue)" } ?? "")
    }

    static func playlist(_ text: String) -> AirPlayResponse {
        var buffer = ByteBuffer()
        buffer.writeString(text)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/vnd.apple.mpegurl", "Cache-Control": "no-cache"],
                               body: buffer)
    }

    static func key(_ bytes: [UInt8]) -> AirPlayResponse {
        var buffer = ByteBuffer()
        buffer.writeBytes(bytes)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/octet-stream", "Cache-Control": "no-store"], body: buffer)
    }

    static func text(_ status: Int, _ reason: String) -> AirPlayResponse { AirPlayResponse.text(status: status, reason) }
}
