@testable import AirPlayReceiver
import AirPlayNowPlaying
import AirPlayWire
import Testing

/// Which path a remote press takes to an audio sender: the AirPlay 2 event channel first where
/// the sender connected one, DACP for AirPlay 1 and as the fallback of senders that announce it.
@Suite struct AudioRemoteRouteTests {
    typealias Route = AudioRemoteRoute

    static func state(dacp: Bool, playing: Bool, volume: Double? = nil) -> NowPlayingState {
        let sender = NowPlayingSender(kind: .audio, name: "sender", dacpID: dacp ? "A1B2C3D4E5F60708" : nil, activeRemote: dacp ? "1234" : nil,
                                      hasEventChannel: true)
        var state = NowPlayingState().applying(.began(sender, format: nil), now: 0)
        if playing { state = state.applying(.streamStarted, now: 0) }
        if let volume { state = state.applying(.volume(decibels: volume), now: 0) }
        return state
    }

    /// As the box decides: playing as the state shows it.
    static func routes(playingFrom command: RemoteCommand, state: NowPlayingState, eventChannelOpen: Bool) -> [Route] {
        Route.routes(for: command, state: state, playing: state.playback.rate != 0, eventChannelOpen: eventChannelOpen)
    }

    @Test func anAirPlay2SenderIsAskedOnTheEventChannelThenOverDACP() {
        let routes = Self.routes(playingFrom: .next, state: Self.state(dacp: true, playing: true), eventChannelOpen: true)
        #expect(routes == [.eventChannel(.nextItem), .dacp(.nextItem)])
        #expect(Self.routes(playingFrom: .next, state: Self.state(dacp: false, playing: true), eventChannelOpen: true) == [.eventChannel(.nextItem)])
    }

    @Test func anAirPlay1SenderIsAskedOverDACPOnly() {
        #expect(Self.routes(playingFrom: .pause, state: Self.state(dacp: true, playing: true), eventChannelOpen: false) == [.dacp(.pause)])
        #expect(Self.routes(playingFrom: .pause, state: Self.state(dacp: false, playing: true), eventChannelOpen: false) == [])
        #expect(Route.refusal(for: .pause, state: Self.state(dacp: false, playing: true), playing: true, eventChannelOpen: false)
                    .contains("no AirPlay 2 event channel, no DACP-ID"))
    }

    /// OwnTone reads `play` and `paus` both as play/pause: a pause while paused is not sent, or
    /// it would start the music. Play/pause goes as what it means now.
    @Test func aPauseWhilePausedIsNotSent() {
        let paused = Self.state(dacp: false, playing: false), playing = Self.state(dacp: false, playing: true)
        #expect(Self.routes(playingFrom: .pause, state: paused, eventChannelOpen: true) == [.alreadySo("already paused")])
        #expect(Self.routes(playingFrom: .play, state: playing, eventChannelOpen: true) == [.alreadySo("already playing")])
        #expect(Self.routes(playingFrom: .playPause, state: playing, eventChannelOpen: true) == [.eventChannel(.pause)])
        #expect(Self.routes(playingFrom: .playPause, state: paused, eventChannelOpen: true) == [.eventChannel(.play)])
        // Paused a moment ago, not yet flushed: the box goes by what it asked.
        #expect(Route.routes(for: .play, state: playing, playing: false, eventChannelOpen: true) == [.eventChannel(.play)])
    }

    /// Volume steps move 1.875 dB from the volume the sender last set; with none set yet there is
    /// nothing to step from, so only DACP could carry it.
    @Test func volumeStepsAreNewVolumesFromTheSendersLast() {
        let at15 = Self.state(dacp: false, playing: true, volume: -15)
        #expect(Self.routes(playingFrom: .volumeUp, state: at15, eventChannelOpen: true) == [.eventChannel(.setVolume(AirPlayVolume.linear(decibels: -13.125)))])
        #expect(Self.routes(playingFrom: .setVolume(decibels: -30), state: at15, eventChannelOpen: true) == [.eventChannel(.setVolume(0))])
        let muted = Self.state(dacp: false, playing: true, volume: -144)
        #expect(Self.routes(playingFrom: .volumeUp, state: muted, eventChannelOpen: true) == [.eventChannel(.setVolume(AirPlayVolume.linear(decibels: -28.125)))])
        let unknown = Self.state(dacp: false, playing: true)
        #expect(Self.routes(playingFrom: .volumeDown, state: unknown, eventChannelOpen: true) == [])
        #expect(Route.refusal(for: .volumeDown, state: unknown, playing: true, eventChannelOpen: true).contains("has not said its volume"))
    }

    /// A sender that listed what it takes gets only those; with no DACP the press is refused
    /// and says why.
    @Test func onlyWhatTheSenderListedGoesOnTheEventChannel() {
        var state = Self.state(dacp: false, playing: true).applying(.senderCommands([2, 5]), now: 0)
        #expect(Self.routes(playingFrom: .next, state: state, eventChannelOpen: true) == [])
        #expect(Route.refusal(for: .next, state: state, playing: true, eventChannelOpen: true).contains("does not take next"))
        #expect(Self.routes(playingFrom: .pause, state: state, eventChannelOpen: true) == [.eventChannel(.pause)], "play/pause covers pause")
        #expect(Self.routes(playingFrom: .previous, state: state, eventChannelOpen: true) == [.eventChannel(.previousItem)])
        state = Self.state(dacp: true, playing: true).applying(.senderCommands([]), now: 0)
        #expect(Self.routes(playingFrom: .next, state: state, eventChannelOpen: true) == [.dacp(.nextItem)])
    }

    @Test func nothingSeeksAnAudioSender() {
        #expect(Self.routes(playingFrom: .seek(by: 10), state: Self.state(dacp: true, playing: true), eventChannelOpen: true) == [])
        #expect(Route.refusal(for: .setPosition(3), state: Self.state(dacp: true, playing: true), playing: true, eventChannelOpen: true).contains("cannot seek"))
    }
}
