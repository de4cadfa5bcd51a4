/// A remote-control command a receiver sends its AirPlay 2 sender on the event channel, both
/// ways: airplayd writes it, `airplay` reads it.
///
/// The request is `POST /command` (RTSP/1.0) with a binary plist of `type`
/// `sendMediaRemoteCommand`. Two generations of senders read two keys of it, so both are
/// written, as Apple TVs and HomePods do:
/// - `value`, four letters (`play`, `paus`, `nitm`, `pitm`): OwnTone 29 and Music Assistant's
///   sender read only this, and OwnTone takes `play` and `paus` both as play/pause;
/// - `modernMediaRemoteCommand`, MediaRemote's command number as a decimal string (0 play,
///   1 pause, 2 play/pause, 3 stop, 4 next, 5 previous) with a `params` dictionary that names
///   the command (`kMRMediaRemoteOptionCommandID`, a UUID): what iOS 17.4+ reads.
///
/// The volume is its own form, `value` `dvlc` with `volume` at the top and in `params`: 0...1
/// on `AirPlayVolume`'s linear scale (dB / 30 + 1). The sender answers `RTSP/1.0 200 OK`.
public enum MediaRemoteCommand: Hashable, Sendable {
    /// Play. OwnTone takes it as play/pause: send it only while paused.
    case play
    /// Pause. OwnTone takes it as play/pause: send it only while playing.
    case pause
    /// Play or pause, whichever is not the case (read; airplayd sends `play` or `pause`).
    case playPause
    /// Stop.
    case stop
    /// The next item.
    case nextItem
    /// The previous item.
    case previousItem
    /// Set the sender's volume, 0 (silent) to 1 (full), linear in AirPlay dB.
    case setVolume(Double)

    /// The `type` of the plist.
    public static let type = "sendMediaRemoteCommand"
    /// The request's path.
    public static let path = "/command"

    /// The four letters of `value`.
    public var legacyValue: String {
        switch self {
        case .play: "play"
        case .pause: "paus"
        case .playPause: "plps"
        case .stop: "stop"
        case .nextItem: "nitm"
        case .previousItem: "pitm"
        case .setVolume: "dvlc"
        }
    }

    /// MediaRemote's number for the command (`MRMediaRemoteCommand`); nil for the volume.
    public var modernNumber: Int? {
        switch self {
        case .play: 0
        case .pause: 1
        case .playPause: 2
        case .stop: 3
        case .nextItem: 4
        case .previousItem: 5
        case .setVolume: nil
        }
    }

    /// The request's plist; `commandID` (a UUID) names this press.
    public func plist(commandID: String) -> PropertyList {
        var root: [String: PropertyList] = ["type": .string(Self.type), "value": .string(legacyValue)]
        if case .setVolume(let volume) = self {
            let clamped = PropertyList.real(min(1, max(0, volume)))
            root["volume"] = clamped
            root["params"] = .dictionary(["volume": clamped])
        } else if let number = modernNumber {
            root["modernMediaRemoteCommand"] = .string(String(number))
            root["params"] = .dictionary([
                "kMRMediaRemoteOptionCommandID": .string(commandID),
                "kMRMediaRemoteOptionSendOptionsNumber": .integer(0),
                "kMRMediaRemoteOptionIsRedirectingCommand": .bool(true),
            ])
        }
        return .dictionary(root)
    }

    /// The command a `POST /command` plist carries: MediaRemote's number (a string or an
    /// integer) where given, else the four letters; nil for any other `type` (`updateInfo`,
    /// `updateMRSupportedCommands`) or a command not listed here.
    public init?(plist: PropertyList) {
        guard plist["type"]?.stringValue == Self.type else { return nil }
        let modern = plist["modernMediaRemoteCommand"]
        if let number = modern?.stringValue.flatMap(Int.init) ?? modern?.integerValue.map(Int.init),
           let command = Self.byNumber.first(where: { $0.modernNumber == number }) {
            self = command
            return
        }
        guard let value = plist["value"]?.stringValue else { return nil }
        if value == "dvlc" {
            guard let volume = plist["volume"]?.doubleValue ?? plist["params"]?["volume"]?.doubleValue, volume.isFinite else { return nil }
            self = .setVolume(min(1, max(0, volume)))
            return
        }
        guard let command = Self.byNumber.first(where: { $0.legacyValue == value }) else { return nil }
        self = command
    }

    private static let byNumber: [MediaRemoteCommand] = [.play, .pause, .playPause, .stop, .nextItem, .previousItem]

    /// The same button as DACP names it (the four letters are DACP's own); the volume as the
    /// AirPlay dB it stands for.
    public var dacpEquivalent: DACPCommand {
        switch self {
        case .play: .play
        case .pause: .pause
        case .playPause: .playPause
        case .stop: .stop
        case .nextItem: .nextItem
        case .previousItem: .previousItem
        case .setVolume(let volume): .setDeviceVolume(AirPlayVolume.decibels(linear: volume))
        }
    }
}
