import AirPlayMedia
import AirPlayPlist
import AirPlayWire

/// What airplayd and its video player process say to each other (`VideoPlayerHost`,
/// `VideoPlayerChild`), one message per datagram of their socket pair, as a binary plist. One
/// codec both ways. Players are numbered by the daemon; requests that answer (`load`, `seek`,
/// `rate`) carry a number the `reply` names back.
enum PlayerMessage: Hashable, Sendable {
    /// What a player is built with (`PlaybinPlayer.Configuration`'s parts the daemon chooses).
    struct Setup: Hashable, Sendable {
        var videoSink: String
        var audioOutput: String
        /// playbin rather than playbin3 (trick play, progressive media).
        var classic: Bool
        var followRedirects: Bool
    }

    /// Builds player `player` (in the child) and loads `url` on it.
    case load(player: Int, request: Int, setup: Setup, url: String, start: StartPosition, paused: Bool)
    /// Rate 1.
    case play(player: Int)
    /// Rate 0.
    case pause(player: Int)
    /// A seek, answered.
    case seek(player: Int, request: Int, seconds: Double)
    /// Another rate, answered.
    case rate(player: Int, request: Int, rate: Double)
    /// The volume, 0...1.
    case volume(player: Int, volume: Double)
    /// Stops and releases the player.
    case stop(player: Int)
    /// The child's answer to a request: nil, or why it failed.
    case reply(request: Int, error: MediaError?)
    /// A player's status: a state change (`change`), or its position a few times a second while
    /// it plays.
    case status(player: Int, MediaStatus, change: Bool)

    /// The largest message either side takes.
    static let maximumBytes = 64 << 10

    /// The plist sent.
    var plist: PropertyList {
        switch self {
        case .load(let player, let request, let setup, let url, let start, let paused):
            let position: [String: PropertyList] = switch start {
            case .seconds(let seconds): ["seconds": .real(seconds)]
            case .fraction(let fraction): ["fraction": .real(fraction)]
            }
            return .dictionary(["op": .string("load"), "player": .integer(Int64(player)), "request": .integer(Int64(request)), "url": .string(url),
                                "start": .dictionary(position), "paused": .bool(paused), "videoSink": .string(setup.videoSink),
                                "audioOutput": .string(setup.audioOutput), "classic": .bool(setup.classic),
                                "followRedirects": .bool(setup.followRedirects)])
        case .play(let player): return .dictionary(["op": .string("play"), "player": .integer(Int64(player))])
        case .pause(let player): return .dictionary(["op": .string("pause"), "player": .integer(Int64(player))])
        case .seek(let player, let request, let seconds):
            return .dictionary(["op": .string("seek"), "player": .integer(Int64(player)), "request": .integer(Int64(request)), "seconds": .real(seconds)])
        case .rate(let player, let request, let rate):
            return .dictionary(["op": .string("rate"), "player": .integer(Int64(player)), "request": .integer(Int64(request)), "rate": .real(rate)])
        case .volume(let player, let volume): return .dictionary(["op": .string("volume"), "player": .integer(Int64(player)), "volume": .real(volume)])
        case .stop(let player): return .dictionary(["op": .string("stop"), "player": .integer(Int64(player))])
        case .reply(let request, let error):
            var fields: [String: PropertyList] = ["op": .string("reply"), "request": .integer(Int64(request))]
            if let error { fields["error"] = Self.plist(error) }
            return .dictionary(fields)
        case .status(let player, let status, let change):
            var fields: [String: PropertyList] = [
                "op": .string("status"), "player": .integer(Int64(player)), "state": .string(status.state.rawValue), "change": .bool(change),
                "position": .real(status.position), "rate": .real(status.rate), "buffer": .integer(Int64(status.bufferPercent)),
                "loaded": .array(status.loadedRanges.map { .array([.real($0.start), .real($0.duration)]) }),
                "seekable": .array(status.seekableRanges.map { .array([.real($0.start), .real($0.duration)]) }),
            ]
            if let duration = status.duration { fields["duration"] = duration.isFinite ? .real(duration) : .string("live") }
            if let error = status.error { fields["error"] = Self.plist(error) }
            return .dictionary(fields)
        }
    }

    /// Reads a message; nil for anything malformed (the other side is ours, but a bad message
    /// must not take either down).
    init?(plist: PropertyList) {
        guard let op = plist["op"]?.stringValue else { return nil }
        let player = plist["player"]?.integerValue.flatMap { Int(exactly: $0) }
        let request = plist["request"]?.integerValue.flatMap { Int(exactly: $0) }
        switch op {
        case "load":
            guard let player, let request, let url = plist["url"]?.stringValue, let videoSink = plist["videoSink"]?.stringValue,
                  let audioOutput = plist["audioOutput"]?.stringValue else { return nil }
            let start: StartPosition = plist["start"]?["fraction"]?.doubleValue.map { .fraction($0) }
                ?? .seconds(plist["start"]?["seconds"]?.doubleValue ?? 0)
            self = .load(player: player, request: request,
                         setup: Setup(videoSink: videoSink, audioOutput: audioOutput, classic: plist["classic"]?.boolValue ?? false,
                                      followRedirects: plist["followRedirects"]?.boolValue ?? true),
                         url: url, start: start, paused: plist["paused"]?.boolValue ?? false)
        case "play": guard let player else { return nil }; self = .play(player: player)
        case "pause": guard let player else { return nil }; self = .pause(player: player)
        case "seek":
            guard let player, let request, let seconds = plist["seconds"]?.doubleValue else { return nil }
            self = .seek(player: player, request: request, seconds: seconds)
        case "rate":
            guard let player, let request, let rate = plist["rate"]?.doubleValue else { return nil }
            self = .rate(player: player, request: request, rate: rate)
        case "volume":
            guard let player, let volume = plist["volume"]?.doubleValue else { return nil }
            self = .volume(player: player, volume: volume)
        case "stop": guard let player else { return nil }; self = .stop(player: player)
        case "reply":
            guard let request else { return nil }
            self = .reply(request: request, error: plist["error"].flatMap(Self.error))
        case "status":
            guard let player, let state = plist["state"]?.stringValue.flatMap(MediaState.init(rawValue:)) else { return nil }
            let ranges = { (key: String) -> [TimeRange] in
                guard case .array(let items)? = plist[key] else { return [] }
                return items.compactMap { item in
                    guard case .array(let pair) = item, pair.count == 2, let start = pair[0].doubleValue, let duration = pair[1].doubleValue else { return nil }
                    return TimeRange(start: start, duration: duration)
                }
            }
            let duration: Double? = plist["duration"]?.stringValue == "live" ? .infinity : plist["duration"]?.doubleValue
            self = .status(player: player, MediaStatus(
                state: state, position: plist["position"]?.doubleValue ?? 0, duration: duration, rate: plist["rate"]?.doubleValue ?? 0,
                bufferPercent: plist["buffer"]?.integerValue.map { Int(clamping: $0) } ?? 0, loadedRanges: ranges("loaded"),
                seekableRanges: ranges("seekable"), error: plist["error"].flatMap(Self.error)), change: plist["change"]?.boolValue ?? false)
        default:
            return nil
        }
    }

    /// The datagram.
    var bytes: [UInt8] { plist.encoded(as: .binary) }

    /// A datagram read back; nil when it is not a message.
    init?(bytes: [UInt8]) {
        guard bytes.count <= Self.maximumBytes, let plist = try? PropertyList(decoding: bytes) else { return nil }
        self.init(plist: plist)
    }

    private static func plist(_ error: MediaError) -> PropertyList {
        .dictionary(["code": .integer(Int64(error.code)), "domain": .string(error.domain), "message": .string(error.message)])
    }

    private static func error(_ plist: PropertyList) -> MediaError? {
        guard let code = plist["code"]?.integerValue, let domain = plist["domain"]?.stringValue, let message = plist["message"]?.stringValue else {
            return nil
        }
        return MediaError(code: Int(clamping: code), domain: domain, message: message)
    }
}
