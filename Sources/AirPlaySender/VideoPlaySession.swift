import AirPlayHLS
import AirPlayWire
import Foundation

/// One `airplay play`: a URL played on a receiver as it is, or a local file or HLS folder
/// served from this machine, or the one variant of an HLS master a qualifier picks (served as
/// a master with only that variant); then, when asked to or when the media is served from
/// here, the receiver's events until it stops. The command that runs it only prints.
public struct VideoPlaySession: Sendable {
    /// What to play and how.
    public struct Request: Sendable {
        /// An http(s) URL, a media file, or a folder with an .m3u8 playlist.
        public var media: String
        /// Seconds to start at.
        public var start: Double
        /// For an HLS master playlist: the qualifier choosing the variant, and its text.
        public var prefer: (qualifier: VariantQualifier, text: String)?
        /// HTTP headers for the sender's own playlist fetches and the receiver's.
        public var headers: [String: String]
        /// CA file for the sender's HTTPS fetches.
        public var caFile: String?
        /// Answers custom-scheme key requests the receiver sends over the event channel.
        public var keys: KeyProvider?
        /// Wait for the receiver's `stopped` event (always done for media served from here).
        public var wait: Bool
        /// How the receiver gets a local HLS video's playlists: as URLs on this machine's media
        /// server, or handed over as an iPhone does (`mlhls://`, each asked for over FCUP), or
        /// by what the receiver says it takes (`auto`).
        public var playlists: PlaylistDelivery = .auto

        /// A request from its parts.
        public init(media: String, start: Double = 0, prefer: (qualifier: VariantQualifier, text: String)? = nil,
                    headers: [String: String] = [:], caFile: String? = nil, keys: KeyProvider? = nil, wait: Bool = false) {
            self.media = media
            self.start = start
            self.prefer = prefer
            self.headers = headers
            self.caFile = caFile
            self.keys = keys
            self.wait = wait
        }
    }

    /// How a local HLS video's playlists reach the receiver.
    public enum PlaylistDelivery: String, Sendable, CaseIterable {
        /// `fcup` where the receiver takes a video handed over as an iPhone hands it
        /// (`handOverChoice`), else `url`.
        case auto
        /// `http://` URLs on this machine's media server (any receiver).
        case url
        /// Handed over as an iPhone's YouTube app does: `mlhls://localhost/…`, each playlist asked
        /// for over FCUP on the event channel (UxPlay, Apple TVs, airplayd).
        case fcup

        /// What `auto` picks for a receiver with `features`: `fcup` where it plays video and HLS
        /// (bits 0 and 4) and takes the session an iPhone opens (FairPlay setup, bit 14, or
        /// AirPlay 2's pairing, bit 38 or 48), as UxPlay (`-hls`), Apple TVs and airplayd do;
        /// else `url`: Kodi advertises 0 and 4 with neither and plays HLS by URL only.
        public static func handOverChoice(for features: FeatureSet) -> PlaylistDelivery {
            let phoneSession = !features.intersection([.fairPlayAuthentication, .unifiedMediaControl, .coreUtilsPairing]).isEmpty
            return features.isSuperset(of: [.video, .videoHTTPLiveStreams]) && phoneSession ? .fcup : .url
        }
    }

    /// What the session tells its owner while it runs.
    public enum Report: Sendable {
        /// `prefer` chose this variant (index, URI, peak bit rate).
        case variant(index: Int, uri: String, peakBitRate: Int)
        /// The receiver accepted `/play`.
        case playing(url: String, sessionID: String)
        /// A state event from the receiver.
        case event(String)
    }

    private let address: ReceiverAddress
    private let connection: ReceiverConnection
    private let airPlay2: Bool

    /// A session on a connected receiver; `airPlay2` plays the AirPlay 2 way (the connection
    /// must be encrypted by a pairing), except with a key provider, which needs `/reverse`.
    public init(address: ReceiverAddress, connection: ReceiverConnection, airPlay2: Bool = false) {
        self.address = address
        self.connection = connection
        self.airPlay2 = airPlay2
    }

    /// Plays `request`; returns once `/play` is accepted, or, when waiting, once the receiver
    /// says `stopped` (throwing when it reports a playback error).
    public func run(_ request: Request, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) {
        let sessionID = UUID().uuidString
        let remote = VideoRemote(connection: connection, sessionID: sessionID)
        if try await delivery(of: request) == .fcup { return try await runHandOver(request, remote: remote, report: report) }
        let (url, server) = try await resolve(request, report: report)
        let waiting = request.wait || server != nil || request.keys != nil
        if airPlay2, request.keys == nil {
            try await runAirPlay2(url: url, request: request, remote: remote, waiting: waiting, report: report)
            await server?.close()
            return
        }
        let ended = EndSignal()
        let listener: EventListener? = waiting ? try await EventListener.open(
            host: address.host, port: address.port, sessionID: sessionID, keys: request.keys) { event in
            let state = event["state"]?.stringValue ?? "?"
            report(.event(state))
            if state == "stopped" { ended.fire() }
        } : nil
        try await remote.play(url: url, startSeconds: request.start, httpHeaders: request.headers)
        report(.playing(url: url, sessionID: sessionID))
        guard let listener else { return }
        await ended.wait()
        await listener.close()
        let info = try? await remote.playbackInfo()
        await server?.close()
        if let error = info?.error { throw SenderError(.refused(status: 0), "playback failed: \(error)") }
    }

    /// How `request`'s playlists go: as asked, or for `auto`, handed over (FCUP) when the media is
    /// a local HLS playlist and the receiver takes it so (`handOverChoice`, from its TXT record
    /// when it was discovered, else from `GET /info` on a connection of its own, as iOS asks);
    /// a receiver that does not say gets URLs, as does a qualifier or a key command, which only
    /// that path knows.
    private func delivery(of request: Request) async throws(SenderError) -> PlaylistDelivery {
        guard request.playlists == .auto else { return request.playlists }
        guard request.prefer == nil, request.keys == nil, Self.isLocalHLSPlaylist(request.media) else { return .url }
        if let features = ReceiverLinks.videoFeatures(of: address) { return .handOverChoice(for: features) }
        guard case .said(let info) = await ReceiverConnection.probeInfo(host: address.host, port: address.port) else { return .url }
        return .handOverChoice(for: info.features)
    }

    /// Whether `media` is a local `.m3u8` file, or a folder whose playlist is one.
    static func isLocalHLSPlaylist(_ media: String) -> Bool {
        if let scheme = URLComponents(string: media)?.scheme, ["http", "https"].contains(scheme.lowercased()) { return false }
        return (try? localMedia(media))?.file.pathExtension.lowercased() == "m3u8"
    }

    /// A local HLS video handed over as an iPhone does: the event channel first (the receiver
    /// asks for the playlists on it), `/play` of `mlhls://localhost/…` in a binary plist, each
    /// playlist request answered with `POST /action`, until the receiver says `stopped`.
    private func runHandOver(_ request: Request, remote: VideoRemote, report: @escaping @Sendable (Report) -> Void) async throws(SenderError) {
        if let components = URLComponents(string: request.media), let scheme = components.scheme, ["http", "https"].contains(scheme.lowercased()) {
            throw SenderError(.badInput, "--playlists fcup hands over a local HLS file or folder, not a URL")
        }
        let (file, root) = try Self.localMedia(request.media)
        guard file.pathExtension.lowercased() == "m3u8" else {
            throw SenderError(.badInput, "--playlists fcup hands over an HLS playlist (.m3u8), not \(file.lastPathComponent)")
        }
        let server = try await serve(root, what: request.media)
        let playlists = HandOverPlaylists(root: root, httpRoot: server.url(for: root, host: try localAddress()))
        let ended = EndSignal()
        let listener = try await EventListener.open(host: address.host, port: address.port, sessionID: remote.sessionID,
                                                    keys: request.keys) { event in
            if let asked = try? FCUPRequest(event: event) {
                Task { try? await remote.action(.unhandledURLResponse(playlists.answer(asked))) }
                return
            }
            let state = event["state"]?.stringValue ?? "?"
            report(.event(state))
            if state == "stopped" { ended.fire() }
        }
        let url = playlists.handOverURL(for: file)
        do {
            try await remote.play(url: url, startSeconds: request.start, httpHeaders: request.headers, format: .binary)
        } catch {
            await listener.close()
            await server.close()
            throw error
        }
        report(.playing(url: url, sessionID: remote.sessionID))
        // Receivers that send no state events (UxPlay) are asked once a second instead.
        let watcher = Task {
            var started = false, failures = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let info = try? await remote.playbackInfo() else {
                    // A receiver that closed the session's connection after the end.
                    failures += 1
                    if started, failures >= 3 { break }
                    continue
                }
                failures = 0
                if info.state != "stopped" { started = true }
                if started, info.state == "stopped" { break }
            }
            ended.fire()
        }
        await ended.wait()
        watcher.cancel()
        await listener.close()
        let info = try? await remote.playbackInfo()
        await server.close()
        if let error = info?.error { throw SenderError(.refused(status: 0), "playback failed: \(error)") }
    }

    /// AirPlay 2: SETUP phase 1 and its event channel, RECORD, then `/play` with a binary
    /// plist on the same encrypted connection. There is no `/reverse`: when waiting, the state
    /// comes from `/playback-info` each second (as pyatv does), and `POST /feedback` every 2 s
    /// keeps the session alive.
    private func runAirPlay2(url: String, request: Request, remote: VideoRemote, waiting: Bool,
                             report: @escaping @Sendable (Report) -> Void) async throws(SenderError) {
        let rtsp = RAOPClient(connection: connection, identity: RAOPClientIdentity(), password: nil)
        let session = try await AirPlay2SenderSession.start(client: rtsp, timingPort: nil)
        try await rtsp.request("RECORD")
        try await remote.play(url: url, startSeconds: request.start, httpHeaders: request.headers, format: .binary)
        report(.playing(url: url, sessionID: remote.sessionID))
        guard waiting else { return }
        var last = "", started = false
        for second in 1... {
            try? await Task.sleep(for: .seconds(1))
            if second % 2 == 0 { _ = try? await rtsp.request("POST", target: "/feedback") }
            let info = try await remote.playbackInfo()
            if info.state != last {
                last = info.state
                report(.event(info.state))
            }
            if let error = info.error { throw SenderError(.refused(status: 0), "playback failed: \(error)") }
            if info.state != "stopped" { started = true }
            if started, info.state == "stopped" { break }
            if !started, second >= 30 { throw SenderError(.refused(status: 0), "the receiver did not start playing within 30 s") }
        }
        await session.close()
    }

    /// The URL the receiver gets, and the server that serves it from here, if one does.
    private func resolve(_ request: Request, report: @Sendable (Report) -> Void) async throws(SenderError)
        -> (url: String, server: MediaFileServer?) {
        let media = request.media
        if let (qualifier, text) = request.prefer {
            // Serve a master playlist with only the chosen variant (and its renditions), its
            // URIs made absolute, so the receiver plays exactly that.
            let (playlist, base) = try await HLSSource.load(media, headers: request.headers, caFile: request.caFile)
            guard case .master(let master) = playlist else {
                throw SenderError(.badInput, "--prefer needs a master playlist; \(media) is a media playlist")
            }
            guard let chosen = VariantQualifier.best(VariantDescription.all(master), matching: qualifier) else {
                throw SenderError(.badInput, "no variant of \(media) matches \(text)")
            }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airplay-\(UUID().uuidString.prefix(8))")
            let file = folder.appendingPathComponent("master.m3u8")
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try master.absolutized(against: base).keeping(variants: [chosen.index]).text.write(to: file, atomically: true, encoding: .utf8)
            } catch {
                throw SenderError(.badInput, "cannot write the selected playlist: \(error)")
            }
            let server = try await serve(folder, what: "the selected playlist")
            report(.variant(index: chosen.index, uri: chosen.variant.uri, peakBitRate: chosen.peakBitRate))
            return (server.url(for: file, host: try localAddress()), server)
        }
        if let components = URLComponents(string: media), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" {
            return (media, nil)
        }
        let (file, root) = try Self.localMedia(media)
        let server = try await serve(root, what: media)
        return (server.url(for: file, host: try localAddress()), server)
    }

    private func localAddress() throws(SenderError) -> String {
        guard let local = connection.localAddress?.ipAddress else {
            throw SenderError(.connectionLost, "cannot tell which local address reaches the receiver")
        }
        return local
    }

    private func serve(_ root: URL, what: String) async throws(SenderError) -> MediaFileServer {
        let host = try localAddress()
        do {
            return try await MediaFileServer.start(root: root, host: host)
        } catch {
            throw SenderError(.badInput, "cannot serve \(what): \(error)")
        }
    }

    /// The file to play and the folder to serve.
    static func localMedia(_ path: String) throws(SenderError) -> (file: URL, root: URL) {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw SenderError(.badInput, "\(path) is neither an http(s) URL nor an existing file")
        }
        if isDirectory.boolValue {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
            let playlist = names.first { ["master.m3u8", "index.m3u8", "playlist.m3u8"].contains($0) }
                ?? names.first { $0.hasSuffix(".m3u8") }
            guard let playlist else { throw SenderError(.badInput, "\(path) is a folder without an .m3u8 playlist") }
            return (url.appendingPathComponent(playlist), url)
        }
        guard MediaFileServer.mimeTypes[url.pathExtension.lowercased()] != nil else {
            throw SenderError(.badInput, "\(path): .\(url.pathExtension) is not a media type AirPlay plays")
        }
        return (url, url.deletingLastPathComponent())
    }
}

/// A one-shot signal between an event callback and the waiting session.
final class EndSignal: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var fired = false

    func fire() {
        let waiting = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            fired = true
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = lock.withLock { () -> Bool in
                if fired { return true }
                self.continuation = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
