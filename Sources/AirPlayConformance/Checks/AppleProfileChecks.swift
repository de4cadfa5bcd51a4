import AirPlaySender
import AirPlayCrypto
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation

/// `airplay conformance --profile apple`: an iPhone's AirPlay 2 session, step by step in the
/// order iOS sends it, on one connection (`Protocol/airplay2.md` §15). Each step says what it
/// saw in a fixed form, `STATUS {reply keys}`, so two receivers' runs compare line by line (the
/// differential test against shairport-sync 5). A step whose session step before it failed is
/// skipped.
enum AppleProfileChecks {
    /// A fresh walk's checks: they share one connection and what earlier steps learnt.
    static func all() -> [ConformanceCheck] {
        let walk = AppleWalk()
        return steps.map { step in
            ConformanceCheck(step.id, step.reference, step.summary) { probe in await walk.run(step, probe: probe) }
        }
    }

    /// One step of the walk.
    struct Step: Sendable {
        let id: String
        let reference: String
        let summary: String
        /// Whether it runs on the paired session connection (skipped once the session broke).
        let inSession: Bool
        let body: @Sendable (AppleWalk, ConformanceProbe) async -> ConformanceOutcome
    }

    static let steps: [Step] = [
        Step(id: "apple.info", reference: "airplay2.md §1 Turning it on", summary: "GET /info with qualifier txtAirPlay: the record, version >= 366, features, pk",
             inSession: false) { walk, probe in await walk.info(probe) },
        Step(id: "apple.pair-setup", reference: "pairing.md §4 Transient pair-setup", summary: "transient pair-setup M1-M4, then the connection is encrypted",
             inSession: false) { walk, probe in await walk.pairTransiently(probe) },
        Step(id: "apple.pair-verify", reference: "pairing.md §4 Pair-verify", summary: "pair-verify M1 answers M2 (a 32-byte key, sealed data)",
             inSession: false) { _, probe in await PairingChecks.verifyStart.run(probe) },
        Step(id: "apple.fp-setup-1", reference: "airplay2.md §14 The FairPlay setup handshake", summary: "fp-setup message 1 (mode 2) answers the 142-byte reply of mode 2",
             inSession: true) { walk, _ in await walk.fairPlayFirst() },
        Step(id: "apple.fp-setup-2", reference: "airplay2.md §14 The FairPlay setup handshake", summary: "fp-setup message 2 answers the fixed header and its last 20 bytes",
             inSession: true) { walk, _ in await walk.fairPlaySecond() },
        Step(id: "apple.setup-session", reference: "airplay2.md §3 SETUP, phase 1", summary: "SETUP phase 1 (PTP with timingPeerInfo when bit 41 is set, else NTP) answers an eventPort",
             inSession: true) { walk, probe in await walk.setupSession(probe) },
        Step(id: "apple.event-channel", reference: "airplay2.md §4 The event channel", summary: "the eventPort takes the encrypted event connection",
             inSession: true) { walk, _ in await walk.openEvents() },
        Step(id: "apple.record", reference: "airplay2.md §13 the senders' request order", summary: "RECORD before the stream SETUP, as iOS sends it",
             inSession: true) { walk, _ in await walk.plain("RECORD", headers: [("Range", "npt=0-"), (RTPInfo.headerName, RTPInfo(sequence: 0, rtpTime: 0).headerValue)]) },
        Step(id: "apple.setup-realtime", reference: "airplay2.md §5 SETUP, phase 2", summary: "SETUP of a realtime ALAC stream (type 96) answers its ports",
             inSession: true) { walk, probe in await walk.setupStream(type: 96, probe: probe) },
        Step(id: "apple.teardown-stream", reference: "airplay2.md §7 The other requests", summary: "TEARDOWN of the stream alone",
             inSession: true) { walk, _ in await walk.plist("TEARDOWN", .dictionary(["streams": .array([.dictionary(["type": .integer(96)])])])) },
        Step(id: "apple.setup-buffered", reference: "airplay2.md §12 Buffered audio", summary: "SETUP of a buffered ALAC stream (type 103) answers its dataPort",
             inSession: true) { walk, probe in await walk.setupStream(type: 103, probe: probe) },
        Step(id: "apple.setpeers", reference: "airplay2.md §12 Buffered audio", summary: "SETPEERS with the timing peers",
             inSession: true) { walk, probe in await walk.setPeers(probe) },
        Step(id: "apple.setrateanchortime", reference: "airplay2.md §12 Buffered audio", summary: "SETRATEANCHORTIME: play from an anchor",
             inSession: true) { walk, probe in await walk.buffered(probe) { await walk.anchor() } },
        Step(id: "apple.feedback", reference: "airplay2.md §7 The other requests", summary: "POST /feedback, the keep-alive",
             inSession: true) { walk, _ in await walk.plain("POST", target: "/feedback") },
        Step(id: "apple.volume", reference: "raop.md SET_PARAMETER volume", summary: "SET_PARAMETER volume: -20",
             inSession: true) { walk, _ in await walk.plain("SET_PARAMETER", body: TextParameters.volume(decibels: -20).encoded, contentType: TextParameters.contentType) },
        Step(id: "apple.flushbuffered", reference: "airplay2.md §12 Buffered audio", summary: "FLUSHBUFFERED up to a sequence number",
             inSession: true) { walk, probe in
            await walk.buffered(probe) { await walk.plist("FLUSHBUFFERED", BufferedFlush(from: nil, until: .init(sequence: 100, timestamp: 35200)).plist) }
        },
        Step(id: "apple.setmagiccookie", reference: "airplay2.md §7 The other requests", summary: "SETMAGICCOOKIE (iOS 17 on) is acknowledged",
             inSession: true) { walk, _ in await walk.plist("SETMAGICCOOKIE", .dictionary(["audioFormat": .integer(0x40000)])) },
        Step(id: "apple.teardown", reference: "airplay2.md §7 The other requests", summary: "TEARDOWN of the session",
             inSession: true) { walk, _ in await walk.plain("TEARDOWN") },
        Step(id: "apple.configure", reference: "airplay2.md §16 Remote control and Home", summary: "POST /configure (the Home app) answers who the box is",
             inSession: true) { walk, _ in
            await walk.plist("POST", target: "/configure", .dictionary(["ConfigurationDictionary": .dictionary(["Device_Name": .string("Conformance")])]))
        },
        Step(id: "apple.remote-control", reference: "airplay2.md §16 Remote control and Home", summary: "a remote-control-only SETUP (timingProtocol None) answers an eventPort",
             inSession: false) { walk, probe in await walk.remoteControl(probe) },
    ]
}
