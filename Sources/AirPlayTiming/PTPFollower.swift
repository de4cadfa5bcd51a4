import AirPlayWire

/// Follows the PTP masters it hears without touching the system clock: a pure state machine
/// that takes PTP messages and the time they arrived (our monotonic clock, nanoseconds) and
/// returns the Delay_Req messages to send.
///
/// It keeps every master it hears apart (a home may have several senders, each a grandmaster
/// of its own), estimates each one's offset from two-step or one-step Syncs, corrects it by the
/// path delay measured with Delay_Req/Delay_Resp when the master answers them (ptp4l does; a
/// master that never answers is taken at zero path delay, as nqptp does), and follows one: the
/// best by IEEE 1588's dataset comparison among those whose address a session named
/// (`timingPeerInfo`, `SETPEERS`), or among all while none did. A master silent for
/// `Configuration.silence` is in holdover: its last line still answers for `holdover`, then it
/// is forgotten.
public struct PTPFollower: Sendable {
    /// Limits and rates.
    public struct Configuration: Hashable, Sendable {
        /// How far back Syncs are kept for the fit (nanoseconds): 16 s, 128 of Apple's and
        /// ptp4l's 8 a second. On a jittery link the quickest few of a longer window wander
        /// less; kept by age, not count, so a master that sends faster for a while (our
        /// grandmaster's quick start) does not shorten the window.
        public var windowSpan: Int64 = 16_000_000_000
        /// The most Syncs kept per master whatever their age (16 s at 32 a second).
        public var window = 512
        /// The most path delay measurements kept per master; they are kept for `windowSpan`
        /// too, like the Syncs, so the quickest of each direction are drawn from samples alike
        /// (their biases cancel on a jittery link).
        public var delayWindow = 512
        /// A master not heard from for this long is silent (nanoseconds).
        public var silence: Int64 = 2_000_000_000
        /// How long a silent master's last line is still used, then it is forgotten (nanoseconds).
        public var holdover: Int64 = 30_000_000_000
        /// How often the followed master is sent a Delay_Req (nanoseconds) when its Syncs do not
        /// say how often they come; otherwise as often as they do, within 1/64 s and 1 s, so both
        /// directions have as many samples (ptp4l and our grandmaster answer every one; Apple's
        /// may answer none).
        public var delayRequestInterval: Int64 = 125_000_000
        /// The most masters tracked at once; more are ignored (and counted).
        public var maximumMasters = PTPShareMessage.maximumMasters
        /// Whether a silent master named as a peer is woken with Announces (`wakeUp`), as a
        /// receiver wakes an idle iPhone. A sender following a HomePod's clock must not: an
        /// Announce from it is a clock on offer, and the HomePod then serves none.
        public var wakesMasters = true

        /// The defaults.
        public init() {}
    }

    /// What the caller must do.
    public enum Action: Hashable, Sendable {
        /// Send this Delay_Req to the master's address (event port 319), and report its send time.
        case sendDelayRequest(PTPMessage, to: String)
        /// Send this Announce from our general port (320) to the master's (320): half of a
        /// wake-up (`wakeUp`).
        case sendAnnounce(PTPMessage, to: String)
    }

    /// One master as the follower sees it.
    public struct MasterStatus: Hashable, Sendable {
        /// Its port identity (the source of its Syncs).
        public var identity: PTPPortIdentity
        /// The address it sends from.
        public var address: String
        /// Its latest Announce.
        public var announce: PTPAnnounce?
        /// Nanoseconds since it was last heard.
        public var silentFor: Int64
        /// Its offset line, once it has Syncs.
        public var line: ClockLine?
        /// The path delay measured to it, in nanoseconds, when it answers Delay_Req.
        public var pathDelay: Int64?
        /// True for the master followed.
        public var followed: Bool
        /// Its timing sequence: 1, then one more each time its line started afresh.
        public var sequence = 1
        /// Why its line last started afresh (a step, a new grandmaster, a clock that resumed).
        public var lastRestart: String?
        /// Wake-ups sent to it (pairs of Announces).
        public var wakeUps = 0
        /// Follow_Ups in a row that repeated the same time: it has stopped (an idle iPhone).
        public var frozenFollowUps = 0
        /// Whether its clock is stopped now (`stoppedAfter` repeats in a row).
        public var stopped: Bool { frozenFollowUps >= PTPFollower.stoppedAfter }
    }

    /// The halves of a two-step Sync, in whichever order they came.
    private struct PendingSync {
        /// Our time the Sync arrived, and its correction field.
        var arrival: Int64?
        var syncCorrection: Int64 = 0
        /// The Follow_Up's precise origin plus its correction field.
        var preciseOrigin: Int64?
    }

    private struct Master {
        var address: String
        var announce: PTPAnnounce?
        var lastHeard: Int64
        /// Two-step Syncs waiting for their Follow_Up, or Follow_Ups that overtook their Sync
        /// (a link that reorders), by sequence id.
        var pendingSyncs: [UInt16: PendingSync] = [:]
        /// Our time and (master minus ours) of each completed Sync, before the path delay.
        var samples: [(local: Int64, offset: Double)] = []
        var pendingRequests: [UInt16: Int64] = [:]
        /// The Sync interval its last Sync gave (nanoseconds), if it gave a plausible one.
        var syncInterval: Int64?
        /// Each answered Delay_Req: our send time and the master's receive time minus it.
        var requests: [(sent: Int64, masterMinusSent: Int64)] = []
        var line: ClockLine?
        /// Its timing sequence (1, then one more per fresh start) and why it last started afresh.
        var sequence = 1
        var lastRestart: String?
        /// The Apple behaviour (`wakeUp`): armed while a session names this master as a peer;
        /// what was sent since it was armed.
        var wakeUpArmed = false
        var wokenWhileSilent = false
        var announcesWithoutFollowUp = 0
        var followUpsSinceArmed = 0
        var wakeUps = 0
        /// The last origin time and how many samples in a row repeated it.
        var lastOrigin: Int64?
        var frozenFollowUps = 0

        /// The path delay: the mean of the quickest sixteenth of the measurements (queueing
        /// only adds; the Syncs' line is raised through the same share of theirs). A Sync's
        /// (t2 - t1) plus a request's (t4 - t3) is twice the path delay, and the Syncs' line
        /// taken at t3 stands for a (t2 - t1) measured then. The line in force now
        /// is the one used for every request, so early requests, answered while the line was
        /// still settling, are as good as late ones: the lucky Syncs and the lucky requests
        /// meet half way, whatever the link's queueing.
        var pathDelay: Int64? {
            guard let line, !requests.isEmpty else { return nil }
            // Each delay negated, largest first: the quickest first, as `quickestShare` takes them.
            let negated = requests.map { line.offset(at: $0.sent) - Double($0.masterMinusSent) }.sorted(by: >)
            let quickest = ClockLine.quickestShare(ofQuickestFirst: negated)
            let delay = ClockLine.nanoseconds(-quickest.reduce(0, +) / Double(quickest.count) / 2)
            return min(PTPFollower.longestPathDelay, max(0, delay))
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// Our own port identity, in our Delay_Reqs.
    public let identity: PTPPortIdentity
    private var masters: [PTPPortIdentity: Master] = [:]
    private var peers: Set<String>?
    private var timeline: UInt64?
    private var nextRequest: Int64 = 0
    private var requestSequence: UInt16 = 0
    /// Announces to send at their time (the second half of each wake-up, and the first, which
    /// `receive` cannot return): sent by `tick`.
    private var dueAnnounces: [(at: Int64, message: PTPMessage, to: String)] = []
    /// Messages from hosts that are not the session's peers, or beyond `maximumMasters`.
    public private(set) var ignored = 0
    /// Syncs, Follow_Ups and Delay_Resps that matched nothing (lost partners, stale sequence numbers).
    public private(set) var unmatched = 0
    /// Syncs, Follow_Ups and Delay_Resps with times no clock could have: dropped.
    public private(set) var implausible = 0

    /// The largest offset between a master's clock and ours taken as a clock's: 2^62 ns, 146
    /// years (PTP counts from 1970, our monotonic clock from boot). Any UDP datagram may claim
    /// a time; beyond this it is a broken or hostile master, and its times would overflow on
    /// the way to a frame's.
    public static let largestOffset: Int64 = 1 << 62
    /// Sync halves waiting for their partner, and Delay_Reqs waiting for their answer, kept
    /// per master: a second of them at the quickest rate followed (64 a second).
    static let pendingLimit = 64
    /// How long a master's Syncs must span before it is followed over one already heard longer:
    /// eight of 8 a second (nanoseconds).
    static let settledSpan: Int64 = 875_000_000
    /// The longest path delay believed (a second is no network's).
    public static let longestPathDelay: Int64 = 1_000_000_000
    /// A sample this far off its master's line (nanoseconds) means the master's clock stepped
    /// (an iPhone waking, a sender restarting its timeline): its line starts afresh rather than
    /// averaging two timescales for a window's length. Jitter is milliseconds; a second is a step.
    public static let stepThreshold: Int64 = 1_000_000_000
    /// Follow_Ups in a row repeating one time that make a clock "stopped" (a second of 8 a second).
    public static let stoppedAfter = 8
    /// Follow_Ups repeating one time after which a stopped clock is woken, once (60 s of 8 a
    /// second, as nqptp).
    static let stoppedWakeAfter = 480
    /// The Announces without a Follow_Up after which a silent armed master is woken again.
    static let silentAnnounces = 3
    /// The gap between the two Announces of a wake-up (nanoseconds).
    static let wakeUpSpacing: Int64 = 150_000_000

    /// A follower with our port identity.
    public init(identity: PTPPortIdentity, configuration: Configuration = Configuration()) {
        self.identity = identity
        self.configuration = configuration
    }

    /// Follows only masters at these addresses (a session's timing peers); nil follows any.
    public mutating func setPeers(_ addresses: [String]?) {
        peers = addresses.map { Set($0.map(IPAddressBytes.host)) }
        // A session named its peers: each master among them may be woken again (nqptp re-arms
        // on every timing peer list; a clock that was silent may be revisited).
        guard let peers else { return }
        for key in masters.keys where peers.contains(IPAddressBytes.host(masters[key]!.address)) {
            masters[key]!.wakeUpArmed = true
            masters[key]!.wokenWhileSilent = false
            masters[key]!.announcesWithoutFollowUp = 0
            masters[key]!.followUpsSinceArmed = 0
        }
    }

    /// Prefers the master with this clock identity (an anchor's `networkTimeTimelineID`) while
    /// it is heard, whatever the best-master comparison says; nil drops the preference.
    public mutating func prefer(timeline clockIdentity: UInt64?) {
        timeline = clockIdentity
    }

    /// Our time (nanoseconds) at which the followed master's clock reads `masterTime`, for a
    /// moment near our time `now`; nil with no usable master.
    public func localTime(ofMaster masterTime: Int64, now: Int64) -> Int64? {
        followed(now: now)?.localTime(ofMaster: masterTime, near: now)
    }

    /// A message arrived from `address` at our time `local` (nanoseconds).
    /// `address` is kept as given (an IPv6 link-local one with its `%interface`), as Delay_Reqs
    /// and wake-ups go back to it; peers are compared by host alone.
    public mutating func receive(_ message: PTPMessage, from address: String, at local: Int64) {
        let address = IPAddressBytes.plain(address)
        let host = IPAddressBytes.host(address)
        if let peers, !peers.contains(host) {
            ignored += 1
            return
        }
        let key = message.header.source
        if masters[key] == nil {
            // Only a clock that sends Syncs or Announces is a master; Delay_Reqs of other followers are not.
            guard message.header.type == .sync || message.header.type == .announce, masters.count < configuration.maximumMasters else {
                if message.header.type != .delayRequest { ignored += 1 }
                return
            }
            var master = Master(address: address, lastHeard: local)
            master.wakeUpArmed = peers?.contains(host) == true
            masters[key] = master
        }
        guard var master = masters[key] else { return }
        master.address = address
        master.lastHeard = local
        switch message.body {
        case .announce(let announce):
            if let previous = master.announce?.grandmasterIdentity, previous != announce.grandmasterIdentity {
                restart(&master, at: local, because: "its grandmaster changed")
            }
            master.announce = announce
            master.announcesWithoutFollowUp = min(master.announcesWithoutFollowUp + 1, Self.silentAnnounces + 2)
            // A master a session named that announces but sends no Follow_Ups (an Apple Silicon
            // Mac may stay silent until spoken to) is woken at its third such Announce, once.
            // nqptp also wakes every named master on its first Announce; that disturbs a clock
            // that already serves (OwnTone's group skew went from 0.04 to 2-3 ms), so not here.
            if master.wakeUpArmed, !master.wokenWhileSilent, master.followUpsSinceArmed == 0,
               master.announcesWithoutFollowUp == Self.silentAnnounces {
                master.wokenWhileSilent = true
                wakeUp(&master, at: local)
            }
        case .sync(let origin):
            let correction = message.header.correctionNanoseconds
            let log = message.header.logInterval
            master.syncInterval = (-6...0).contains(log) ? 1_000_000_000 >> Int64(-log) : nil
            if message.header.isTwoStep {
                pairSync(in: &master, sequence: message.header.sequence) { pending in
                    pending.arrival = local
                    pending.syncCorrection = correction
                }
            } else if let origin = Self.sum(origin.totalNanoseconds, correction) {
                addSample(to: &master, arrival: local, origin: origin)
            } else {
                implausible += 1
            }
        case .followUp(let precise):
            guard let origin = Self.sum(precise.totalNanoseconds, message.header.correctionNanoseconds) else {
                implausible += 1
                break
            }
            pairSync(in: &master, sequence: message.header.sequence) { pending in
                pending.preciseOrigin = origin
            }
        case .delayResponse(let received, let requester):
            guard requester == identity else { break }
            if let sent = master.pendingRequests.removeValue(forKey: message.header.sequence) {
                guard let masterReceived = Self.sum(received.totalNanoseconds, -message.header.correctionNanoseconds),
                      let masterMinusSent = Self.offset(masterReceived, from: sent) else {
                    implausible += 1
                    break
                }
                master.requests.append((sent, masterMinusSent))
                keepRecent(&master.requests, newest: sent, at: \.sent, most: configuration.delayWindow)
            } else {
                unmatched += 1
            }
        case .delayRequest, .other:
            break
        }
        masters[key] = master
    }

    /// Adds one half of a two-step Sync; once both halves are there, the sample. At most
    /// `pendingLimit` wait: the oldest half left over is dropped and counted as unmatched.
    private mutating func pairSync(in master: inout Master, sequence: UInt16, _ update: (inout PendingSync) -> Void) {
        var pending = master.pendingSyncs[sequence] ?? PendingSync()
        update(&pending)
        if let arrival = pending.arrival, let origin = pending.preciseOrigin {
            master.pendingSyncs[sequence] = nil
            if let origin = Self.sum(origin, pending.syncCorrection) {
                addSample(to: &master, arrival: arrival, origin: origin)
            } else {
                implausible += 1
            }
            return
        }
        master.pendingSyncs[sequence] = pending
        if master.pendingSyncs.count > Self.pendingLimit, let oldest = master.pendingSyncs.keys.min(by: { Self.isOlder($0, than: $1) }) {
            master.pendingSyncs[oldest] = nil
            unmatched += 1
        }
    }

    /// Time passes: forgets masters silent beyond the holdover, and asks the followed master
    /// for a path delay measurement as often as its Syncs come (`delayRequestInterval`).
    public mutating func tick(now: Int64) -> [Action] {
        masters = masters.filter { now - $0.value.lastHeard <= configuration.silence + configuration.holdover }
        let announces = dueAnnounces.filter { $0.at <= now }.map { Action.sendAnnounce($0.message, to: $0.to) }
        dueAnnounces.removeAll { $0.at <= now }
        return announces + delayRequest(now: now)
    }

    /// A Delay_Req to the followed master when one is due.
    private mutating func delayRequest(now: Int64) -> [Action] {
        guard now >= nextRequest, let key = followedKey(now: now), var master = masters[key], master.line != nil else { return [] }
        // Keeps the cadence when ticks come a little late; starts afresh when far behind.
        let interval = master.syncInterval ?? configuration.delayRequestInterval
        nextRequest = nextRequest + interval > now ? nextRequest + interval : now + interval
        requestSequence &+= 1
        master.pendingRequests[requestSequence] = now
        if master.pendingRequests.count > Self.pendingLimit, let oldest = master.pendingRequests.keys.min(by: { Self.isOlder($0, than: $1) }) {
            master.pendingRequests[oldest] = nil
        }
        masters[key] = master
        let header = PTPHeader(type: .delayRequest, source: identity, sequence: requestSequence)
        return [.sendDelayRequest(PTPMessage(header: header, body: .delayRequest(PTPTimestamp(seconds: 0, nanoseconds: 0))), to: master.address)]
    }

    /// The Delay_Req `sequence` really left at our time `local` (closer to the wire than `tick`'s `now`).
    public mutating func delayRequestSent(sequence: UInt16, at local: Int64) {
        for key in masters.keys where masters[key]?.pendingRequests[sequence] != nil {
            masters[key]?.pendingRequests[sequence] = local
        }
    }

    /// The master followed at our time `now`: the best one heard recently, else the last one
    /// followed while its holdover lasts.
    public func followed(now: Int64) -> MasterStatus? {
        followedKey(now: now).flatMap { status(of: $0, now: now) }
    }

    /// The followed master's time at our time `now`, in nanoseconds; nil with no usable master.
    public func masterTime(at now: Int64) -> Int64? {
        followed(now: now)?.masterTime(at: now)
    }

    /// Every master tracked, the followed one marked.
    public func statuses(now: Int64) -> [MasterStatus] {
        masters.keys.compactMap { status(of: $0, now: now) }.sorted { $0.identity.clockIdentity < $1.identity.clockIdentity }
    }

    private func status(of key: PTPPortIdentity, now: Int64) -> MasterStatus? {
        guard let master = masters[key] else { return nil }
        return MasterStatus(identity: key, address: master.address, announce: master.announce, silentFor: now - master.lastHeard,
                            line: master.line, pathDelay: master.pathDelay, followed: key == followedKey(now: now),
                            sequence: master.sequence, lastRestart: master.lastRestart, wakeUps: master.wakeUps,
                            frozenFollowUps: master.frozenFollowUps)
    }

    private func followedKey(now: Int64) -> PTPPortIdentity? {
        // A master is followed once it has a second of Syncs (a newcomer with one Sync would make
        // a poor line), unless no master has that many yet: eight at least, spanning as long as
        // eight of 8 a second do (a quick-starting master sends eight in 1/8 s).
        let settled = masters.filter { master in
            guard let first = master.value.samples.first, let last = master.value.samples.last else { return false }
            return master.value.samples.count >= 8 && last.local - first.local >= Self.settledSpan
        }
        let usable = settled.isEmpty ? masters.filter { $0.value.line != nil } : settled
        let audible = usable.filter { now - $0.value.lastHeard <= configuration.silence }
        let candidates = audible.isEmpty ? usable : audible
        if let timeline, let preferred = candidates.first(where: { $0.key.clockIdentity == timeline || $0.value.announce?.grandmasterIdentity == timeline }) {
            return preferred.key
        }
        return candidates.min { left, right in
            switch (left.value.announce, right.value.announce) {
            case (let l?, let r?): l.isBetter(than: r) || (!r.isBetter(than: l) && left.value.lastHeard > right.value.lastHeard)
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): left.value.lastHeard > right.value.lastHeard
            }
        }?.key
    }

    private mutating func addSample(to master: inout Master, arrival: Int64, origin: Int64) {
        guard let offset = Self.offset(origin, from: arrival) else {
            implausible += 1
            return
        }
        master.followUpsSinceArmed += 1
        master.announcesWithoutFollowUp = 0
        // A clock that repeats its time has stopped (an idle iPhone): its samples would drag the
        // line by the time that passes here; they are left out, and the line carries on.
        if origin == master.lastOrigin {
            master.frozenFollowUps += 1
            if master.frozenFollowUps == Self.stoppedWakeAfter, master.wakeUpArmed { wakeUp(&master, at: arrival) }
            return
        }
        master.lastOrigin = origin
        if master.frozenFollowUps >= Self.stoppedAfter {
            restart(&master, at: arrival, because: "its clock ran again after \(master.frozenFollowUps) repeated times")
        }
        master.frozenFollowUps = 0
        if let line = master.line, abs(Double(offset) - line.offset(at: arrival)) > Double(Self.stepThreshold) {
            let seconds = (Double(offset) - line.offset(at: arrival)) / 1e9
            restart(&master, at: arrival, because: "its clock stepped by \((seconds * 1000).rounded() / 1000) s")
        }
        master.samples.append((arrival, Double(offset)))
        keepRecent(&master.samples, newest: arrival, at: \.local, most: configuration.window)
        master.line = ClockLine.fit(master.samples)
    }

    /// Starts a master's line afresh (a new timing sequence): its samples and path delay
    /// measurements belong to a timescale it left.
    private mutating func restart(_ master: inout Master, at local: Int64, because reason: String) {
        master.samples = []
        master.requests = []
        master.line = nil
        master.sequence += 1
        master.lastRestart = reason
    }

    /// Wakes a master as nqptp does: two unicast Announces to its general port 150 ms apart,
    /// from us as a grandmaster a little better than it (priority1 one less), then a little
    /// worse (one more). A port that hears a better master answers; the second undoes the
    /// first before any port could take us for its master (that needs two Announces in a row).
    private mutating func wakeUp(_ master: inout Master, at local: Int64) {
        guard configuration.wakesMasters else { return }
        let priority1 = master.announce?.priority1 ?? 248, priority2 = master.announce?.priority2 ?? 248
        master.wakeUps += 1
        for (index, priority) in [priority1 > 2 ? priority1 - 1 : 248, priority1 < 254 ? priority1 + 1 : 250].enumerated() {
            let header = PTPHeader(type: .announce, flags: 0x0408, source: PTPPortIdentity(clockIdentity: identity.clockIdentity, port: 0x8008),
                                   sequence: 0, logInterval: -2, transportSpecific: 1)
            let announce = PTPAnnounce(currentUTCOffset: 37, priority1: priority, clockClass: 248, clockAccuracy: 0xFE,
                                       offsetScaledLogVariance: 0x436A, priority2: priority2, grandmasterIdentity: identity.clockIdentity,
                                       stepsRemoved: 0, timeSource: 0xA0)
            dueAnnounces.append((local + Int64(index) * Self.wakeUpSpacing, PTPMessage(header: header, body: .announce(announce)), master.address))
        }
    }

    /// Drops from the front of `window` what is older than `windowSpan` before `newest`, and
    /// whatever is beyond the `most` newest.
    private func keepRecent<Sample>(_ window: inout [Sample], newest: Int64, at time: KeyPath<Sample, Int64>, most: Int) {
        let stale = window.prefix { newest - $0[keyPath: time] > configuration.windowSpan }.count
        window.removeFirst(max(stale, window.count - most))
    }

    /// `a + b`, or nil when it overflows.
    private static func sum(_ a: Int64, _ b: Int64) -> Int64? {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : sum
    }

    /// `time - reference`, or nil when it overflows or is beyond `largestOffset`.
    private static func offset(_ time: Int64, from reference: Int64) -> Int64? {
        let (difference, overflow) = time.subtractingReportingOverflow(reference)
        return overflow || difference.magnitude > largestOffset.magnitude ? nil : difference
    }

    /// Sequence numbers wrap: `a` is older than `b` when it lies less than half the space behind.
    private static func isOlder(_ a: UInt16, than b: UInt16) -> Bool { a != b && b &- a < 0x8000 }

}
