import AirPlayWire

/// One receiver's session from the end of its setup to TEARDOWN, as a pure machine: which
/// request each of the running session's commands sends (RECORD and FLUSH at an RTP point, a
/// rate anchor, the volume, the keep-alive, metadata, TEARDOWN), and what a reply changes. It
/// never touches a socket; `ReceiverLink.perform` carries its actions out over the network and
/// the in-memory tier carries them out against the receiver's own machine.
///
/// The keep-alive is `POST /feedback` (what AirPlay 2 receivers and shairport-sync answer);
/// once a receiver refuses it (AirPort-era and other RAOP receivers answer 4xx or 501), the
/// volume is sent again instead, for the rest of the session.
package struct SenderSessionMachine: Sendable {
    /// What the session is asked to do.
    package enum Command: Hashable, Sendable {
        /// Play from this RTP point (the start, every resume).
        case record(RTPInfo)
        /// Pause: the receiver drops what it holds from this RTP point on.
        case flush(RTPInfo)
        /// Buffered: play from this anchor, or pause (rate 0).
        case anchor(RateAnchor)
        /// The volume, in AirPlay dB (-30…0, -144 mutes).
        case setVolume(decibels: Double)
        /// Keeps the session alive (the volume it falls back to, where `/feedback` is refused).
        case keepAlive(decibels: Double)
        /// Now-playing: the item, its artwork and its progress, at an RTP time.
        case metadata(Metadata)
        /// Ends the session.
        case tearDown
    }

    /// What the receivers show: each part is sent only where the receiver's `md` lists it.
    package struct Metadata: Hashable, Sendable {
        /// Title, artist, album (DMAP), for `md` 0.
        package var item: DMAP.Item?
        /// Artwork bytes and their MIME type, for `md` 1.
        package var artwork: Artwork?
        /// Start, current and end RTP times, for `md` 2.
        package var progress: Progress?
        /// The RTP time the metadata applies from.
        package var rtpTime: UInt32

        /// Metadata from its parts.
        package init(item: DMAP.Item?, artwork: Artwork?, progress: Progress?, rtpTime: UInt32) {
            (self.item, self.artwork, self.progress, self.rtpTime) = (item, artwork, progress, rtpTime)
        }
    }

    /// Artwork: its MIME type and bytes.
    package struct Artwork: Hashable, Sendable {
        /// `image/jpeg`, `image/png`.
        package var type: String
        /// The image.
        package var bytes: [UInt8]

        /// Artwork from its parts.
        package init(type: String, bytes: [UInt8]) { (self.type, self.bytes) = (type, bytes) }
    }

    /// Progress in RTP times: where the item started, where it is, where it ends.
    package struct Progress: Hashable, Sendable {
        /// The three RTP times.
        package var start, current, end: UInt32

        /// Progress from its parts.
        package init(start: UInt32, current: UInt32, end: UInt32) { (self.start, self.current, self.end) = (start, current, end) }
    }

    /// How the receiver takes now-playing information.
    package enum NowPlayingRoute: Hashable, Sendable {
        /// DMAP, artwork and progress in SET_PARAMETER, the kinds its `md` lists (0, 1, 2).
        case dmap(Set<Int>)
        /// AirPlay 2 MediaRemote now-playing messages (feature bit 50), which the link sends itself.
        case mediaRemote
    }

    /// What to do, in order.
    package enum Action: Hashable, Sendable {
        /// Send a request; `required`: a refusal fails the command (else it is let go).
        case send(SenderRequest, required: Bool)
        /// Send the metadata as MediaRemote now-playing messages.
        case sendMediaRemoteNowPlaying(Metadata)
        /// The command failed.
        case failed(SenderError)
    }

    /// Where the session is.
    package enum Phase: Hashable, Sendable {
        /// Set up; no RECORD (or anchor) sent since, or a FLUSH (or rate 0) last.
        case paused
        /// RECORD (or a playing anchor) was sent last.
        case playing
        /// TEARDOWN was sent: nothing more goes.
        case ended
    }

    /// Whether the receiver answers `POST /feedback`.
    package enum Feedback: Hashable, Sendable {
        /// Sent and answered, or not tried yet.
        case answered
        /// Refused: the volume keeps the session alive instead.
        case refused
    }

    /// Where the session is.
    package private(set) var phase: Phase
    /// Whether the keep-alive is `/feedback` or the volume.
    package private(set) var feedback = Feedback.answered
    /// How now-playing reaches this receiver.
    package let nowPlaying: NowPlayingRoute
    /// The volume the keep-alive falls back to.
    private var keepAliveVolume = 0.0

    /// A session whose setup ended; `recorded`: the setup's RECORD was sent, so it plays.
    package init(nowPlaying: NowPlayingRoute, recorded: Bool = true) {
        self.nowPlaying = nowPlaying
        phase = recorded ? .playing : .paused
    }

    /// The actions that carry a command out (none after TEARDOWN).
    package mutating func command(_ command: Command) -> [Action] {
        guard phase != .ended else { return [] }
        switch command {
        case .record(let point):
            phase = .playing
            return [.send(Self.recordRequest(point), required: true)]
        case .flush(let point):
            phase = .paused
            return [.send(SenderRequest(method: "FLUSH", headers: [RTPInfo.headerName: point.headerValue]), required: true)]
        case .anchor(let anchor):
            phase = anchor.playing ? .playing : .paused
            return [.send(.plist("SETRATEANCHORTIME", anchor.plist), required: true)]
        case .setVolume(let decibels):
            return [.send(SenderSetupMachine.volumeRequest(decibels: decibels), required: true)]
        case .keepAlive(let decibels):
            keepAliveVolume = decibels
            guard feedback == .answered else { return [.send(SenderSetupMachine.volumeRequest(decibels: decibels), required: true)] }
            return [.send(Self.feedbackRequest, required: true)]
        case .metadata(let metadata):
            return Self.metadata(metadata, route: nowPlaying)
        case .tearDown:
            phase = .ended
            return [.send(SenderRequest(method: "TEARDOWN"), required: false)]
        }
    }

    /// A request's answer: nothing more, the keep-alive's fallback, or the command's failure.
    package mutating func replied(_ response: AirPlayResponse, to request: SenderRequest, required: Bool) -> [Action] {
        guard !(200..<300).contains(response.status) else { return [] }
        if request == Self.feedbackRequest {
            feedback = .refused
            return [.send(SenderSetupMachine.volumeRequest(decibels: keepAliveVolume), required: true)]
        }
        return required ? [.failed(SenderSetupMachine.refusal(request.method, response))] : []
    }

    /// RECORD from an RTP point (the setup's, and every resume's).
    static func recordRequest(_ point: RTPInfo) -> SenderRequest {
        SenderRequest(method: "RECORD", headers: ["Range": "npt=0-", RTPInfo.headerName: point.headerValue])
    }

    /// The keep-alive AirPlay 2 receivers and shairport-sync answer.
    static let feedbackRequest = SenderRequest(method: "POST", target: "/feedback")

    /// SET_PARAMETERs for the kinds the receiver's `md` lists, each at the metadata's RTP time;
    /// a receiver that refuses one keeps playing (metadata is never worth ending a stream for).
    private static func metadata(_ metadata: Metadata, route: NowPlayingRoute) -> [Action] {
        guard case .dmap(let kinds) = route else { return [.sendMediaRemoteNowPlaying(metadata)] }
        let headers: MessageHeaders = [RTPInfo.headerName: RTPInfo(rtpTime: metadata.rtpTime).headerValue]
        var actions: [Action] = []
        if let item = metadata.item, kinds.contains(0) {
            actions.append(.send(SenderRequest(method: "SET_PARAMETER", headers: headers, body: DMAP.encode(item),
                                               contentType: "application/x-dmap-tagged"), required: false))
        }
        if let artwork = metadata.artwork, kinds.contains(1) {
            actions.append(.send(SenderRequest(method: "SET_PARAMETER", headers: headers, body: artwork.bytes, contentType: artwork.type),
                                 required: false))
        }
        if let progress = metadata.progress, kinds.contains(2) {
            let body = TextParameters.progress(start: progress.start, current: progress.current, end: progress.end).encoded
            actions.append(.send(SenderRequest(method: "SET_PARAMETER", headers: headers, body: body, contentType: TextParameters.contentType),
                                 required: false))
        }
        return actions
    }
}
