@testable import AirPlayReceiver
import AirPlayPlist
import AirPlayWire
import Testing

/// `/playback-info` under many pollers: one rendered answer serves the polls of the next 25 ms
/// in its format, and any command forgets it.
@Suite struct PlaybackInfoCacheTests {
    let xml = AirPlayResponse(status: 200, headers: ["Content-Type": "text/x-apple-plist+xml"])
    let binary = AirPlayResponse(status: 200, headers: ["Content-Type": "application/x-apple-binary-plist"])

    @Test func anAnswerServesThePollsOfTheNext25Milliseconds() {
        let cache = PlaybackInfoCache()
        cache.store(xml, format: .xml, now: 10, generation: cache.generation())
        #expect(cache.answer(format: .xml, now: 10.024) == xml)
        #expect(cache.answer(format: .xml, now: 10.025) == nil)
        // A clock read before the answer was stored (another thread) gets nothing stale either.
        #expect(cache.answer(format: .xml, now: 9.999) == nil)
    }

    @Test func eachFormatHasItsOwnAnswer() {
        let cache = PlaybackInfoCache()
        cache.store(xml, format: .xml, now: 10, generation: cache.generation())
        #expect(cache.answer(format: .binary, now: 10.001) == nil)
        cache.store(binary, format: .binary, now: 10.002, generation: cache.generation())
        #expect(cache.answer(format: .binary, now: 10.003) == binary)
        #expect(cache.answer(format: .xml, now: 10.003) == xml)
    }

    @Test func aCommandForgetsEveryAnswer() {
        let cache = PlaybackInfoCache()
        cache.store(xml, format: .xml, now: 10, generation: cache.generation())
        cache.clear()
        #expect(cache.answer(format: .xml, now: 10.001) == nil)
    }

    /// A poll rendered while a command ran may show the state from before it: it is not kept.
    @Test func anAnswerRenderedAcrossACommandIsNotKept() {
        let cache = PlaybackInfoCache()
        let generation = cache.generation()
        cache.clear()
        cache.store(xml, format: .xml, now: 10, generation: generation)
        #expect(cache.answer(format: .xml, now: 10.001) == nil)
    }
}
