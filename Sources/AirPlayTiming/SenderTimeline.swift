import AirPlayWire
import FoundationEssentials
import Synchronization
import LinuxIO

/// Maps a sender's RTP times to our monotonic clock, so the frame with RTP time T plays when
/// the sender means it to.
///
/// Two inputs, as in RAOP: timing exchanges (we send 0x52 requests stamped with our monotonic
/// clock, the sender answers 0x53 with its receive and transmit times) give the offset between
/// its clock and ours, and how fast that offset moves (drift); sync packets (0x54, every second)
/// say which RTP time the sender plays at which time of its clock.
///
/// A sync packet is judged as a clock (`judge`): the frame it names as next must not be
/// overdue when it arrives, its stamp not over 10 s in our future. A sender whose syncs say
/// otherwise is not trusted, and the playout times frames from their arrival instead. Flags 7
/// (iTunes, OwnTone, libraop) put the named frame 11025 frames after the sync's time. Every
/// sync of libraop's lies on one line, stamped with its next frame's time: up to its latency
/// late while it bursts a back-dated start, seconds early while it waits for a start time it
/// was given (Music Assistant). It is trusted from its first sync. pyatv 0.18 stamps syncs with
/// the wall clock of its set-up plus the frames sent since: late by as long as its stream
/// started after its set-up.
///
/// Trust changes with hysteresis, in count. It is won by an agreeing sync and lost by two
/// contradicting ones in a row (by one, while fewer than three syncs have confirmed it); once
/// lost, it takes three agreeing syncs in a row to win it back. A sync that moves the anchor in
/// force by over 0.5 s, without being a first sync, contradicts it (pyatv 0.x stamps every sync
/// with its first one's time). A sender near a limit (a link with 30 ms of jitter) would
/// otherwise flip between its clock and the arrival schedule, and every flip would move the
/// audio. Losing trust moves nothing: the playout goes on from where the sender's clock had it.
public final class SenderTimeline: PlayoutTimeline {
    /// One timing exchange, in seconds.
    struct Exchange: Hashable, Sendable {
        /// Our clock half-way through the exchange.
        var local: Double
        /// Sender clock minus ours.
        var offset: Double
        /// Network round trip, without the sender's processing time.
        var roundTrip: Double
    }

    /// What the timeline knows, for logs, `/now-playing` and the benchmark.
    public struct Figures: Hashable, Sendable {
        /// True when frames are timed by the sender's clock; false when by their arrival.
        public var senderClock: Bool
        /// Timing exchanges answered so far.
        public var exchanges: Int
        /// The best round trip seen, in milliseconds.
        public var roundTripMilliseconds: Double?
        /// How much faster the sender's clock runs than ours, in parts per million.
        public var driftPPM: Double
        /// Sync packets whose times contradicted the sender's timing answers.
        public var implausibleSyncs: Int
        /// Times the sender's clock was trusted, and distrusted after that.
        public var trustChanges: Int = 0
        /// First-time audio packets that arrived after its syncs said they were due.
        public var overdueAudio: Int = 0
        /// Syncs that moved the trusted timeline by more than 5 ms (a new start, or a jump).
        public var jumps: Int = 0
        /// The largest such move, in milliseconds (positive: later).
        public var largestJumpMilliseconds: Double = 0
    }

    private struct Anchor {
        var rtp: UInt32
        var senderTime: Double
    }

    private struct State {
        var exchanges: [Exchange] = [] {
            // The playout asks for a frame's time 125 times a second; the line changes only
            // when an answer comes (every 2 s).
            didSet { line = SenderTimeline.line(exchanges) }
        }
        var line: (local: Double, offset: Double, drift: Double)?
        var answered = 0
        var anchor: Anchor?
        /// The last few sync packets since the last jump, for the earliest-stamp anchor.
        var recentSyncs: [Anchor] = []
        var trusted = false {
            didSet { if trusted != oldValue { trustChanges += 1 } }
        }
        var trustChanges = 0
        var implausible = 0
        /// Syncs in a row that agreed with the timing answers, and that contradicted them.
        var agreeingInARow = 0
        var contradictingInARow = 0
        /// Agreeing syncs since trust was last won (three confirm it).
        var agreeingSinceTrusted = 0
        /// Syncs that moved the trusted timeline by more than `smoothingLimit`, and the largest move.
        var jumps = 0
        var largestJump = 0.0
        /// A FLUSH came: the next sync may start a new timeline.
        var restarting = false
        /// First-time audio packets that arrived after the timeline said they were due.
        var overdueAudio = 0
        /// First-time audio came overdue on this timeline: the sender did not keep the promise
        /// its syncs made. pyatv's stamps run a fixed time behind its audio for the whole
        /// stream; when that is a few milliseconds past due, the odd sync of a quiet moment on
        /// a jittery link agrees within the slack and the round trip's doubt, and won the trust
        /// back, and the playout cut 527 ms to move from arrival timing to the sender's, only to
        /// be undone by the next overdue packet. Cleared by a first sync or a FLUSH.
        var promiseBroken = false
        /// The RTP time of the newest first-time audio packet (later packets held back on
        /// the way arrive behind it).
        var newestArrived: UInt32?
        /// The newest sync that arrived before any timing answer, with its arrival.
        var waitingSync: (RAOPSync, Double)?
    }

    /// Timing answers kept for the estimate (at one exchange every 2 s, about a minute).
    static let window = 32
    /// A sync that moves the anchor in force by more than this, without being a first sync,
    /// contradicts it.
    static let largestJump = 0.5
    /// A sync stamped further than this in our future contradicts the timing answers. Music
    /// Assistant's libraop, told to start at a set time, stamps its syncs with that time from
    /// its connection on (2.7 s ahead for one room, 250 ms more for each further room).
    static let largestLead = 10.0
    /// How far overdue a sync may say the newest frame it sent is: a stamp taken a moment
    /// before the packet left, or a path slower one way than the other.
    static let overdueSlack = 0.005
    /// A sync stamped this long before it arrived anchors a backlog being burst.
    static let backlogStamp = 0.1
    /// Contradicting syncs in a row that lose the sender's trust, and agreeing ones that win it
    /// back once lost (the first agreeing sync of a stream wins it).
    static let syncsToDistrust = 2
    static let syncsToRetrust = 3
    /// Sync packets that disagree with the timeline by less than this are late stamps, not jumps.
    static let smoothingLimit = 0.005
    /// Sync packets the earliest stamp is taken over (about 8 s of them).
    static let syncWindow = 8
    /// Drift beyond this is a broken clock, not a crystal: clamp it.
    static let maximumDrift = 500e-6

    private let sampleRate: Double
    private let state = Mutex(State())

    /// A timeline for a stream at `sampleRate` frames per second.
    /// The least latency a sender's frames are given. PipeWire 0.3.65's sync packets claim none
    /// ("now minus latency" equals "next"): every frame would be due the instant it is sent.
    private let minimumLatency: Double

    /// A timeline for a stream at `sampleRate`; frames play at least `minimumLatency` seconds
    /// after the sender sends them, whatever latency its sync packets imply.
    public init(sampleRate: Int, minimumLatency: Double = 0) {
        self.sampleRate = Double(sampleRate)
        self.minimumLatency = minimumLatency
    }

    /// Our monotonic clock in seconds; also what our timing requests carry.
    public static func now() -> Double { SystemClock().now() }

    /// NTP 32.32 fixed point as seconds.
    package static func seconds(_ ntp: UInt64) -> Double { NTPTime.seconds(ntp) }

    /// Seconds as NTP 32.32 fixed point.
    package static func ntp(_ seconds: Double) -> UInt64 { NTPTime.timestamp(seconds) }

    /// A timing request stamped with our clock `at` (the sender copies it back as the origin).
    public static func request(at local: Double = now()) -> [UInt8] {
        RAOPTiming(origin: 0, receive: 0, transmit: ntp(local)).bytes(reply: false)
    }

    /// A timing reply arrived at our time `arrival`.
    public func addTimingReply(_ reply: RAOPTiming, arrival: Double = now()) {
        // A reply to no request of ours (or one older than a minute) carries no information.
        guard let measured = reply.exchange(arrival: Self.ntp(arrival)) else { return }
        let sent = Self.seconds(reply.origin)
        let exchange = Exchange(local: (sent + arrival) / 2, offset: measured.offset, roundTrip: measured.roundTrip)
        state.withLock { state in
            state.answered += 1
            state.exchanges.append(exchange)
            if state.exchanges.count > Self.window { state.exchanges.removeFirst() }
            // A sync that came first is read now when it anchors a backlog being burst: libraop
            // sends its first one right after RECORD, before our timing requests are answered,
            // stamped up to its latency back, and the audio it places flows at once (its next
            // sync is a second away). A first sync stamped as it left is not: PipeWire's is 20-30
            // ms off the line its later ones keep, and those come before its audio is due.
            if let (sync, arrival) = state.waitingSync, let line = state.line {
                state.waitingSync = nil
                let stampLocal = Self.seconds(sync.ntpTime) - line.offset - line.drift * (arrival - line.local)
                if arrival - stampLocal > Self.backlogStamp { take(sync, arrival: arrival, into: &state) }
            }
        }
    }

    /// How a sync packet reads against the timing answers (`judge`).
    enum SyncVerdict: Hashable, Sendable {
        /// A clock a sender can have: the newest frame it names is not overdue (its stamp may be
        /// late by up to its latency, or ahead of us), and it agrees with the anchor in force.
        case agrees
        /// No sender sending in time could mean it: a frame already sent due in the past, a stamp
        /// over 10 s in the future, a latency over 10 s, or a jump from the anchor in force.
        case contradicts
    }

    /// Judges a sync whose stamp reads `stampLocal` on our clock, arriving at `arrival`: the
    /// sender promises its newest frame at `stampLocal + latency` (`latency` with the flags' fixed
    /// offset and the floor), which must not be overdue already (a few ms of slack). A sender
    /// that back-dates its start (libraop) stamps its syncs up to its latency before they arrive,
    /// one told to start later (Music Assistant's) seconds after: both are right, since every
    /// sync of theirs lies on one line. `uncertainty` is how far the offset may be off (half the
    /// best round trip), `slack` how late a stamp may be; `jump` is how far the sync moves the
    /// anchor in force (nil without one).
    static func judge(stampLocal: Double, arrival: Double, latency: Double, uncertainty: Double = 0, slack: Double = overdueSlack,
                      jump: Double?) -> SyncVerdict {
        let early = stampLocal - arrival   // > 0: stamped in our future
        guard latency <= 10, early + latency >= -(slack + uncertainty), early <= largestLead else { return .contradicts }
        if let jump, abs(jump) > largestJump { return .contradicts }
        return .agrees
    }

    /// A sync packet arrived at our time `arrival`.
    public func addSync(_ sync: RAOPSync, arrival: Double = now()) {
        state.withLock { take(sync, arrival: arrival, into: &$0) }
    }

    /// Reads a sync into `state`; before any timing answer, the newest waits for the first.
    private func take(_ sync: RAOPSync, arrival: Double, into state: inout State) {
        // Frame A ("now minus latency") is heard at the sync's time, plus 250 ms with flags 7;
        // the frame being sent is meant to be heard one latency after A. A latency below the
        // floor is raised to it (the frames play later, the same on every receiver).
        let fixed = Double(sync.heardAfterFrames) / sampleRate
        let latency = Double(sync.rtpTimeNext &- sync.rtpTimeNowMinusLatency) / sampleRate + fixed
        let lift = max(0, minimumLatency - latency)
        let anchor = Anchor(rtp: sync.rtpTimeNowMinusLatency, senderTime: Self.seconds(sync.ntpTime) + fixed + lift)
        do {
            guard let line = state.line else {
                state.waitingSync = (sync, arrival)
                return
            }
            let offset = line.offset + line.drift * (arrival - line.local)
            // A first sync (after RECORD or FLUSH) starts a timeline, with a new promise to
            // keep; any other continues the one in force.
            let startsTimeline = sync.isFirst || state.restarting
            if startsTimeline { state.promiseBroken = false }
            let jump = state.trusted && !startsTimeline ? state.anchor.map { previous in
                anchor.senderTime - (previous.senderTime + Double(Int32(bitPattern: anchor.rtp &- previous.rtp)) / sampleRate)
            } : nil
            // A sender whose audio came overdue is not given the benefit of the doubt again:
            // its syncs must promise the newest frame in time to the letter (see `promiseBroken`).
            let (slack, uncertainty) = state.promiseBroken ? (0, 0) : (Self.overdueSlack, Self.quickestRoundTrip(state.exchanges) / 2)
            switch Self.judge(stampLocal: Self.seconds(sync.ntpTime) - offset, arrival: arrival, latency: latency + lift,
                              uncertainty: uncertainty, slack: slack, jump: jump) {
            case .contradicts:
                state.implausible += 1
                Self.contradict(&state)
                return
            case .agrees:
                break
            }
            state.contradictingInARow = 0
            state.agreeingInARow += 1
            if !state.trusted, state.implausible > 0, state.agreeingInARow < Self.syncsToRetrust { return }
            state.agreeingSinceTrusted = state.trusted ? state.agreeingSinceTrusted + 1 : 1
            // Senders stamp a sync packet when they get round to sending it: a stamp can be
            // late (PulseAudio's first one by up to 4 ms, after its IO thread stalled), never
            // early. So within a few milliseconds the timeline follows the earliest of the last
            // syncs (a sliding window, so a real drift is still followed); beyond that it is a
            // jump, taken as it comes.
            state.restarting = false
            if state.trusted, let previous = state.anchor {
                let predicted = previous.senderTime + Double(Int32(bitPattern: anchor.rtp &- previous.rtp)) / sampleRate
                if abs(anchor.senderTime - predicted) < Self.smoothingLimit {
                    state.recentSyncs.append(anchor)
                    if state.recentSyncs.count > Self.syncWindow { state.recentSyncs.removeFirst() }
                    let earliest = state.recentSyncs.map {
                        $0.senderTime + Double(Int32(bitPattern: anchor.rtp &- $0.rtp)) / sampleRate
                    }.min() ?? anchor.senderTime
                    state.anchor = Anchor(rtp: anchor.rtp, senderTime: earliest)
                    return
                }
            }
            if state.trusted, let previous = state.anchor {
                let moved = anchor.senderTime - (previous.senderTime + Double(Int32(bitPattern: anchor.rtp &- previous.rtp)) / sampleRate)
                state.jumps += 1
                if abs(moved) > abs(state.largestJump) { state.largestJump = moved }
            }
            state.recentSyncs = [anchor]
            state.anchor = anchor
            state.trusted = true
        }
    }

    /// The sender flushed: its next sync may start a new timeline (a resumed stream's RTP times
    /// go on while its clock moved on), so it is not held against the anchor in force. That
    /// anchor still places what comes before it: pyatv flushes right after RECORD, after its
    /// first sync, and goes on on that sync's timeline.
    public func flush() {
        state.withLock { state in
            state.restarting = true
            state.newestArrived = nil
        }
    }

    /// Half the quickest exchange's round trip: the most its offset can be skewed by a path
    /// slower one way than the other (a LAN's 1 ms leaves the playout's 2 ms tolerance alone;
    /// a Wi-Fi link with 20 ms of jitter is not corrected within 10 ms).
    public var uncertainty: Double {
        state.withLock { state in Self.quickestRoundTrip(state.exchanges) / 2 }
    }

    /// The quickest round trip among `exchanges` (0 with none), without building an array:
    /// the playout asks for it before every write.
    private static func quickestRoundTrip(_ exchanges: [Exchange]) -> Double {
        var quickest = Double.infinity
        for exchange in exchanges where exchange.roundTrip < quickest { quickest = exchange.roundTrip }
        return quickest.isFinite ? quickest : 0
    }

    /// Our monotonic time at which the frame with RTP time `rtp` is meant to play, or nil while
    /// the sender's clock is unknown or not trusted.
    public func localTime(of rtp: UInt32) -> Double? {
        state.withLock { localTime(of: rtp, in: $0) }
    }

    private func localTime(of rtp: UInt32, in state: State) -> Double? {
        guard state.trusted, let anchor = state.anchor, let line = state.line else { return nil }
        let senderTime = anchor.senderTime + Double(Int32(bitPattern: rtp &- anchor.rtp)) / sampleRate
        // Sender time S = L + offset + drift·(L - local), solved for our time L.
        return (senderTime - line.offset + line.drift * line.local) / (1 + line.drift)
    }

    /// An audio packet arrived for the first time (not a resend): under a timeline it is
    /// already overdue by, the timeline is not the sender's. pyatv 0.18 stamps its syncs from
    /// its set-up and may start sending seconds later (after its metadata and artwork); its
    /// first syncs, sent before any audio, promised a start it then missed.
    ///
    /// A packet behind one already here (within a second) was held back on the way, as Wi-Fi
    /// and the impaired-link tests do: its lateness is the path's, not the timeline's. Once
    /// pyatv's frames came only about 50 ms before they were due (a slow start-up); behind
    /// 20 ± 10 ms with packets held back 40 ms more, a few came 24 ms overdue, two between
    /// syncs undid a confirmed trust, and the stream went back and forth to arrival timing,
    /// losing 253 packets.
    public func audioArrived(rtp: UInt32, arrival: Double = now()) {
        state.withLock { state in
            if let newest = state.newestArrived {
                let ahead = Int64(Int32(bitPattern: rtp &- newest))
                if ahead < 0, ahead > -Int64(sampleRate) { return }
            }
            state.newestArrived = rtp
            guard let due = localTime(of: rtp, in: state) else { return }
            let uncertainty = Self.quickestRoundTrip(state.exchanges) / 2
            guard due < arrival - (Self.overdueSlack + uncertainty) else { return }
            state.overdueAudio += 1
            state.promiseBroken = true
            Self.contradict(&state)
        }
    }

    /// Something contradicted the timeline: a trust not yet confirmed by three agreeing syncs
    /// goes at once (pyatv 0.x stamps every sync with its first one's time: only that one
    /// agrees), a confirmed one at the second contradiction in a row.
    private static func contradict(_ state: inout State) {
        state.agreeingInARow = 0
        state.contradictingInARow += 1
        let confirmed = state.agreeingSinceTrusted >= syncsToRetrust
        if state.contradictingInARow >= (confirmed ? syncsToDistrust : 1) { state.trusted = false }
    }

    /// The figures so far.
    public var figures: Figures {
        state.withLock { state in
            Figures(senderClock: state.trusted, exchanges: state.answered,
                    roundTripMilliseconds: state.exchanges.map(\.roundTrip).min().map { $0 * 1000 },
                    driftPPM: Self.drift(Self.usable(state.exchanges)) * 1e6, implausibleSyncs: state.implausible,
                    trustChanges: state.trustChanges, overdueAudio: state.overdueAudio, jumps: state.jumps,
                    largestJumpMilliseconds: state.largestJump * 1000)
        }
    }

    /// The exchanges worth trusting: those whose round trip is close to the best one (a slow
    /// exchange's offset is off by up to half its extra delay).
    static func usable(_ exchanges: [Exchange]) -> [Exchange] {
        guard let best = exchanges.map(\.roundTrip).min() else { return [] }
        return exchanges.filter { $0.roundTrip <= best * 1.5 + 0.0005 }
    }

    /// The offset as a line over our time: through (`local`, `offset`) with slope `drift`. With
    /// a drift, through the usable exchanges' mean. Without one, flat through the exchange
    /// whose offset can be the least wrong now: half its round trip (how far queueing one way
    /// can skew it) plus, in the first 10 s, how far a clock drifting `maximumDrift` can have
    /// moved since (0.5 ms a second), as the drift is not measured yet; after that, when the
    /// drift is too small to tell from the link's jitter, the quickest of all. Either changes
    /// only when a better exchange comes, so jitter does not move the audio at every answer.
    /// (The quickest of the last three, as it once was, took whichever three came last: behind
    /// 20 ± 10 ms each way it moved the timeline by over 20 ms, and the playout removed 888
    /// frames following it.) On a quiet link the newest wins, and a drifting clock is followed.
    static func line(_ exchanges: [Exchange]) -> (local: Double, offset: Double, drift: Double)? {
        let chosen = usable(exchanges)
        guard !chosen.isEmpty, let newest = exchanges.last?.local else { return nil }
        let slope = drift(chosen)
        guard slope != 0 else {
            let ageing = spansEnough(chosen) ? 0 : maximumDrift
            let best = exchanges.min { errorBound($0, newest: newest, ageing: ageing) < errorBound($1, newest: newest, ageing: ageing) }!
            return (best.local, best.offset, 0)
        }
        let meanLocal = chosen.map(\.local).reduce(0, +) / Double(chosen.count)
        let meanOffset = chosen.map(\.offset).reduce(0, +) / Double(chosen.count)
        return (meanLocal, meanOffset, slope)
    }

    /// How wrong `exchange`'s offset can be at the time of the `newest` exchange: half its round
    /// trip, plus `ageing` (a drift) for the time between.
    static func errorBound(_ exchange: Exchange, newest: Double, ageing: Double) -> Double {
        exchange.roundTrip / 2 + (newest - exchange.local) * ageing
    }

    /// Whether the exchanges are enough to fit a line through: three, over 10 s at least.
    static func spansEnough(_ exchanges: [Exchange]) -> Bool {
        guard exchanges.count >= 3, let first = exchanges.first, let last = exchanges.last else { return false }
        return last.local - first.local >= 10
    }

    /// The least-squares slope of offset over time; zero until six exchanges span 10 s, and
    /// zero while it is under five standard errors. On a link with 20 ms of jitter a 10 s fit
    /// can show a few hundred ppm that are not there, and following them would add and remove
    /// frames for nothing; a real drift stands out of a LAN's noise within seconds.
    static func drift(_ exchanges: [Exchange]) -> Double {
        guard spansEnough(exchanges) else { return 0 }
        let meanLocal = exchanges.map(\.local).reduce(0, +) / Double(exchanges.count)
        let meanOffset = exchanges.map(\.offset).reduce(0, +) / Double(exchanges.count)
        var covariance = 0.0, variance = 0.0
        for exchange in exchanges {
            covariance += (exchange.local - meanLocal) * (exchange.offset - meanOffset)
            variance += (exchange.local - meanLocal) * (exchange.local - meanLocal)
        }
        guard variance > 0 else { return 0 }
        let slope = covariance / variance
        var residuals = 0.0
        for exchange in exchanges {
            let residual = exchange.offset - meanOffset - slope * (exchange.local - meanLocal)
            residuals += residual * residual
        }
        let standardError = (residuals / Double(exchanges.count - 2) / variance).squareRoot()
        // Few points leave the error itself uncertain (Student's t): ask for six and five errors.
        guard exchanges.count >= 6, abs(slope) >= 5 * standardError else { return 0 }
        return min(max(slope, -maximumDrift), maximumDrift)
    }
}

/// Where a stream's frames belong on our monotonic clock: the playout asks it when the frame
/// with RTP time T is meant to play. RAOP and AirPlay 2 realtime streams answer from the
/// sender's NTP timing and sync packets (`SenderTimeline`); buffered AirPlay 2 streams from the
/// sender's rate anchor on its PTP clock (`AnchoredTimeline`).
public protocol PlayoutTimeline: AnyObject, Sendable {
    /// Our monotonic time (seconds) at which the frame with RTP time `rtp` is meant to play,
    /// or nil while that is not known.
    func localTime(of rtp: UInt32) -> Double?
    /// True when nothing may play while `localTime` is unknown (a buffered stream waits for
    /// its anchor); false when the playout then times frames from their arrival (RAOP).
    var holdsWithoutTime: Bool { get }
    /// How far `localTime` may be off the sender's real clock, in seconds: the playout does not
    /// correct errors smaller than this (it would chase the estimate's noise, not the sender).
    var uncertainty: Double { get }
}

extension PlayoutTimeline {
    /// Realtime streams play from their arrival until the sender's clock is known.
    public var holdsWithoutTime: Bool { false }
    /// A clock known to well under the playout's own tolerance.
    public var uncertainty: Double { 0 }
}
