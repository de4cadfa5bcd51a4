/// One thing `airplay doctor` found, with what to do about it.
public struct DoctorFinding: Hashable, Sendable {
    /// How much it matters.
    public enum Severity: String, Hashable, Sendable, Comparable {
        /// The box cannot play, or a sender cannot reach it.
        case problem
        /// It plays, but worse than it could, or may stop.
        case warning
        /// Worth knowing.
        case note
        /// Checked and fine.
        case fine

        private var rank: Int { [.problem, .warning, .note, .fine].firstIndex(of: self)! }
        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable name for scripts and tests (`not-published`, `muted`, `taken-over`…).
    public var code: String
    /// How much it matters.
    public var severity: Severity
    /// One line: what is wrong (or right).
    public var summary: String
    /// What was measured that says so.
    public var evidence: String?
    /// What to do, when something can be done.
    public var fix: String?

    /// A finding from its parts.
    public init(_ code: String, _ severity: Severity, _ summary: String, evidence: String? = nil, fix: String? = nil) {
        self.code = code
        self.severity = severity
        self.summary = summary
        self.evidence = evidence
        self.fix = fix
    }
}

/// What `airplay doctor` gathered about one box before judging it.
public struct DoctorObservations: Hashable, Sendable {
    /// How the control port took a TCP connection.
    public enum Reach: Hashable, Sendable {
        /// It accepted.
        case answered
        /// Refused at once: nothing listens there.
        case refused
        /// No answer within the time limit: dropped on the way.
        case noAnswer(seconds: Double)
        /// The name did not resolve, or the address is not routable from here.
        case unreachable(String)
    }

    /// What browsing mDNS from this machine found.
    public enum Browse: Hashable, Sendable {
        /// Not browsed.
        case skipped
        /// avahi-daemon could not be asked from this machine.
        case unavailable(String)
        /// The device names of the receivers seen, and whether the box was among them.
        case browsed(names: [String], boxSeen: Bool)
    }

    /// HOST:PORT as asked.
    public var target: String
    /// Whether the box is this machine (its `/diagnostics` is then readable).
    public var local: Bool
    /// How the control port took a connection.
    public var reach: Reach
    /// The name `GET /info` gave, if it answered.
    public var infoName: String?
    /// `GET /diagnostics`, when the box gave it.
    public var report: BoxReport?
    /// Why there is no report (a remote box, an older daemon, another receiver).
    public var reportMissing: String?
    /// Whether the report was read over a pair-verified connection (a box elsewhere).
    public var pairVerified = false
    /// The mDNS browse.
    public var browse: Browse

    /// Observations from their parts.
    public init(target: String, local: Bool, reach: Reach, infoName: String? = nil, report: BoxReport? = nil,
                reportMissing: String? = nil, browse: Browse = .skipped) {
        self.target = target
        self.local = local
        self.reach = reach
        self.infoName = infoName
        self.report = report
        self.reportMissing = reportMissing
        self.browse = browse
    }
}

/// Judges a box from what `airplay doctor` observed: each cause of "unreachable" or "connected
/// but silent" it can tell, worst first, each with its evidence and its fix. Pure: the same
/// observations always give the same findings.
public enum BoxDiagnosis {
    /// Ended sessions older than this are history, not the cause of today's silence.
    public static let recentSeconds = 600.0

    /// The findings, problems first.
    public static func findings(_ seen: DoctorObservations) -> [DoctorFinding] {
        var findings = reachability(seen)
        guard case .answered = seen.reach else { return findings }
        findings += publication(seen)
        if let report = seen.report {
            findings += clock(report)
            if let session = report.session {
                findings += current(session, report: report)
            } else if let last = report.sessions?.first, (last.endedSecondsAgo ?? .infinity) < recentSeconds {
                findings += ended(last, next: nil)
                if let stream = last.stream { findings += packets(stream, of: last) }
            } else {
                findings.append(DoctorFinding("idle", .fine, "Nothing plays now; the box waits for a sender."))
            }
            findings += takeovers(report.sessions ?? [], current: report.session)
            findings += lockouts(report.pairingLockouts ?? [])
        } else if let missing = seen.reportMissing {
            findings.append(DoctorFinding("no-report", .note, "The box's own figures were not read: \(missing).",
                                          fix: seen.local ? nil : "Run `airplay doctor` on the box itself for its sessions, clock and output, "
                                              + "or pair with it as its admin (`airplay pair`) to read them from here."))
        }
        return stableSorted(findings)
    }

    /// Sources locked out of pair-setup: someone guessed PINs, or the owner mistyped.
    static func lockouts(_ lockouts: [BoxReport.PairingLockout]) -> [DoctorFinding] {
        guard let longest = lockouts.first else { return [] }
        let others = lockouts.count > 1 ? " (and \(lockouts.count - 1) other source\(lockouts.count > 2 ? "s" : ""))" : ""
        return [DoctorFinding("pairing-locked-out", .warning,
                              "Pairing is refused to \(longest.source) for \(longest.seconds) s more after \(longest.failures) wrong PINs\(others).",
                              evidence: lockouts.map { "\($0.source): \($0.failures) failures, \($0.seconds) s" }.joined(separator: "; "),
                              fix: "If that is not you, someone on the network is guessing the PIN: other senders can still pair. "
                                  + "If it is, wait, or restart airplayd to forget the failures.")]
    }

    // MARK: The network

    static func reachability(_ seen: DoctorObservations) -> [DoctorFinding] {
        switch seen.reach {
        case .answered:
            let name = seen.infoName.map { "\"\($0)\" " } ?? ""
            return [DoctorFinding("reachable", .fine, "The box \(name)answers on \(seen.target).")]
        case .refused:
            return [DoctorFinding("not-listening", .problem, "Nothing listens on \(seen.target): airplayd is not running there, or on another port.",
                                  evidence: "the connection was refused at once",
                                  fix: "On the box: `systemctl status airplayd`, then `journalctl -u airplayd -e` for why it stopped; `sudo systemctl enable --now airplayd` starts it.")]
        case .noAnswer(let seconds):
            return [DoctorFinding("port-filtered", .problem, "\(seen.target) does not answer: a firewall drops the connection, or the box is off this network.",
                                  evidence: "no answer to a TCP connection in \(format(seconds)) s",
                                  fix: "Allow TCP to the control port and UDP both ways between sender and box (airplayd's audio ports are ephemeral; PTP uses UDP 319 and 320), e.g. `sudo nft list ruleset` on the box.")]
        case .unreachable(let why):
            return [DoctorFinding("unreachable", .problem, "\(seen.target) cannot be reached from here: \(why).",
                                  fix: "Check the address (`airplay list` shows what mDNS finds) and that this machine has a route to it.")]
        }
    }

    static func publication(_ seen: DoctorObservations) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        if let mdns = seen.report?.mdns {
            switch mdns.state {
            case "waiting", "failed":
                findings.append(DoctorFinding(
                    "not-published", .problem, "The box is not published over mDNS, so no sender lists it.",
                    evidence: "avahi-daemon: \(mdns.reason ?? mdns.state ?? "?") for \(format(mdns.secondsInState ?? 0)) s",
                    fix: "Start avahi-daemon on the box: `sudo systemctl enable --now avahi-daemon` (airplayd publishes again by itself)."))
            case "established":
                findings.append(DoctorFinding("published", .fine, "Published over mDNS as \"\(mdns.name ?? "?")\"."))
            default:
                if (mdns.secondsInState ?? 0) > 10 {
                    findings.append(DoctorFinding("publishing-slow", .warning, "avahi-daemon has not confirmed the box's records yet.",
                                                  evidence: "\(mdns.state ?? "?") for \(format(mdns.secondsInState ?? 0)) s",
                                                  fix: "`journalctl -u avahi-daemon -e` on the box says why."))
                }
            }
            if let old = mdns.renamedFrom, let new = mdns.name {
                findings.append(DoctorFinding("renamed", .warning, "Another device on the network is called \"\(old)\": the box is published as \"\(new)\".",
                                              fix: "Give the box a name of its own: `name = \"…\"` in /etc/airplayd/airplayd.toml, then `sudo systemctl reload airplayd`."))
            }
        }
        switch seen.browse {
        case .skipped:
            break
        case .unavailable(let why):
            findings.append(DoctorFinding("cannot-browse", .note, "mDNS was not browsed from this machine: \(why).",
                                          fix: "Start avahi-daemon here to check what senders see."))
        case .browsed(let names, let boxSeen):
            if boxSeen {
                findings.append(DoctorFinding("visible", .fine, "Senders browsing from this machine see the box."))
            } else if seen.report?.mdns?.state == "established" || seen.report == nil {
                findings.append(DoctorFinding(
                    "not-visible", .problem, "This machine's mDNS browse does not see the box, so senders here will not list it.",
                    evidence: names.isEmpty ? "no AirPlay receiver seen at all" : "seen: \(names.prefix(8).joined(separator: ", "))",
                    fix: "Multicast DNS (UDP 5353) must pass between sender and box: client isolation or multicast filtering on the Wi-Fi, a firewall, or different subnets."))
            }
        }
        return findings
    }

    static func clock(_ report: BoxReport) -> [DoctorFinding] {
        guard report.offers?.airplay2 == true, report.offers?.bufferedAudio != true else { return [] }
        if report.offers?.ptpTiming == true {
            return [DoctorFinding("buffered-off", .note, "Buffered audio is off in the configuration: AirPlay 2 senders play realtime on PTP here.",
                                  fix: "`buffered_audio = true` in /etc/airplayd/airplayd.toml, for Apple's multi-room buffering.")]
        }
        guard let failure = report.ptpUnavailable else {
            return [DoctorFinding("ptp-disabled", .note, "PTP is off in the configuration: senders play AirPlay 2 in realtime only, not buffered.",
                                  fix: "`ptp = true` in /etc/airplayd/airplayd.toml, unless another PTP program must keep UDP 319 and 320.")]
        }
        return [DoctorFinding(
            "ptp-off", .warning, "AirPlay 2 is on but PTP is not running: iPhones, Macs and HomePods cannot play buffered audio here.",
            evidence: failure,
            fix: "Another program holds UDP 319 and 320 (`sudo ss -ulpn 'sport = :319'`: nqptp, ptp4l, shairport-sync): stop it. Under systemd, airplayd.socket binds them for airplayd (`sudo systemctl enable --now airplayd.socket`, then restart airplayd).")]
    }

    // MARK: A session

    static func current(_ session: BoxReport.Session, report: BoxReport) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        let stream = session.stream ?? BoxReport.Stream()
        let received = stream.received ?? 0, played = stream.framesPlayed ?? 0, seconds = session.seconds ?? 0
        let who = describe(session)
        if received == 0, seconds >= 3, session.phase == "recording" || session.phase == nil {
            findings.append(DoctorFinding(
                "no-audio-arriving", .problem, "\(who) set up a session \(format(seconds)) s ago, but no audio packet has arrived.",
                evidence: "0 packets received",
                fix: "UDP from the sender to the box is dropped: allow it through the box's firewall (airplayd's audio ports are ephemeral) and any between them."))
        }
        let needsPTP = session.kind == "buffered" || stream.clock?.source == "ptp"
        let followed = report.ptp?.clocks?.contains { $0.followed == true && $0.stopped != true } == true
        if needsPTP, received > 0, !followed {
            findings.append(DoctorFinding(
                "ptp-not-heard", .problem, "\(who) times its audio by PTP, but the box hears no PTP clock to play it on.",
                evidence: "\(received) packets received, \(played) frames played; clocks heard: \(report.ptp?.clocks?.count ?? 0)",
                fix: "Allow UDP 319 and 320 from the sender to the box; on Wi-Fi, multicast must pass (client isolation off)."))
        }
        if let volume = report.nowPlaying?.volume, volume <= -144 {
            findings.append(DoctorFinding("muted", .problem, "\(who) has muted the box: its volume is at −144 dB.",
                                          fix: "Raise the volume on the sender (the box follows the sender's slider)."))
        }
        if session.paused == true {
            findings.append(DoctorFinding("paused", .note, "\(who) has paused."))
        }
        findings += packets(stream, of: session)
        if let restarts = stream.output?.restarts, restarts > 0 {
            findings.append(DoctorFinding(
                "card-restarted", .warning, "The box's sound card stopped and started again \(restarts) time(s) while \(who) played (an underrun, or the card was gone).",
                evidence: "output restarts \(restarts)",
                fix: "If it keeps happening: a box too busy to feed the card in time (`top`), or a USB DAC losing its connection (`dmesg`)."))
        }
        if findings.allSatisfy({ $0.severity >= .note }), played > 0 {
            let p95 = stream.sync?.p95Ms.map { ", within \(format($0)) ms of its clock (p95)" } ?? ""
            let card = stream.output.map { output in
                let rate = output.ratePPM.map { "its sound card running \($0 >= 0 ? "+" : "")\(format($0)) ppm" } ?? "its sound card's rate not yet known"
                return "; \(rate), holding \(format(output.delayMs ?? 0)) ms, \(output.framesCorrected ?? 0) frames inserted or removed to follow it"
            } ?? ""
            findings.append(DoctorFinding("playing", .fine, "Playing \(who)'s \(stream.codec ?? "audio")\(p95)\(card)."))
        }
        return findings
    }

    static func ended(_ session: BoxReport.Session, next: BoxReport.Session?) -> [DoctorFinding] {
        let reason = session.reason ?? "", who = describe(session)
        let ago = "\(format(session.endedSecondsAgo ?? 0)) s ago"
        if reason.hasPrefix("audio output failed") {
            return [DoctorFinding(
                "output-failed", .problem, "The box's audio output did not start, so \(who)'s session ended \(ago).",
                evidence: reason,
                fix: "Check `audio_output` in /etc/airplayd/airplayd.toml: the device may be missing or held by another program (`aplay -l`, `fuser -v /dev/snd/*`).")]
        }
        if reason.contains("PTP master"), reason.contains("silent") {
            return [DoctorFinding(
                "ptp-lost", .problem, "The PTP clock \(who) played on went silent, so its session ended \(ago).", evidence: reason,
                fix: "Allow UDP 319 and 320 from the sender to the box; on Wi-Fi, multicast must pass (client isolation off).")]
        }
        if reason.hasPrefix("no RTSP or RTP") {
            return [DoctorFinding("sender-vanished", .warning, "\(who) went silent and its session was ended \(ago).", evidence: reason,
                                  fix: "The sender slept, crashed or left the network; if it keeps happening, check the Wi-Fi between them.")]
        }
        return []
    }

    static func takeovers(_ sessions: [BoxReport.Session], current: BoxReport.Session?) -> [DoctorFinding] {
        // Newest first: a taken-over session's successor is the one before it in the list, or
        // the session playing now.
        for (index, session) in sessions.enumerated() where session.reason?.hasPrefix("taken over") == true {
            guard (session.endedSecondsAgo ?? .infinity) < recentSeconds else { break }
            let successor = index > 0 ? describe(sessions[index - 1]) : current.map(describe) ?? "another sender"
            return [DoctorFinding(
                "taken-over", .warning, "\(successor) took over from \(describe(session)) \(format(session.endedSecondsAgo ?? 0)) s ago.",
                fix: "To keep the first sender playing until it stops, set `audio_takeover = \"refuse\"` in /etc/airplayd/airplayd.toml.")]
        }
        return []
    }

    // MARK: Packets

    static func packets(_ stream: BoxReport.Stream, of session: BoxReport.Session) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        let who = describe(session)
        let drops = stream.droppedBeforePlayout ?? [:]
        let received = stream.received ?? 0, lost = stream.lost ?? 0
        if let failed = drops["unauthenticated"], failed > 0 {
            findings.append(DoctorFinding(
                "decrypt-failing", .problem, "\(failed) of \(who)'s packets failed authentication: its keys and the box's disagree.",
                evidence: reasons(stream, containing: "authenticate"),
                fix: "Remove the box on the sender and pair again; on the box, `airplayd pairings list` shows who is paired."))
        }
        if let failed = drops["undecodable"], failed > 0, failed * 100 >= max(1, received + failed) {
            findings.append(DoctorFinding(
                "undecodable", .problem, "\(failed) of \(who)'s packets could not be decoded: a wrong key, or another format than it announced.",
                evidence: stream.dropReasons.map { $0.sorted { $0.value > $1.value }.prefix(2).map { "\($0.key) (\($0.value))" }.joined(separator: "; ") },
                fix: "If the sender encrypts, pair or enter the password again; else report the sender and its format."))
        }
        if let backlog = drops["decoderBacklog"], backlog > 0 {
            findings.append(DoctorFinding("cpu-starved", .warning, "The box fell behind decoding \(who)'s audio: \(backlog) packets dropped.",
                                          fix: "Something else takes the box's CPU (`top`); an uncompressed (L16) or ALAC stream costs less than AAC."))
        }
        if let stray = drops["strayHost"], stray > 0 {
            findings.append(DoctorFinding("stray-packets", .note, "\(stray) packets came from a host other than \(who) and were ignored.",
                                          fix: "Usually a previous sender still streaming, or NAT between sender and box."))
        }
        if lost > 0, lost * 100 >= max(1, received + lost) {
            let requested = stream.requested ?? 0, resent = stream.retransmitted ?? 0
            let unanswered = requested > 0 && resent == 0
            findings.append(DoctorFinding(
                unanswered ? "resends-unanswered" : "packets-lost", .warning,
                "\(lost) of \(received + lost) packets from \(who) never arrived in time (dropouts).",
                evidence: "\(requested) asked for again, \(resent) resent",
                fix: unanswered ? "The sender does not answer resend requests: UDP from the box back to the sender is blocked, or the sender does not resend."
                                : "A lossy link: wired Ethernet, or a closer access point; a sender with more latency has more time to resend."))
        }
        if (stream.worstLatenessMs ?? 0) >= 50 || (stream.reanchors ?? 0) >= 3 {
            findings.append(DoctorFinding(
                "output-late", .warning, "The box's output ran late: audio may skip or drift from other rooms.",
                evidence: "worst \(format(stream.worstLatenessMs ?? 0)) ms late, \(stream.reanchors ?? 0) re-anchors",
                fix: "The box is short of CPU, or its output blocks (a Bluetooth or network sink): `top`, and a plain ALSA device for `audio_output`."))
        }
        if let implausible = stream.clock?.implausibleSyncs, implausible > 0, stream.clock?.timedMostlyBy == "arrival" {
            findings.append(DoctorFinding(
                "syncs-implausible", .warning, "\(who)'s timing does not add up, so the box plays its audio as it arrives: rooms may not stay in step.",
                evidence: "\(implausible) sync packets out of line with its audio",
                fix: "A sender whose clock jumped, or a bug in it: update it, or report it with `journalctl -u airplayd`."))
        }
        return findings
    }

    // MARK: Words

    static func describe(_ session: BoxReport.Session) -> String {
        let name = session.senderName.map { " (\($0))" } ?? ""
        var address = session.sender ?? "?"
        // An IPv4 sender on a dual-stack socket: its address as people write it.
        if address.hasPrefix("::ffff:"), address.contains(".") { address.removeFirst(7) }
        return "the sender at \(address)\(name)"
    }

    static func reasons(_ stream: BoxReport.Stream, containing word: String) -> String? {
        stream.dropReasons?.filter { $0.key.contains(word) }.map { "\($0.key): \($0.value)" }.sorted().first
    }

    static func format(_ value: Double) -> String {
        value.rounded() == value || abs(value) >= 10 ? String(Int(value.rounded())) : String((value * 10).rounded() / 10)
    }

    /// Worst first, in the order found within one severity; each summary a sentence.
    static func stableSorted(_ findings: [DoctorFinding]) -> [DoctorFinding] {
        findings.enumerated().sorted { ($0.element.severity, $0.offset) < ($1.element.severity, $1.offset) }.map { item in
            var finding = item.element
            finding.summary = finding.summary.prefix(1).uppercased() + finding.summary.dropFirst()
            return finding
        }
    }
}
