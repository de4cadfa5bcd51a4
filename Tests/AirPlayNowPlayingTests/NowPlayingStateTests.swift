import AirPlayNowPlaying
import AirPlayWire
import Testing

/// How sessions' events become the box's now-playing state.
@Suite struct NowPlayingStateTests {
    let sender = NowPlayingSender(kind: .audio, name: "iPhone", clientName: "iPhone", address: "192.168.1.20",
                                  dacpID: "A1B2C3D4E5F60718", activeRemote: "1234567890")

    func fields(_ title: String, artist: String = "Artist", album: String = "Album") -> [DMAPField] {
        [DMAPField(tag: "minm", text: title), DMAPField(tag: "asar", text: artist), DMAPField(tag: "asal", text: album),
         DMAPField(tag: "mper", value: [0, 0, 0, 0, 0, 0, 0, 7])]
    }

    @Test func aSessionPlaysPausesAndEnds() {
        var state = NowPlayingState().applying(.began(sender, format: "S16LE 44100 Hz 2 ch"), now: 0)
        #expect(state.status == "paused" && state.sender?.isControllable == true)
        state = state.applying(.streamStarted, now: 1)
        state = state.applying(.progress(start: 1000, current: 45100, end: 1000 + 44100 * 200, sampleRate: 44100), now: 2)
        #expect(state.status == "playing" && state.playback.duration == 200)
        #expect(abs(state.playback.position(at: 5) - 4) < 1e-9, "the position runs on while playing")
        state = state.applying(.flushed, now: 5)
        #expect(state.status == "paused" && abs(state.playback.position(at: 60) - 4) < 1e-9, "and stands still while paused")
        state = state.applying(.resumed, now: 61)
        #expect(abs(state.playback.position(at: 62) - 5) < 1e-9)
        state = state.applying(.ended, now: 70)
        #expect(state.status == "idle" && state.item.title == nil && state.sender == nil)
    }

    @Test func aNewTitleIsANewItemAndDropsTheOldCover() {
        var state = NowPlayingState().applying(.began(sender, format: nil), now: 0)
        state = state.applying(.metadata(fields("One")), now: 0)
        state = state.applying(.artwork(type: "image/jpeg", bytes: [0xFF, 0xD8]), now: 0)
        let first = state.item.number
        // Senders send the same text again with each progress update: the cover stays.
        state = state.applying(.metadata(fields("One")), now: 1)
        #expect(state.item.number == first && state.item.artwork?.bytes == [0xFF, 0xD8])
        state = state.applying(.metadata(fields("Two")), now: 2)
        #expect(state.item.number == first + 1 && state.item.artwork == nil && state.item.title == "Two")
    }

    @Test func aCoverSentBeforeTheFirstTextBelongsToIt() {
        var state = NowPlayingState().applying(.began(sender, format: nil), now: 0)
        state = state.applying(.artwork(type: "image/png", bytes: [0x89]), now: 0)
        state = state.applying(.metadata(fields("One")), now: 0)
        #expect(state.item.artwork?.type == "image/png" && state.item.title == "One")
    }

    @Test func theDMAPDurationSetsTheLength() {
        var state = NowPlayingState().applying(.began(sender, format: nil), now: 0)
        state = state.applying(.metadata([DMAPField(tag: "astm", value: [0, 3, 0x0D, 0x40])]), now: 0)
        #expect(state.playback.duration == 200)
    }

    @Test func dmapBodiesOpenTheirContainerAndKeepTheOrder() throws {
        let body = DMAP.field("mlit", DMAP.field("asal", Array("B".utf8)) + DMAP.field("minm", Array("A".utf8)))
        #expect(try DMAPField.fields(of: body).map(\.tag) == ["asal", "minm"])
        #expect(throws: DMAP.Problem.self) { try DMAPField.fields(of: Array("mlit\u{0}\u{0}\u{0}\u{50}minm".utf8)) }
    }

    @Test func remoteCommandNamesParse() {
        #expect(RemoteCommand(name: "PlayPause") == .playPause)
        #expect(RemoteCommand(name: "seek:-10") == .seek(by: -10))
        #expect(RemoteCommand(name: "volume:-12.5") == .setVolume(decibels: -12.5))
        #expect(RemoteCommand(name: "volume:5") == nil, "AirPlay volume is at most 0 dB")
        #expect(RemoteCommand(name: "position:nan") == nil)
        #expect(RemoteCommand(name: "rm -rf") == nil)
    }
}
