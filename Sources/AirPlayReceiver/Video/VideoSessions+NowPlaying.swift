import AirPlayMedia
import AirPlayNowPlaying
import AirPlayWire
import FoundationEssentials

/// Video sessions on the box's now-playing surfaces: what plays and where it stands, and the
/// surfaces' commands carried out on the player (the sender hears of them through its event
/// channel, as of any state change).
extension VideoSessions {
    /// A `/play` was accepted: a video session begins, titled by the sender's metadata or the URL.
    func announce(_ play: PlayRequest, request: AirPlayRequest) {
        guard let nowPlaying else { return }
        let agent = request.headers["User-Agent"].map { String($0.prefix(200)) }
        let name = request.headers["X-Apple-Client-Name"].map { String($0.prefix(100)) }
        nowPlaying.post(.began(NowPlayingSender(kind: .video, name: name ?? agent.map(Self.product) ?? "video sender",
                                                clientName: name, userAgent: agent), format: nil))
        nowPlaying.post(.metadata([DMAPField(tag: "minm", text: Self.title(of: play.url))]))
    }

    /// The player of the current session reported a state: position, rate, and the end.
    func playerReported(_ status: MediaStatus) {
        guard let nowPlaying else { return }
        switch status.state {
        case .playing, .paused:
            let duration = status.duration.flatMap { $0.isFinite ? $0 : nil }
            nowPlaying.post(.position(seconds: status.position, duration: duration))
            nowPlaying.post(.rate(status.state == .playing ? max(status.rate, 0.01) : 0))
        case .ended, .failed, .stopped:
            nowPlaying.post(.ended)
        case .idle, .loading:
            break
        }
    }

    /// Carries a remote-control command out on the current video; call it on `playerQueue`.
    func remote(_ command: RemoteCommand) -> Result<Void, RemoteControlError> {
        guard let (session, player) = currentPlayer() else { return .failure(RemoteControlError("no video is playing")) }
        let status = player.status
        let decision: Result<[Machine.Action], Machine.Refusal>
        switch command {
        case .play: decision = machine.withLockedValue { $0.rate(1, sessionID: session.id, trickURL: nil) }
        case .pause: decision = machine.withLockedValue { $0.rate(0, sessionID: session.id, trickURL: nil) }
        case .playPause:
            let rate: Double = status.state == .playing ? 0 : 1
            decision = machine.withLockedValue { $0.rate(rate, sessionID: session.id, trickURL: nil) }
        case .stop:
            decision = machine.withLockedValue { $0.stop(sessionID: session.id) }
            if case .success = decision { nowPlaying?.post(.ended) }
        case .seek(let offset):
            decision = machine.withLockedValue { $0.scrub(to: max(0, status.position + offset), sessionID: session.id) }
        case .setPosition(let position):
            decision = machine.withLockedValue { $0.scrub(to: position, sessionID: session.id) }
        case .setVolume, .volumeUp, .volumeDown:
            // Steps of 3 dB on the AirPlay scale, from the volume in force (full when never set).
            let current = nowPlaying?.state.volumeDecibels ?? 0
            let decibels: Double = switch command {
            case .setVolume(let value): value
            case .volumeUp: min(0, max(current, -30) + 3)
            default: current <= -30 ? -144 : current - 3
            }
            let linear = AirPlayVolume.linear(decibels: decibels)
            decision = .success(machine.withLockedValue { $0.setVolume(linear) })
            nowPlaying?.post(.volume(decibels: decibels))
        case .next, .previous:
            return .failure(RemoteControlError("a video has no next or previous item"))
        }
        switch decision {
        case .failure(let refusal):
            return .failure(RemoteControlError(refusal.reason))
        case .success(let actions):
            let failure = carryOut(actions)
            return failure.map { .failure(RemoteControlError(String(buffer: $0.body))) } ?? .success(())
        }
    }

    /// A title from a media URL: its last path element without the extension, decoded.
    static func title(of url: String) -> String {
        let path = url.split(separator: "?").first.map(String.init) ?? url
        let last = path.split(separator: "/").last.map(String.init) ?? path
        let decoded = Self.percentDecoded(last)
        let stem = decoded.split(separator: ".").dropLast().joined(separator: ".")
        return String((stem.isEmpty ? decoded : stem).prefix(200))
    }

    /// `%20` and the like decoded; text that is not valid UTF-8 afterwards stays as it was.
    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "%"), input.count >= 2,
               let value = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self) ?? text
    }

    /// `AirPlay/320.20` of a user agent `AirPlay/320.20 (iPhone)`.
    static func product(_ agent: String) -> String { String(agent.split(separator: " ").first ?? Substring(agent)) }
}
