@testable import AirPlayNowPlaying
import Testing

/// What MPRIS shows and asks, without a bus.
@Suite struct MPRISModelTests {
    let audio = NowPlayingSender(kind: .audio, name: "iPhone", dacpID: "A1", activeRemote: "1")

    @Test func anAudioSessionShowsItsTrackAndWhatItsSenderCanDo() {
        var state = NowPlayingState().applying(.began(audio, format: nil), now: 0)
        state = state.applying(.metadata([.init(tag: "minm", text: "Song"), .init(tag: "asar", text: "Band")]), now: 0)
        state = state.applying(.artwork(type: "image/jpeg", bytes: [1]), now: 0)
        state = state.applying(.progress(start: 0, current: 44100, end: 441000, sampleRate: 44100), now: 0)
        state = state.applying(.streamStarted, now: 0)
        state = state.applying(.volume(decibels: -15), now: 0)
        let properties = MPRISModel.playerProperties(state, now: 2, artURL: "file:///var/lib/airplayd/cover-1.jpg")
        #expect(properties["PlaybackStatus"] == .string("Playing"))
        #expect(properties["Position"] == .int64(3_000_000))
        #expect(properties["Volume"] == .double(0.5))
        #expect(properties["CanGoNext"] == .bool(true) && properties["CanSeek"] == .bool(false), "DACP skips, never seeks")
        guard case .dictionary(let metadata)? = properties["Metadata"] else { Issue.record("no metadata"); return }
        #expect(metadata["xesam:title"] == .string("Song") && metadata["xesam:artist"] == .strings(["Band"]))
        #expect(metadata["mpris:length"] == .int64(10_000_000))
        #expect(metadata["mpris:trackid"] == .objectPath(MPRISModel.trackID(state.item.number)))
        #expect(metadata["mpris:artUrl"] == .string("file:///var/lib/airplayd/cover-1.jpg"))
    }

    @Test func aSenderWithoutDACPCannotBeControlled() {
        let state = NowPlayingState().applying(.began(NowPlayingSender(kind: .audio, name: "x"), format: nil), now: 0)
        let properties = MPRISModel.playerProperties(state, now: 0, artURL: nil)
        #expect(properties["CanPause"] == .bool(false) && properties["CanGoNext"] == .bool(false))
        #expect(properties["CanControl"] == .bool(true), "CanControl never changes (MPRIS says so)")
    }

    /// An AirPlay 2 sender reached on its event channel is controllable without DACP; what it
    /// said it takes decides the buttons (here play/pause and previous, no next).
    @Test func anAirPlay2SendersListDecidesTheButtons() {
        let sender = NowPlayingSender(kind: .audio, name: "iPhone", hasEventChannel: true)
        var state = NowPlayingState().applying(.began(sender, format: nil), now: 0)
        #expect(MPRISModel.playerProperties(state, now: 0, artURL: nil)["CanGoNext"] == .bool(true), "no list yet: everything")
        state = state.applying(.senderCommands([2, 5]), now: 0)
        let properties = MPRISModel.playerProperties(state, now: 0, artURL: nil)
        #expect(properties["CanPause"] == .bool(true) && properties["CanPlay"] == .bool(true))
        #expect(properties["CanGoNext"] == .bool(false) && properties["CanGoPrevious"] == .bool(true))
        #expect(state.applying(.ended, now: 1).senderCommands == nil, "the list ends with its session")
    }

    /// MPRIS counts microseconds in an Int64; a position out of any range (a live stream has
    /// no duration to bound one) is held at 285 years rather than trapping.
    @Test func positionsBeyondRangeAreHeldNotTrappedOn() {
        #expect(MPRISModel.microseconds(1.5) == 1_500_000)
        #expect(MPRISModel.microseconds(.infinity) == MPRISModel.maximumMicroseconds)
        #expect(MPRISModel.microseconds(1e300) == MPRISModel.maximumMicroseconds)
        #expect(MPRISModel.microseconds(-1e300) == -MPRISModel.maximumMicroseconds)
        #expect(MPRISModel.microseconds(.nan) == 0)
    }

    @Test func idleIsStoppedWithNoTrack() {
        let properties = MPRISModel.playerProperties(NowPlayingState(), now: 0, artURL: nil)
        #expect(properties["PlaybackStatus"] == .string("Stopped"))
        #expect(properties["Metadata"] == .dictionary(["mpris:trackid": .objectPath(MPRISModel.noTrack)]))
    }

    @Test func onlyChangedPropertiesAreSignalledAndPositionNever() {
        let old: [String: DBusValue] = ["PlaybackStatus": .string("Playing"), "Position": .int64(1), "Volume": .double(1)]
        let new: [String: DBusValue] = ["PlaybackStatus": .string("Paused"), "Position": .int64(2), "Volume": .double(1)]
        #expect(MPRISModel.changed(from: old, to: new) == ["PlaybackStatus": .string("Paused")])
    }

    @Test func volumeMapsLinearlyOverTheSendersRange() {
        #expect(MPRISModel.linearVolume(decibels: 0) == 1 && MPRISModel.linearVolume(decibels: -30) == 0)
        #expect(MPRISModel.linearVolume(decibels: -144) == 0 && MPRISModel.linearVolume(decibels: nil) == 1)
        #expect(MPRISModel.decibels(linearVolume: 0.5) == -15 && MPRISModel.decibels(linearVolume: 0) == -144)
    }

    @Test func methodsBecomeCommands() {
        #expect(MPRISModel.command(method: "PlayPause") == .playPause)
        #expect(MPRISModel.command(method: "Seek", offsetMicroseconds: -5_000_000) == .seek(by: -5))
        #expect(MPRISModel.command(method: "SetPosition", offsetMicroseconds: 2_500_000) == .setPosition(2.5))
        #expect(MPRISModel.command(method: "OpenUri") == nil)
        #expect(MPRISModel.busName(instance: "living-room") == "org.mpris.MediaPlayer2.airplayd.living_room")
        #expect(MPRISModel.busName(instance: "2nd") == "org.mpris.MediaPlayer2.airplayd._2nd")
    }
}
