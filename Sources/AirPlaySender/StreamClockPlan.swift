/// Which clock times each receiver of one stream, decided from what the receivers said at setup
/// and the user's `--timing`, before any clock is served: a pure value. The caller carries it
/// out (it makes the grandmasters, sets each link's `ptpClock` and `followsReceiverClock`).
///
/// Buffered receivers are anchored on one PTP grandmaster, which realtime receivers on PTP
/// share; realtime receivers are on PTP where `--timing` says so or, by default, where their
/// record advertises a PTP clock (bit 41) and they are not on this host (their follower holds
/// UDP 319/320 here). One receiver's own clock is followed at most: it becomes the timeline the
/// others are served.
public struct StreamClockPlan: Equatable, Sendable {
    /// `--timing`: `auto`, `ntp` (realtime only), `ptp` (our clock to every receiver) or
    /// `follow` (the first AirPlay 2 receiver's own clock).
    public enum Timing: String, Sendable, CaseIterable {
        case auto, ntp, ptp, follow
    }

    /// What the plan reads of one receiver's link.
    public struct Receiver: Equatable, Sendable {
        /// Its name, for warnings.
        public var name: String
        /// Set up the AirPlay 2 way.
        public var airPlay2: Bool
        /// Sent buffered audio (type 103).
        public var buffered: Bool
        /// Its record advertises a PTP clock (feature bit 41).
        public var advertisesPTPClock: Bool
        /// It runs on this host.
        public var onThisHost: Bool
        /// It insists on being the PTP master (a standalone HomePod on OS 27).
        public var insistsOnItsOwnClock: Bool

        /// A receiver from its parts.
        public init(name: String, airPlay2: Bool, buffered: Bool = false, advertisesPTPClock: Bool = false,
                    onThisHost: Bool = false, insistsOnItsOwnClock: Bool = false) {
            self.name = name
            self.airPlay2 = airPlay2
            self.buffered = buffered
            self.advertisesPTPClock = advertisesPTPClock
            self.onThisHost = onThisHost
            self.insistsOnItsOwnClock = insistsOnItsOwnClock
        }

        /// What a link says after its setup.
        public init(_ link: ReceiverLink) {
            self.init(name: link.name, airPlay2: link.airPlay2, buffered: link.buffered, advertisesPTPClock: link.features.contains(.ptpClock),
                      onThisHost: link.isOnThisHost, insistsOnItsOwnClock: link.followsReceiverClock)
        }
    }

    /// The receivers, in the links' order.
    public let receivers: [Receiver]
    /// The user's choice.
    public let timing: Timing
    /// A grandmaster anchors the buffered receivers (there is one at least).
    public let servesBufferedClock: Bool
    /// The realtime receivers timed on PTP, by index: on the buffered grandmaster when there is
    /// one, else on a grandmaster of their own (`needsRealtimeClock`).
    public let realtimeOnPTP: [Int]
    /// The receiver whose own PTP clock is followed, by index.
    public let followed: Int?
    /// What the user is told about the plan.
    public let warnings: [String]

    /// Whether the realtime receivers on PTP need a grandmaster of their own.
    public var needsRealtimeClock: Bool { !servesBufferedClock && !realtimeOnPTP.isEmpty }

    /// The plan for `receivers` under `timing`; `realtimePTP: false` when no PTP clock can be
    /// served for the realtime receivers (they stay on NTP).
    public init(receivers: [Receiver], timing: Timing, realtimePTP: Bool = true, warnings: [String] = []) {
        self.receivers = receivers
        self.timing = timing
        servesBufferedClock = receivers.contains(where: \.buffered)
        let realtime = realtimePTP ? receivers.indices.filter { !receivers[$0].buffered && Self.realtimeOnPTP(receivers[$0], timing: timing) } : []
        realtimeOnPTP = realtime
        let onPTP = receivers.indices.filter { receivers[$0].buffered || realtime.contains($0) }
        var warnings = warnings
        switch timing {
        case .ptp, .ntp:
            followed = nil
        case .follow:
            followed = onPTP.first
        case .auto:
            let insisting = onPTP.filter { receivers[$0].insistsOnItsOwnClock }
            followed = insisting.first
            for index in insisting.dropFirst() {
                warnings.append("\(receivers[index].name) keeps its own PTP clock too, but only \(receivers[insisting[0]].name)'s can be followed: it may stay silent")
            }
        }
        self.warnings = warnings
    }

    /// The plan once no grandmaster can be served for the realtime receivers (UDP 319/320
    /// taken, or no privilege): `auto` plays them on NTP and says so; `ptp` and `follow` fail.
    public func withoutRealtimePTP(because reason: String) throws(SenderError) -> StreamClockPlan {
        guard timing == .auto else { throw SenderError(.badInput, "PTP timing serves a PTP clock: \(reason)") }
        return StreamClockPlan(receivers: receivers, timing: timing, realtimePTP: false,
                               warnings: ["NTP timing: this command cannot serve a PTP clock (\(reason))"])
    }

    /// Whether a realtime receiver set up at the start is timed on PTP.
    static func realtimeOnPTP(_ receiver: Receiver, timing: Timing) -> Bool {
        guard receiver.airPlay2 else { return false }
        switch timing {
        case .ntp: return false
        case .ptp, .follow: return true
        case .auto: return receiver.advertisesPTPClock && !receiver.onThisHost
        }
    }

    /// Whether a realtime receiver joining the group on the way is timed on the group's PTP
    /// clock: as at the start, but under `follow` only where it advertises one (the followed
    /// receiver is already chosen).
    public static func joinerOnPTP(_ receiver: Receiver, timing: Timing) -> Bool {
        guard !receiver.buffered, receiver.airPlay2 else { return false }
        switch timing {
        case .ntp: return false
        case .ptp: return true
        case .auto, .follow: return receiver.advertisesPTPClock && !receiver.onThisHost
        }
    }
}
