import AirPlayConformance
import Testing

/// `airplay doctor`'s judgement, one cause at a time: each report below is what airplayd's
/// `GET /diagnostics` says in that situation, and the finding's code is what scripts match on.
@Suite struct BoxDiagnosisTests {
    static let published = #"{"state":"established","name":"Living Room","secondsInState":40}"#
    static let offers = #"{"audio":true,"video":true,"airplay2":true,"bufferedAudio":true}"#

    /// A report with the given members; the rest as an idle, published box.
    static func report(_ members: [String: String] = [:]) throws -> BoxReport {
        var all = ["name": #""Living Room""#, "deviceID": #""02:FC:00:00:00:01""#, "offers": offers, "mdns": published,
                   "ptp": #"{"clocks":[],"offset_to_system_clock_ns":null}"#, "nowPlaying": #"{"state":"idle","volume":null}"#,
                   "session": "null", "sessions": "[]"]
        all.merge(members) { $1 }
        let text = "{" + all.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        return try BoxReport(json: Array(text.utf8))
    }

    static func codes(_ report: BoxReport?, reach: DoctorObservations.Reach = .answered,
                      browse: DoctorObservations.Browse = .browsed(names: ["Living Room"], boxSeen: true)) -> [String] {
        BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: reach, infoName: "Living Room",
                                                 report: report, browse: browse)).map(\.code)
    }

    static func problems(_ report: BoxReport) -> [String] {
        BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .answered, report: report))
            .filter { $0.severity == .problem }.map(\.code)
    }

    /// A session playing now, with its stream's figures.
    static func playing(kind: String = "airplay1", seconds: Double = 20, stream: String) -> String {
        #"{"session":3,"sender":"10.0.0.7","senderName":"iPhone","kind":"\#(kind)","seconds":\#(seconds),"phase":"recording","paused":false,"stream":\#(stream)}"#
    }

    static let healthyStream = #"{"codec":"ALAC","received":2000,"lost":0,"framesPlayed":700000,"requested":0,"retransmitted":0,"worstLatenessMs":3,"reanchors":0,"droppedBeforePlayout":{},"clock":{"source":"sender","timedMostlyBy":"sender","implausibleSyncs":0},"sync":{"p95Ms":0.4}}"#

    @Test func aHealthyIdleBoxHasNoProblem() throws {
        let findings = BoxDiagnosis.findings(DoctorObservations(
            target: "127.0.0.1:7000", local: true, reach: .answered, infoName: "Living Room", report: try Self.report(),
            browse: .browsed(names: ["Living Room"], boxSeen: true)))
        #expect(findings.map(\.code) == ["reachable", "published", "visible", "idle"])
        #expect(findings.allSatisfy { $0.severity == .fine })
    }

    /// On a sound card with a clock of its own, the box says how fast the card runs, what it
    /// holds and how many frames followed it; a card that had to be restarted is a warning.
    @Test func theSoundCardsRateAndRestartsAreSaid() throws {
        let card = Self.healthyStream.dropLast() + #","output":{"ratePPM":201.4,"rateUncertaintyPPM":0.8,"delayMs":100.2,"restarts":0,"framesCorrected":530}}"#
        let findings = BoxDiagnosis.findings(DoctorObservations(
            target: "127.0.0.1:7000", local: true, reach: .answered,
            report: try Self.report(["session": Self.playing(stream: String(card)), "nowPlaying": #"{"state":"playing","volume":-10}"#])))
        let playing = try #require(findings.first { $0.code == "playing" })
        #expect(playing.summary.contains("+201 ppm") && playing.summary.contains("530 frames"), "\(playing.summary)")
        let restarted = card.replacingOccurrences(of: #""restarts":0"#, with: #""restarts":2"#)
        let codes = Self.codes(try Self.report(["session": Self.playing(stream: restarted), "nowPlaying": #"{"state":"playing","volume":-10}"#]))
        #expect(codes.contains("card-restarted"))
    }

    @Test func aPlayingSessionIsDescribed() throws {
        let codes = Self.codes(try Self.report(["session": Self.playing(stream: Self.healthyStream),
                                                "nowPlaying": #"{"state":"playing","volume":-10}"#]))
        #expect(codes.contains("playing") && !codes.contains("idle"))
    }

    /// Refused at once means nothing listens; silence means something drops the connection.
    @Test func aClosedPortAndAFilteredPortAreToldApart() {
        #expect(Self.codes(nil, reach: .refused) == ["not-listening"])
        #expect(Self.codes(nil, reach: .noAnswer(seconds: 3)) == ["port-filtered"])
        #expect(Self.codes(nil, reach: .unreachable("Network is unreachable")) == ["unreachable"])
    }

    @Test func noAvahiDaemonMeansNotPublished() throws {
        let report = try Self.report(["mdns": #"{"state":"waiting","name":"Living Room","reason":"Daemon not running","secondsInState":12}"#])
        #expect(Self.problems(report) == ["not-published"])
    }

    /// The box says its records are out, but a browse from here does not see them: multicast
    /// does not pass between this machine and the box.
    @Test func recordsPublishedButNotSeenAreNamed() throws {
        let codes = Self.codes(try Self.report(), browse: .browsed(names: ["Kitchen"], boxSeen: false))
        #expect(codes.first == "not-visible")
    }

    @Test func aNameCollisionIsAWarning() throws {
        let report = try Self.report(["mdns": #"{"state":"established","name":"Living Room #2","renamedFrom":"Living Room"}"#])
        #expect(Self.codes(report).contains("renamed"))
        #expect(Self.problems(report).isEmpty)
    }

    /// PTP that could not start is a warning with the daemon's reason; PTP turned off is a note.
    @Test func airPlay2WithoutPTPIsNamed() throws {
        let offers = #"{"audio":true,"airplay2":true,"bufferedAudio":false}"#
        let failed = try Self.report(["offers": offers, "ptp": "null", "ptpUnavailable": #""cannot bind UDP 319: Address already in use""#])
        let finding = try #require(BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .answered, report: failed))
            .first { $0.code == "ptp-off" })
        #expect(finding.severity == .warning && finding.evidence == "cannot bind UDP 319: Address already in use")
        #expect(Self.codes(try Self.report(["offers": offers, "ptp": "null"])).contains("ptp-disabled"))
        // PTP runs and the owner turned buffering off (`buffered_audio = false`): a note, not PTP's fault.
        let realtimeOnly = #"{"audio":true,"airplay2":true,"bufferedAudio":false,"ptpTiming":true}"#
        #expect(Self.codes(try Self.report(["offers": realtimeOnly])).contains("buffered-off"))
    }

    @Test func aBufferedSessionWithoutAClockIsNamed() throws {
        let stream = #"{"codec":"ALAC","received":400,"lost":0,"framesPlayed":0,"clock":{"source":"ptp"}}"#
        let report = try Self.report(["session": Self.playing(kind: "buffered", stream: stream)])
        #expect(Self.problems(report) == ["ptp-not-heard"])
        let heard = try Self.report(["session": Self.playing(kind: "buffered", stream: Self.healthyStream),
                                     "ptp": #"{"clocks":[{"identity":"a","followed":true,"stopped":false}],"offset_to_system_clock_ns":12}"#])
        #expect(Self.problems(heard).isEmpty)
    }

    @Test func aSessionWithoutAudioArrivingIsNamed() throws {
        let stream = #"{"codec":"ALAC","received":0,"lost":0,"framesPlayed":0}"#
        #expect(Self.problems(try Self.report(["session": Self.playing(seconds: 8, stream: stream)])) == ["no-audio-arriving"])
        // A session a second old has not had the time.
        #expect(Self.problems(try Self.report(["session": Self.playing(seconds: 1, stream: stream)])).isEmpty)
    }

    @Test func aMutedSenderIsNamed() throws {
        let report = try Self.report(["session": Self.playing(stream: Self.healthyStream), "nowPlaying": #"{"state":"playing","volume":-144}"#])
        #expect(Self.problems(report) == ["muted"])
    }

    @Test func packetsThatFailAuthenticationAreNamed() throws {
        let stream = #"{"codec":"ALAC","received":100,"framesPlayed":0,"droppedBeforePlayout":{"unauthenticated":900},"dropReasons":{"audio packet does not authenticate (AirPlay 2 shk)":900}}"#
        let findings = BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .answered,
                                                                report: try Self.report(["session": Self.playing(kind: "airplay2", stream: stream)])))
        let decrypt = try #require(findings.first { $0.code == "decrypt-failing" })
        #expect(decrypt.severity == .problem && decrypt.evidence?.contains("does not authenticate") == true && decrypt.fix?.contains("pair") == true)
    }

    /// One undecodable packet in a thousand is a glitch; one in ten is a wrong key or format.
    @Test func undecodablePacketsAreNamedWhenTheyAreMany() throws {
        func stream(_ bad: Int) -> String {
            #"{"codec":"ALAC","received":1000,"framesPlayed":300000,"droppedBeforePlayout":{"undecodable":\#(bad)},"dropReasons":{"ALAC frame is malformed":\#(bad)}}"#
        }
        #expect(Self.problems(try Self.report(["session": Self.playing(stream: stream(1))])).isEmpty)
        #expect(Self.problems(try Self.report(["session": Self.playing(stream: stream(100))])) == ["undecodable"])
    }

    /// Losses the resends could not fill: a lossy link when resends came, a blocked way back
    /// when none ever did.
    @Test func lostPacketsAndUnansweredResendsAreToldApart() throws {
        func stream(resent: Int) -> String {
            #"{"codec":"L16","received":900,"lost":100,"framesPlayed":300000,"requested":150,"retransmitted":\#(resent)}"#
        }
        #expect(Self.codes(try Self.report(["session": Self.playing(stream: stream(resent: 50))])).contains("packets-lost"))
        #expect(Self.codes(try Self.report(["session": Self.playing(stream: stream(resent: 0))])).contains("resends-unanswered"))
    }

    @Test func aLateOutputAndImplausibleSyncsAreWarnings() throws {
        let stream = #"{"codec":"L16","received":900,"framesPlayed":300000,"worstLatenessMs":180,"reanchors":4,"clock":{"timedMostlyBy":"arrival","implausibleSyncs":12}}"#
        let codes = Self.codes(try Self.report(["session": Self.playing(stream: stream)]))
        #expect(codes.contains("output-late") && codes.contains("syncs-implausible"))
    }

    /// How the last sessions ended, when nothing plays now.
    @Test func endedSessionsSayWhyTheyEnded() throws {
        func ended(_ reason: String, ago: Double = 30) -> String {
            #"[{"session":4,"sender":"10.0.0.9","kind":"airplay1","seconds":2,"reason":"\#(reason)","endedSecondsAgo":\#(ago),"stream":{"received":50}}]"#
        }
        #expect(Self.problems(try Self.report(["sessions": ended("audio output failed: filesink refused to start")])) == ["output-failed"])
        #expect(Self.problems(try Self.report(["sessions": ended("the PTP master 1a2b has been silent past its holdover")])) == ["ptp-lost"])
        #expect(Self.codes(try Self.report(["sessions": ended("no RTSP or RTP for 30 s")])).contains("sender-vanished"))
        // An hour ago is history.
        #expect(Self.codes(try Self.report(["sessions": ended("audio output failed: gone", ago: 3600)])).contains("idle"))
    }

    /// The session that took over is the one after it: the finding names both senders.
    @Test func aTakeoverNamesBothSenders() throws {
        let sessions = #"[{"session":6,"sender":"10.0.0.8","senderName":"Mac","kind":"airplay2","reason":"TEARDOWN","endedSecondsAgo":5},"#
            + #"{"session":5,"sender":"10.0.0.7","senderName":"iPhone","kind":"airplay2","reason":"taken over by a new SETUP","endedSecondsAgo":60}]"#
        let findings = BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .answered,
                                                                report: try Self.report(["sessions": sessions])))
        let takeover = try #require(findings.first { $0.code == "taken-over" })
        #expect(takeover.summary.contains("10.0.0.8 (Mac) took over from the sender at 10.0.0.7 (iPhone)"))
        #expect(takeover.fix?.contains("audio_takeover") == true)
    }

    @Test func aRemoteBoxIsJudgedOnWhatCanBeSeenFromHere() {
        let findings = BoxDiagnosis.findings(DoctorObservations(
            target: "10.0.0.5:7000", local: false, reach: .answered, infoName: "Kitchen",
            reportMissing: "the box gives them to programs on the box only", browse: .browsed(names: [], boxSeen: false)))
        #expect(findings.map(\.code) == ["not-visible", "no-report", "reachable"])
    }

    @Test func findingsReadAsTextAndJSON() throws {
        let seen = DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .refused)
        let findings = BoxDiagnosis.findings(seen)
        let text = DoctorRendering.text(findings, observations: seen)
        #expect(text.contains("✘ Nothing listens on 127.0.0.1:7000") && text.contains("fix:  On the box") && text.hasSuffix("1 problem found.\n"))
        let json = DoctorRendering.json(findings, observations: seen)
        #expect(json.contains(#""ok":false"#) && json.contains(#""code":"not-listening""#))
    }

    /// A source locked out of pair-setup after wrong PINs is named, the longest wait first:
    /// someone guesses the PIN, or the owner mistyped; other senders can still pair.
    @Test func aPairingLockOutIsNamedWithItsSource() throws {
        let report = try Self.report(["pairingLockouts": #"[{"source":"2001:db8:1:2::/64","failures":12,"seconds":118},{"source":"192.0.2.66","failures":10,"seconds":20}]"#])
        let findings = BoxDiagnosis.findings(DoctorObservations(target: "127.0.0.1:7000", local: true, reach: .answered, report: report))
        let lockout = try #require(findings.first { $0.code == "pairing-locked-out" })
        #expect(lockout.severity == .warning)
        #expect(lockout.summary.contains("2001:db8:1:2::/64") && lockout.summary.contains("118 s") && lockout.summary.contains("1 other source"),
                "\(lockout.summary)")
        #expect(!Self.codes(try Self.report()).contains("pairing-locked-out"))
    }
}
