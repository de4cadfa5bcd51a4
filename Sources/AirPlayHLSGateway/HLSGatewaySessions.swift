import AirPlayHLS
import AirPlayReceiver

/// The HLS gateway's playbacks as a value: what each one was opened with, the names the player
/// reads (`v3.m3u8`, `r1.m3u8`, `k0.key`, `c12.ts`…) and what they stand for, which variant
/// plays, the rendition choices, and the figures `/playback-info` reports. Every decision that
/// needs no I/O is made here, tested without a network (`HLSGatewaySessionsTests`); `HLSGateway`
/// fetches, parses and answers the player.
struct HLSGatewaySessions: Sendable {
    /// One playback, by its token.
    struct Session: Sendable {
        /// Rendition choices, by TYPE.
        var selection: [String: HLSRenditionChoice] = [:]
        /// The playlist the sender asked to play.
        var origin: String
        /// The sender's headers (cookies, authorization) for every fetch.
        var headers: [String: String]
        /// The sender's `X-Apple-Session-ID`, for key requests over its event channel.
        var sessionID: String
        /// The master playlist as last read, and the URL it came from.
        var master: MasterPlaylist?
        var masterURL: String?
        /// Gateway name (`v3`, `r1`, `i0`, `t0`, `m`) → origin URL.
        var media: [String: String] = [:]
        /// `k<n>` → key URI.
        var keys: [String] = []
        /// Keys fetched, by URI.
        var keyCache: [String: [UInt8]] = [:]
        /// Trick-play chunks (`c<n>.ts`): a resource and the byte range of one I-frame.
        var chunks: [(url: String, range: ByteRange?)] = []
        /// The leading PSI packets (PAT, PMT, SDT) of a transport stream resource, by URL.
        var psi: [String: [UInt8]] = [:]
        /// Resources the gateway fetches for the player (`s<n>`, with `video_refuse_local_urls`):
        /// by number, and each URL's number, so a live playlist's reloads keep their names.
        var proxied: [Int: String] = [:]
        var proxiedNumbers: [String: Int] = [:]
        var nextProxied = 0
        /// What `/playback-info` and the log report.
        var figures = HLSFigures(variants: 0, allowed: [], refused: [:])
    }

    /// A master playlist as the player gets it.
    struct ServedMaster: Sendable {
        /// The rewritten master: allowed variants only, the start variant first, names for URIs.
        var playlist: MasterPlaylist
        /// The variant listed first, when the bandwidth chose one.
        var start: Int?
    }

    private(set) var sessions: [String: Session] = [:]

    /// The playback behind a token.
    subscript(token: String) -> Session? { sessions[token] }

    /// Starts a playback.
    mutating func open(token: String, origin: String, headers: [String: String], sessionID: String) {
        sessions[token] = Session(origin: origin, headers: headers, sessionID: sessionID)
    }

    /// Ends a playback.
    mutating func close(token: String) { sessions[token] = nil }

    /// Notes a failure for the error report.
    mutating func fail(token: String, reason: String) { sessions[token]?.figures.error = reason }

    /// A media playlist played directly (no master): its URIs resolve against `base`.
    mutating func servedMediaDirectly(token: String, base: String) { sessions[token]?.media["m"] = base }

    /// Rewrites a master playlist for the player: only the `allowed` variants (`refused` says
    /// why the others are not), the sender's rendition choices applied, every URI replaced by a
    /// gateway name, and the variant the `measured` bandwidth allows listed first (players start
    /// with the first one). A master that differs from the last one read (a rendition switch)
    /// forgets the old names and which variant played.
    mutating func serveMaster(token: String, master: MasterPlaylist, base: String, allowed: [Int], refused: [Int: String],
                              measured: Double?, preferred: [String: HLSRenditionChoice] = [:]) -> ServedMaster? {
        guard var session = sessions[token] else { return nil }
        var served = master.keeping(variants: allowed)
        // The sender's choices first, then the box's languages.
        let selection = preferred.merging(session.selection) { $1 }
        (served.renditions, served.variants) = HLSGateway.apply(selection, renditions: served.renditions, variants: served.variants)
        var names: [String: String] = [:]
        served.variants = zip(allowed.sorted(), served.variants).map { index, variant in
            names["v\(index)"] = HLSGateway.absolute(variant.uri, base)
            return Variant(attributes: variant.attributes, uri: "v\(index).m3u8")
        }
        let start = HLSGateway.startVariant(master, allowed: allowed, bandwidth: measured)
        var listedFirst: Int?
        if let start, let position = served.variants.firstIndex(where: { $0.uri == "v\(start).m3u8" }) {
            served.variants.insert(served.variants.remove(at: position), at: 0)
            session.figures.measuredBandwidth = measured
            listedFirst = start
        }
        served.renditions = served.renditions.enumerated().map { index, rendition in
            var attributes = rendition.attributes
            if let uri = attributes["URI"] {
                names["r\(index)"] = HLSGateway.absolute(uri, base)
                attributes["URI"] = "r\(index).m3u8"
            }
            return Rendition(attributes: attributes)
        }
        served.iFrameVariants = served.iFrameVariants.enumerated().map { index, list in
            var list = list
            if let uri = list["URI"] {
                names["i\(index)"] = HLSGateway.absolute(uri, base)
                list["URI"] = "i\(index).m3u8"
            }
            return list
        }
        if session.master != master {
            session.figures.current = nil
            session.figures.currentDescription = nil
            session.media = [:]
        }
        session.master = master
        session.masterURL = base
        session.media.merge(names) { $1 }
        session.figures.variants = master.variants.count
        session.figures.allowed = allowed
        session.figures.refused = refused
        sessions[token] = session
        return ServedMaster(playlist: served, start: listedFirst)
    }

    /// The player read variant `index`'s playlist: that variant plays. Returns its description
    /// when this is a change (for the log), nil otherwise.
    mutating func variantRequested(token: String, index: Int) -> VariantDescription? {
        guard var session = sessions[token], session.figures.current != index, let master = session.master,
              master.variants.indices.contains(index) else { return nil }
        session.figures.current = index
        session.figures.currentDescription = VariantDescription(master, index: index)
        sessions[token] = session
        return session.figures.currentDescription
    }

    /// The gateway name (`k<n>`) of a key URI, the same for the same URI.
    mutating func keyName(token: String, uri: String) -> String {
        guard var session = sessions[token] else { return "k0" }
        if let index = session.keys.firstIndex(of: uri) { return "k\(index)" }
        session.keys.append(uri)
        sessions[token] = session
        return "k\(session.keys.count - 1)"
    }

    /// Keeps a fetched key.
    mutating func cache(token: String, key: [UInt8], for uri: String) { sessions[token]?.keyCache[uri] = key }

    /// Records a rendition choice; true when the playback has such renditions (the player is
    /// then reloaded at its position).
    mutating func select(token: String, type: String, choice: HLSRenditionChoice) -> Bool {
        guard var session = sessions[token], let master = session.master else { return false }
        let exists = master.renditions.contains { $0.type == type && (choice.matches($0) || (choice.language == nil && choice.name == nil)) }
        guard exists else { return false }
        session.selection[type] = choice
        sessions[token] = session
        return true
    }

    /// The alternate audio and subtitle renditions of the variant that plays, and which is selected.
    func renditions(token: String) -> [HLSRenditionInfo] {
        guard let session = sessions[token], let master = session.master else { return [] }
        let kept = master.keeping(variants: session.figures.allowed)
        let current = session.figures.current.flatMap { master.variants.indices.contains($0) ? master.variants[$0] : nil } ?? kept.variants.first
        return kept.renditions.filter { ($0.type == "AUDIO" && $0.groupID == current?.audioGroup)
            || ($0.type == "SUBTITLES" && $0.groupID == current?.subtitlesGroup) }.map { rendition in
            let selected: Bool
            if let choice = session.selection[rendition.type] {
                selected = choice.matches(rendition)
            } else {
                selected = rendition.type == "AUDIO" ? rendition.isDefault : false
            }
            return HLSRenditionInfo(type: rendition.type, group: rendition.groupID, name: rendition.name,
                                            language: rendition.language, selected: selected)
        }
    }

    /// Names I-frame playlist `index` (`t<index>`) for trick play.
    mutating func nameTrickPlaylist(token: String, index: Int, uri: String) {
        guard let base = sessions[token]?.masterURL else { return }
        sessions[token]?.media["t\(index)"] = HLSGateway.absolute(uri, base)
    }

    /// Adds a trick playlist's I-frames as chunks; returns the number of the first.
    mutating func addChunks(token: String, _ chunks: [(url: String, range: ByteRange?)]) -> Int {
        let first = sessions[token]?.chunks.count ?? 0
        sessions[token]?.chunks += chunks
        return first
    }

    /// Resources named for proxying at once per playback: a live playlist names new segments
    /// for hours, the player only ever wants the last few hundred.
    static let maximumProxied = 4096

    /// The gateway name (`s<n>`) the player fetches `url` by, the same for the same URL; the
    /// oldest names are forgotten past `maximumProxied`.
    mutating func proxiedName(token: String, url: String) -> String {
        guard var session = sessions[token] else { return "s0" }
        if let number = session.proxiedNumbers[url] { return "s\(number)" }
        let number = session.nextProxied
        session.nextProxied += 1
        session.proxied[number] = url
        session.proxiedNumbers[url] = number
        if let forgotten = session.proxied.removeValue(forKey: number - Self.maximumProxied) {
            session.proxiedNumbers[forgotten] = nil
        }
        sessions[token] = session
        return "s\(number)"
    }

    /// Keeps a resource's leading PSI packets.
    mutating func cache(token: String, psi: [UInt8]?, for url: String) { sessions[token]?.psi[url] = psi }
}
