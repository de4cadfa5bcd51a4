import AirPlayMedia
import AirPlayPlist
import AirPlayWire
import FoundationEssentials
import Glibc

/// A decoded `POST /play`: the rules are written down in `Protocol/video.md`.
public struct PlayRequest: Hashable, Sendable {
    /// The media URL (`Content-Location`).
    public var url: String
    /// Where to start.
    public var start: StartPosition
    /// 0 starts paused; nil or anything else plays.
    public var rate: Double?
    /// The sender's session (`X-Apple-Session-ID` header, else body key).
    public var sessionID: String?
    /// Headers for the receiver's own requests for this media's playlists and keys (cookies,
    /// authorization): our extension key `httpHeaders` in a plist body (Protocol/video.md).
    public var httpHeaders: [String: String] = [:]
    /// The item's `uuid` (an iPhone names each item of its queue; `playlistRemove` names it back).
    public var itemID: String?
    /// The app that sent it (`clientProcName`: `YouTube`, `MobileSafari`), for the log.
    public var clientName: String?

    /// A request from its parts.
    public init(url: String, start: StartPosition = .seconds(0), rate: Double? = nil, sessionID: String? = nil) {
        self.url = url
        self.start = start
        self.rate = rate
        self.sessionID = sessionID
    }

    /// Why a `/play` was refused: status and reason.
    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// The HTTP status.
        public var status: Int
        /// The reason, sent as the body.
        public var reason: String
        /// The reason.
        public var description: String { reason }
    }

    /// Decodes a `/play` request: a binary or XML plist body, or `text/parameters` lines
    /// (`Key: value`, LF or CRLF, with or without a Content-Type).
    public init(request: AirPlayRequest) throws(Problem) {
        let bytes = Array(request.body.readableBytesView)
        let contentType = request.headers["Content-Type"]?.lowercased() ?? ""
        var fields: [String: String] = [:]
        let looksLikePlist = bytes.starts(with: Array("bplist".utf8)) || bytes.starts(with: Array("<?xml".utf8))
            || contentType.contains("plist")
        if looksLikePlist {
            guard case .dictionary(let dictionary)? = try? PropertyList(decoding: bytes) else {
                throw Problem(status: 400, reason: "the /play body is not a valid property list dictionary")
            }
            for (key, value) in dictionary {
                if let text = value.stringValue { fields[key.lowercased()] = text }
                if let number = value.doubleValue { fields[key.lowercased()] = String(number) }
            }
            if case .dictionary(let headers)? = dictionary["httpHeaders"] {
                guard headers.count <= 32 else { throw Problem(status: 400, reason: "httpHeaders may hold at most 32 headers") }
                for (name, value) in headers {
                    // Header injection is refused: no line breaks, bounded sizes.
                    guard let text = value.stringValue, name.utf8.count <= 128, text.utf8.count <= 4096,
                          !name.contains(where: { $0.isNewline || $0 == ":" }), !text.contains(where: \.isNewline) else {
                        throw Problem(status: 400, reason: "httpHeaders must map header names to single-line strings")
                    }
                    httpHeaders[name] = text
                }
            }
        } else {
            guard let text = String(bytes: bytes, encoding: .utf8) else {
                throw Problem(status: 400, reason: "the /play body is not UTF-8 text/parameters")
            }
            for line in TextParameters(parsing: Array(text.utf8)).lines {
                if let value = line.value { fields[line.name.lowercased()] = value }
            }
        }

        guard let location = fields["content-location"], !location.isEmpty else {
            throw Problem(status: 400, reason: "Content-Location is missing")
        }
        url = location
        if let text = fields["start-position-seconds"] {
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
                throw Problem(status: 400, reason: "Start-Position-Seconds must be a number of seconds >= 0")
            }
            start = .seconds(seconds)
        } else if let text = fields["start-position"] {
            guard let value = Double(text), value.isFinite, value >= 0 else {
                throw Problem(status: 400, reason: "Start-Position must be a number >= 0")
            }
            // The classic value is a fraction of the duration; senders that put seconds here
            // (pyatv does) send values above 1, which no fraction can have.
            start = value <= 1 ? .fraction(value) : .seconds(value)
        } else {
            start = .seconds(0)
        }
        if let text = fields["rate"] {
            guard let value = Double(text), value.isFinite else { throw Problem(status: 400, reason: "rate must be a number") }
            rate = value
        } else {
            rate = nil
        }
        sessionID = request.headers["X-Apple-Session-ID"] ?? fields["x-apple-session-id"]
        itemID = fields["uuid"].flatMap { $0.utf8.count <= 128 ? $0 : nil }
        clientName = fields["clientprocname"].map { String($0.prefix(64)) }
    }
}

/// Where a media URL leads, looked up before anything fetches it: name lookups and HTTP, so
/// the daemon hands one in (`HTTPMediaURLScreen` in `AirPlayHLSGateway`).
public protocol MediaURLScreen: Sendable {
    /// The first loopback, link-local or unspecified address `host` resolves to, if any.
    func firstLocalAddress(of host: String) -> String?
    /// Where `url`'s redirects lead, each hop screened as it connects: nil when it cannot be
    /// told (unreachable, refused for another reason: the player tries and reports it).
    /// Throws when a hop leads to a loopback or link-local address.
    func finalURL(of url: String, headers: [String: String]) throws(MediaURLScreenRefusal) -> String?
}

/// A redirect that led to the box itself or its link.
public struct MediaURLScreenRefusal: Error, Hashable, Sendable {
    /// A refusal.
    public init() {}
}

/// Checks a media URL before anything fetches it.
public struct MediaURLPolicy: Sendable {
    /// With a screen, hosts that resolve to loopback or link-local addresses are refused
    /// (`video_refuse_local_urls`); without, any http(s) URL with a host is played.
    public var screen: (any MediaURLScreen)?
    /// Whether loopback and link-local targets are refused.
    public var refuseLocalTargets: Bool { screen != nil }

    /// A policy refusing local targets when given a screen.
    public init(refusingLocalTargetsWith screen: (any MediaURLScreen)?) {
        self.screen = screen
    }

    /// The URL the player should open for `url` (already `check`ed). With a screen, a
    /// progressive URL's redirects are followed here, each hop screened as it connects, and the
    /// player, which follows none, gets where they lead; a redirect to the box is refused. HLS
    /// playlists are left to the gateway, which screens every fetch of its own. Blocking (name
    /// lookups and a request): never on an event loop.
    public func destination(of url: String, headers: [String: String]) throws(PlayRequest.Problem) -> String {
        guard let screen, !PlaylistURL.isPlaylist(url) else { return url }
        do {
            return try screen.finalURL(of: url, headers: headers) ?? url
        } catch {
            throw PlayRequest.Problem(status: 400, reason: "\(url.prefix(200)) redirects to a loopback or link-local address; refused by configuration")
        }
    }

    /// Throws with a 400 reason for anything but an absolute http(s) URL with a host,
    /// and, when configured, for loopback and link-local targets.
    public func check(_ text: String) throws(PlayRequest.Problem) {
        guard text.utf8.count <= 8192, let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased() else {
            throw PlayRequest.Problem(status: 400, reason: "Content-Location is not a valid URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw PlayRequest.Problem(status: 400, reason: "only http and https URLs are played, not \(scheme):")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PlayRequest.Problem(status: 400, reason: "the URL has no host")
        }
        if let screen, let address = screen.firstLocalAddress(of: host) {
            throw PlayRequest.Problem(status: 400, reason: "\(host) resolves to \(address), a loopback or link-local address; refused by configuration")
        }
    }
}
