import AirPlayPlist
import AirPlayWire
import NIOConcurrencyHelpers

/// The last `/playback-info` answers, reused for a moment. Sixty-four senders polling at once
/// would otherwise each walk the player, the gateway and the plist writer (a quarter of the
/// poll's CPU) for answers that differ by a few milliseconds of position. Every video command
/// clears it when it arrives and again once it has run, and an answer rendered while a clear
/// happened is not kept: no answer predates the sender's own last command.
final class PlaybackInfoCache: Sendable {
    /// How long an answer is reused, in seconds: as long as the player reuses its pipeline's
    /// answers (`PlaybinPlayer.answerReuse`).
    static let lifetime = 0.025

    private struct Entry {
        var format: PropertyListFormat
        var at: Double
        var response: AirPlayResponse
    }

    private struct State {
        var entries: [Entry] = []
        /// Counts clears, so that an answer rendered across one is not kept.
        var generation: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    /// The answer in `format` rendered within `lifetime` before `now`, if any.
    func answer(format: PropertyListFormat, now: Double) -> AirPlayResponse? {
        state.withLockedValue { state in
            state.entries.first { $0.format == format && now - $0.at >= 0 && now - $0.at < Self.lifetime }?.response
        }
    }

    /// Call before rendering an answer; hand the result to `store`.
    func generation() -> UInt64 { state.withLockedValue(\.generation) }

    /// Keeps `response`, rendered in `format` at `now`, unless the cache was cleared since
    /// `generation` (a command ran while it was being rendered).
    func store(_ response: AirPlayResponse, format: PropertyListFormat, now: Double, generation: UInt64) {
        state.withLockedValue { state in
            guard state.generation == generation else { return }
            state.entries.removeAll { $0.format == format }
            state.entries.append(Entry(format: format, at: now, response: response))
        }
    }

    /// Forgets every answer (a command may have changed what the next one says).
    func clear() {
        state.withLockedValue { state in
            state.entries.removeAll()
            state.generation &+= 1
        }
    }
}
