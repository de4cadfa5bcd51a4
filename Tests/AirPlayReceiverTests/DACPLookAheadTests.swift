@testable import AirPlayReceiver
import AirPlayNowPlaying
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// A sender reached over DACP has its service looked up when its session begins, not at the
/// first press (the look-up browses avahi-daemon for about a second; shairport-sync looks
/// ahead too). One look-up per DACP-ID; a sender with none (an iPhone) needs none.
@Suite struct DACPLookAheadTests {
    @Test func theServiceIsLookedUpWhenTheSessionBegins() {
        let lookups = NIOLockedValueBox<[String]>([])
        let dacp = DACPClient { id in
            lookups.withLockedValue { $0.append(id) }
            return (port: 3689, addresses: ["127.0.0.1"])
        }
        let remote = ReceiverRemoteControl(nowPlaying: NowPlaying(), video: nil, dacp: dacp, logger: Logger(label: "test"))
        let raop = NowPlayingSender(kind: .audio, name: "iTunes", dacpID: "A1B2C3D4E5F60708", activeRemote: "1")
        remote.nowPlaying(.began(raop, format: nil), state: NowPlayingState(), at: 0)
        let deadline = Date().addingTimeInterval(2)
        while lookups.withLockedValue({ $0.isEmpty }), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(lookups.withLockedValue { $0 } == ["A1B2C3D4E5F60708"])
        remote.nowPlaying(.began(raop, format: nil), state: NowPlayingState(), at: 1)
        let iPhone = NowPlayingSender(kind: .audio, name: "iPhone", hasEventChannel: true)
        remote.nowPlaying(.began(iPhone, format: nil), state: NowPlayingState(), at: 2)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(lookups.withLockedValue { $0 } == ["A1B2C3D4E5F60708"], "cached; and none for a sender without DACP")
    }
}
