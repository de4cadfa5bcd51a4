import AirPlayNowPlaying
import AirPlayWire

/// How a remote command reaches an audio sender, chosen per session and per press.
///
/// An AirPlay 2 sender whose event channel is connected is asked there first: it is the only
/// path iOS 17.4+ and macOS 14.4+ still read, and OwnTone and Music Assistant read it too.
/// DACP is the path of AirPlay 1 sessions, and the fallback of an AirPlay 2 sender that also
/// announces it (`DACP-ID`, `Active-Remote`) when the event channel fails.
enum AudioRemoteRoute: Equatable {
    /// Send this on the session's event channel.
    case eventChannel(MediaRemoteCommand)
    /// Send this to the sender's DACP service.
    case dacp(DACPCommand)
    /// Nothing to send: the sender is already as asked (a second pause must not restart a
    /// sender that reads `paus` as play/pause, as OwnTone does).
    case alreadySo(String)

    /// The routes to try in order for `command` on the audio session `state` shows, whose
    /// sender plays or not as `playing` says (what it last showed, or what the box last asked of
    /// it: a pause is seen only when the sender flushes, a moment later); empty when no path
    /// can carry it (the reason is `refusal`).
    static func routes(for command: RemoteCommand, state: NowPlayingState, playing: Bool, eventChannelOpen: Bool) -> [AudioRemoteRoute] {
        let hasDACP = state.sender?.dacpID != nil && state.sender?.activeRemote != nil
        var routes: [AudioRemoteRoute] = []
        if eventChannelOpen {
            switch command {
            case .play where playing: return [.alreadySo("already playing")]
            case .pause where !playing: return [.alreadySo("already paused")]
            default: break
            }
            if let eventCommand = eventChannelCommand(command, playing: playing, volume: state.volumeDecibels), senderTakes(eventCommand, state) {
                routes.append(.eventChannel(eventCommand))
            }
        }
        if hasDACP, let dacpCommand = dacpCommand(command) { routes.append(.dacp(dacpCommand)) }
        return routes
    }

    /// Whether the sender takes `command` (`NowPlayingState.senderTakes`); the volume is not a
    /// listed command.
    static func senderTakes(_ command: MediaRemoteCommand, _ state: NowPlayingState) -> Bool {
        command.modernNumber.map(state.senderTakes) ?? true
    }

    /// Why no route carries `command`, in words for the person who pressed it.
    static func refusal(for command: RemoteCommand, state: NowPlayingState, playing: Bool, eventChannelOpen: Bool) -> String {
        if eventChannelOpen, let eventCommand = eventChannelCommand(command, playing: playing, volume: state.volumeDecibels),
           !senderTakes(eventCommand, state) {
            return "the sender does not take \(command) now (it said which commands it takes)"
        }
        return switch command {
        case .seek, .setPosition:
            "an audio sender cannot seek from here (neither DACP nor the AirPlay 2 event channel has seek)"
        case .volumeUp where eventChannelOpen, .volumeDown where eventChannelOpen:
            "the sender has not said its volume yet, so there is nothing to step from (and it offers no DACP)"
        default:
            "the sender offers no remote control (no AirPlay 2 event channel, no DACP-ID and Active-Remote)"
        }
    }

    /// The AirPlay dB a volume step moves (16 steps from silent to full, as shairport-sync's).
    static let volumeStep = 1.875

    /// The event-channel command; play/pause is sent as what it means now, so a sender that
    /// takes either as a toggle and one that takes them literally both do the right thing.
    /// A volume step is a new volume from the one the sender last set (`volume`, in dB).
    static func eventChannelCommand(_ command: RemoteCommand, playing: Bool, volume: Double?) -> MediaRemoteCommand? {
        switch command {
        case .play: return .play
        case .pause: return .pause
        case .playPause: return playing ? .pause : .play
        case .stop: return .stop
        case .next: return .nextItem
        case .previous: return .previousItem
        case .setVolume(let decibels): return .setVolume(AirPlayVolume.linear(decibels: decibels))
        case .volumeUp, .volumeDown:
            guard let volume else { return nil }
            let from = max(-30, volume)
            let to = min(0, from + (command == .volumeUp ? volumeStep : -volumeStep))
            return .setVolume(AirPlayVolume.linear(decibels: to))
        case .seek, .setPosition: return nil
        }
    }

    /// The DACP command for a remote command on audio; nil for seeks.
    static func dacpCommand(_ command: RemoteCommand) -> DACPCommand? {
        switch command {
        case .play: .play
        case .pause: .pause
        case .playPause: .playPause
        case .stop: .stop
        case .next: .nextItem
        case .previous: .previousItem
        case .volumeUp: .volumeUp
        case .volumeDown: .volumeDown
        case .setVolume(let decibels): .setDeviceVolume(decibels)
        case .seek, .setPosition: nil
        }
    }
}
