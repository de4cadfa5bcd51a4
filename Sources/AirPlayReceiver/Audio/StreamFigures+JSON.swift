import AirPlayWire

extension AudioSessions.StreamFigures {
    /// The stream figures for `GET /now-playing`: packets, frames, and how close to the sender's
    /// timeline they played (benchmarks and tests read them).
    var json: JSONValue {
        let figures = self, playout = figures.playout, sync = playout.syncError
        func ms(_ seconds: Double) -> JSONValue { .number((seconds * 100_000).rounded() / 100) }
        var object: [String: JSONValue] = ["session": .integer(figures.session), "codec": .string(figures.codec), "ended": .bool(figures.ended)]
        let counts: [(String, Int)] = [
            ("received", playout.received), ("dropped", playout.dropped), ("lost", playout.lost), ("skipped", playout.skipped),
            ("framesPlayed", playout.framesPlayed), ("framesOnSenderClock", playout.framesOnSenderClock), ("framesInserted", playout.framesInserted), ("framesRemoved", playout.framesRemoved),
            ("reanchors", playout.reanchors), ("requested", figures.requested), ("requestedAgain", figures.requestedAgain),
            ("retransmitted", figures.retransmitted),
        ]
        for (key, count) in counts { object[key] = .integer(count) }
        // Datagrams that never reached the playout, by kind and in the receiver's words.
        object["droppedBeforePlayout"] = .object(Dictionary(uniqueKeysWithValues: figures.drops.map { ($0.key.rawValue, .integer($0.value)) }))
        object["dropReasons"] = .object(figures.dropped.mapValues { .integer($0) })
        object["worstLatenessMs"] = ms(playout.worstLatenessMilliseconds / 1000)
        let syncFigures: [String: JSONValue] = [
            "packets": .integer(sync.count), "meanMs": ms(sync.mean), "meanAbsMs": ms(sync.meanMagnitude), "p50Ms": ms(sync.percentile(0.5)),
            "p95Ms": ms(sync.percentile(0.95)), "p99Ms": ms(sync.percentile(0.99)), "maxMs": ms(sync.worst),
        ]
        object["sync"] = .object(syncFigures)
        let clock = figures.clock
        let clockFigures: [String: JSONValue] = [
            "source": .string(figures.clockSource), "timedMostlyBy": .string(figures.timedMostlyBy), "exchanges": .integer(clock.exchanges),
            "roundTripMs": .number(clock.roundTripMilliseconds.map { ($0 * 100).rounded() / 100 }),
            "driftPPM": .number((clock.driftPPM * 100).rounded() / 100), "implausibleSyncs": .integer(clock.implausibleSyncs),
            "trustChanges": .integer(clock.trustChanges), "overdueAudio": .integer(clock.overdueAudio),
            "jumps": .integer(clock.jumps), "largestJumpMs": .number((clock.largestJumpMilliseconds * 100).rounded() / 100),
        ]
        object["clock"] = .object(clockFigures)
        // The sound card's own clock, when the output has one: its rate, what it holds, its restarts.
        if let output = playout.output {
            object["output"] = .object([
                "ratePPM": .number(output.ratePPM.map { ($0 * 100).rounded() / 100 }),
                "rateUncertaintyPPM": .number(output.rateUncertaintyPPM.map { ($0 * 100).rounded() / 100 }),
                "delayMs": .number((output.delayMilliseconds * 100).rounded() / 100), "restarts": .integer(output.restarts),
                "framesCorrected": .integer(playout.framesInserted + playout.framesRemoved),
            ])
        }
        return .object(object)
    }
}
