@testable import AirPlaySender
import Testing

/// What `airplay stream` does about each thing that happens while it plays, the same in every
/// mode: a tick is housekeeping, the progress line and a keep-alive every other second; pause
/// and play only change what is not so already; the volume stays within 0-100; next and
/// previous move through a playlist of a realtime stream only; receivers join buffered streams
/// and mixed groups only; the stream ends at a quit, or when every player has run out.
@Suite struct StreamControlTests {
    @Test func everyOtherTickKeepsTheReceiversAlive() {
        var control = StreamControl(mode: .buffered, volume: 50)
        let decibels = RAOPStreamSession.decibels(50)
        #expect(control.handle(.tick) == [.tend, .progress(paused: false, volume: 50)])
        #expect(control.handle(.tick) == [.tend, .progress(paused: false, volume: 50), .keepAlive(decibels: decibels)])
        #expect(control.handle(.tick) == [.tend, .progress(paused: false, volume: 50)])
    }

    @Test func pauseAndPlayChangeOnlyWhatIsNotSoAlready() {
        var control = StreamControl(mode: .realtime(playlist: false), volume: 100)
        #expect(control.handle(.setPaused(false)).isEmpty)
        #expect(control.handle(.togglePause) == [.pause, .say("paused")])
        #expect(control.handle(.setPaused(true)).isEmpty, "DACP pause while paused")
        #expect(control.handle(.tick) == [.tend, .progress(paused: true, volume: 100)])
        #expect(control.handle(.setPaused(false)) == [.resume, .say("playing")])
        #expect(!control.paused)
    }

    @Test func theVolumeStaysWithinZeroAndAHundred() {
        var control = StreamControl(mode: .mixed, volume: 140)
        #expect(control.volume == 100)
        #expect(control.handle(.volume(-30)) == [.setVolume(decibels: RAOPStreamSession.decibels(70)), .say("volume 70")])
        #expect(control.handle(.setVolume(-5)) == [.setVolume(decibels: -144), .say("volume 0")])
        #expect(control.handle(.volume(250)) == [.setVolume(decibels: 0), .say("volume 100")])
    }

    @Test func nextAndPreviousMoveThroughAPlaylistOfARealtimeStreamOnly() {
        var playlist = StreamControl(mode: .realtime(playlist: true), volume: 50)
        #expect(playlist.handle(.skip(1)) == [.skip(1)])
        #expect(playlist.handle(.skip(-1)) == [.skip(-1)])
        var oneFile = StreamControl(mode: .realtime(playlist: false), volume: 50)
        #expect(oneFile.handle(.skip(1)) == [.say("one file: nothing to skip to")])
        for mode in [StreamControl.Mode.buffered, .mixed] {
            var control = StreamControl(mode: mode, volume: 50)
            #expect(control.handle(.skip(1)) == [.say("next and previous move through files in realtime mode only")])
        }
    }

    @Test func receiversJoinBufferedStreamsAndMixedGroupsOnly() {
        #expect(StreamControl(mode: .buffered, volume: 50).join() == [.join])
        #expect(StreamControl(mode: .mixed, volume: 50).join() == [.join])
        #expect(StreamControl(mode: .realtime(playlist: true), volume: 50).join()
                == [.refuseJoin("receivers join only a buffered stream (--mode buffered)")])
    }

    @Test func aQuitStopsAtOnceAndNothingHappensAfter() {
        var control = StreamControl(mode: .buffered, volume: 50)
        #expect(control.handle(.quit) == [.stop])
        #expect(control.finished)
        #expect(control.handle(.tick).isEmpty && control.handle(.togglePause).isEmpty && control.handle(.ended).isEmpty)
        #expect(control.join().isEmpty)
    }

    @Test func theStreamPlaysOutWhenEveryPlayerHasRunOut() {
        var single = StreamControl(mode: .realtime(playlist: false), volume: 50)
        #expect(single.handle(.ended) == [.playOut])
        #expect(single.finished)
        // A mixed group's buffered player reads ahead and ends first: the realtime one still plays.
        var mixed = StreamControl(mode: .mixed, volume: 50)
        #expect(mixed.handle(.ended).isEmpty)
        #expect(!mixed.finished)
        #expect(mixed.handle(.tick) == [.tend, .progress(paused: false, volume: 50)])
        #expect(mixed.handle(.ended) == [.playOut])
    }
}
