import AirPlayWire
import Glibc
import Logging
import Synchronization
import LinuxIO

/// A PTP grandmaster for the receivers a sender plays to in AirPlay 2's buffered mode: the
/// timeline their anchors are on. It serves this host's CLOCK_REALTIME as it is (as `ptp4l -S`
/// does), unicast to each follower: a two-step Sync 8 times a second with its Follow_Up
/// carrying the kernel's send stamp, an Announce each second, and a Delay_Resp to every
/// Delay_Req with the kernel's receive stamp.
///
/// A follower's first `quickStart` seconds get a Sync 64 times a second (saying so in the
/// Syncs' log interval, so a follower of ours asks for path delays as often): the first frame
/// sounds a second or so after a receiver is set up, and on a jittery link the follower's
/// line is only as good as the quickest of the Syncs it has by then.
///
/// A receiver that insists on being master (a standalone HomePod on OS 27) is not served: the
/// grandmaster follows its clock instead, on the same ports (`followClock(of:)`), and from then
/// on the time it serves everyone else, and `now()`, is that receiver's clock. All rooms are
/// then on one timeline, the receiver's, and anchors name its clock to it and ours to the others.
///
/// Binding UDP 319 and 320 needs root or `CAP_NET_BIND_SERVICE`; without it the sender says so.
public final class PTPGrandmaster: Sendable {
    /// Our port identity, in every message (the clock id receivers know the timeline by).
    public let identity: PTPPortIdentity
    private let announce: PTPAnnounce
    private let sockets: (event: Int32, general: Int32)
    private let followers = Mutex<[String: Follower]>([:])
    /// The receivers' clocks followed (none unless `followClock(of:)` was called).
    private let following: Mutex<ReceiverClockFollowing>
    private let stopped = Atomic<Bool>(false)
    private let logger: Logger

    /// The messages' majorSdoId (transportSpecific in PTP 2008): 1, as Apple's senders, OwnTone
    /// and Music Assistant send; some receivers ignore a grandmaster whose messages carry 0
    /// (ptp4l follows it with `transportSpecific 0x1`).
    public static let majorSdoId: UInt8 = 1
    /// How long a new follower gets Syncs at the quick rate (nanoseconds).
    public static let quickStart: Int64 = 2_000_000_000
    /// The Sync intervals as PTP log2 seconds: 1/8 s, and 1/64 s while a follower is new.
    static let (syncLogInterval, quickSyncLogInterval): (Int8, Int8) = (-3, -6)

    /// One follower: when it was added (monotonic nanoseconds), and its own Sync sequence.
    private struct Follower {
        var added: Int64
        var sequence: UInt16 = 0
    }

    /// Binds the PTP ports and starts serving time to the followers added later.
    /// - Parameter priority1: lower wins a follower's choice among masters (ptp4l's default 128).
    public init(clockIdentity: UInt64, priority1: UInt8 = 128, logger: Logger) throws(PTPSockets.Failure) {
        sockets = try PTPSockets.bindPair(ports: (PTPMessage.eventPort, PTPMessage.generalPort))
        identity = PTPPortIdentity(clockIdentity: clockIdentity, port: 1)
        announce = PTPAnnounce(priority1: priority1, clockClass: 248, grandmasterIdentity: clockIdentity)
        following = Mutex(ReceiverClockFollowing(identity: identity))
        self.logger = logger
        // Followers such as ptp4l send their Delay_Reqs to the multicast group.
        PTPSockets.joinGroups(sockets: [sockets.event, sockets.general])
        DedicatedThread.start(name: "airplay-ptp-gm") { [self] in run() }
    }

    /// A clock identity for a grandmaster of this process: locally administered EUI-64 bits
    /// (so never a vendor's), random in the rest. Receivers only compare it.
    public static func randomClockIdentity() -> UInt64 {
        (UInt64(0x02) << 56) | (UInt64(0xFFFE) << 24) | (UInt64(UInt16.random(in: 0...UInt16.max)) << 40) | UInt64(UInt32.random(in: 0...0xFF_FFFF))
    }

    /// The time on the timeline served: this host's CLOCK_REALTIME in nanoseconds, or the
    /// followed receiver's clock once one is followed.
    public func now() -> Int64 { time(atRealtime: PTPSockets.realtimeNanoseconds()) }

    /// The timeline's time when this host's CLOCK_REALTIME read `realtime` (a kernel stamp).
    func time(atRealtime realtime: Int64) -> Int64 {
        let monotonic = realtime &+ PTPSockets.realtimeToMonotonic()
        return following.withLock { $0.isFollowing ? $0.clockTime(at: monotonic) : nil } ?? realtime
    }

    /// Takes the timeline from the clock of the receiver at `address` (IPv4), which is not served.
    public func followClock(of address: String) {
        following.withLock { $0.follow(address) }
    }

    /// No longer takes the timeline from the receiver at `address` (it sent no clock).
    public func stopFollowingClock(of address: String) {
        following.withLock { $0.stopFollowing(address) }
    }

    /// The followed receiver's clock once it is heard well: its identity (what its anchors
    /// name) and address; nil while none is.
    public func followedClock() -> (timeline: UInt64, address: String)? {
        let now = PTPSockets.monotonicNanoseconds()
        return following.withLock { $0.followed(now: now) }
    }

    /// Waits up to `timeout` seconds for a followed receiver's clock (`followedClock()`).
    public func waitForFollowedClock(timeout: Double) async -> (timeline: UInt64, address: String)? {
        for _ in 0..<max(1, Int(timeout * 20)) {
            if let clock = followedClock() { return clock }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return followedClock()
    }

    /// Serves time to `address` (IPv4) from now on.
    public func addFollower(_ address: String) {
        let now = PTPSockets.monotonicNanoseconds()
        followers.withLock { if $0[address] == nil { $0[address] = Follower(added: now) } }
    }

    /// Stops serving time to `address`.
    public func removeFollower(_ address: String) {
        followers.withLock { _ = $0.removeValue(forKey: address) }
    }

    /// Stops the thread, which closes the sockets within 20 ms.
    public func stop() {
        stopped.store(true, ordering: .releasing)
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        var announceSequence: UInt16 = 0
        var tick: UInt64 = 0
        var nextSync = PTPSockets.monotonicNanoseconds()
        var nextAnnounce = nextSync
        while !stopped.load(ordering: .acquiring) {
            PTPSockets.wait([sockets.event, sockets.general], milliseconds: 5)
            readMessages(buffer: &buffer)
            followReceiverClocks()
            let now = PTPSockets.monotonicNanoseconds()
            let targets = followers.withLock { Array($0.keys) }
            // An Announce each second; a new follower also gets one each 1/8 s while it is new:
            // nqptp, told of us only at SETPEERS, takes no Sync as time before it has an
            // Announce, and the first frame sounds a second after the anchor.
            let announceNow = now >= nextAnnounce
            if announceNow { nextAnnounce += 1_000_000_000 }
            let newcomers = now >= nextSync && tick % 8 == 7
                ? followers.withLock { $0.filter { now - $1.added < Self.quickStart }.map(\.key) } : []
            let announced = announceNow ? targets : newcomers
            if !announced.isEmpty {
                announceSequence &+= 1
                let message = PTPMessage(header: PTPHeader(type: .announce, source: identity, sequence: announceSequence, logInterval: 0,
                                                                   transportSpecific: Self.majorSdoId),
                                         body: .announce(announce))
                for target in announced { PTPSockets.send(message.encoded(), from: sockets.general, to: target, port: PTPMessage.generalPort) }
            }
            if now >= nextSync {
                // Ticks every 1/64 s; a settled follower gets every eighth.
                nextSync = max(nextSync + 15_625_000, now - 15_625_000)
                tick &+= 1
                let due = followers.withLock { followers -> [(String, UInt16, Int8)] in
                    var due: [(String, UInt16, Int8)] = []
                    for (address, follower) in followers {
                        let quick = now - follower.added < Self.quickStart
                        guard quick || tick % 8 == 0 else { continue }
                        followers[address]?.sequence &+= 1
                        due.append((address, follower.sequence &+ 1, quick ? Self.quickSyncLogInterval : Self.syncLogInterval))
                    }
                    return due
                }
                for (target, sequence, interval) in due { sendSync(to: target, sequence: sequence, logInterval: interval) }
            }
        }
        close(sockets.event)
        close(sockets.general)
    }

    /// A two-step Sync, then its Follow_Up with the time the kernel says it left. Without the
    /// kernel's stamp (late on a loaded machine) no Follow_Up is sent: a follower drops a Sync
    /// that has none, where our own clock read before `sendto` would be off by the scheduling
    /// delay (53 µs once, which ptp4l took as its offset).
    private func sendSync(to target: String, sequence: UInt16, logInterval: Int8) {
        let sync = PTPMessage(header: PTPHeader(type: .sync, flags: 0x0200, source: identity, sequence: sequence, logInterval: logInterval, transportSpecific: Self.majorSdoId),
                              body: .sync(PTPTimestamp(seconds: 0, nanoseconds: 0)))
        PTPSockets.dropTransmitStamps(sockets.event)
        guard PTPSockets.send(sync.encoded(), from: sockets.event, to: target, port: PTPMessage.eventPort),
              let sent = PTPSockets.transmitStamp(sockets.event) else { return }
        let followUp = PTPMessage(header: PTPHeader(type: .followUp, source: identity, sequence: sequence, logInterval: logInterval, transportSpecific: Self.majorSdoId),
                                  body: .followUp(PTPTimestamp(totalNanoseconds: time(atRealtime: sent))))
        PTPSockets.send(followUp.encoded(), from: sockets.general, to: target, port: PTPMessage.generalPort)
    }

    /// Answers every waiting Delay_Req with the time it arrived, to its sender's general port;
    /// hands what a followed receiver's clock sends (Sync, Follow_Up, Announce, Delay_Resp) to
    /// its follower.
    private func readMessages(buffer: inout [UInt8]) {
        let realtimeToMonotonic = PTPSockets.realtimeToMonotonic()
        for socket in [sockets.event, sockets.general] {
            for _ in 0..<64 {
                guard let datagram = PTPSockets.receive(socket, into: &buffer, realtimeToMonotonic: 0) else { break }
                guard let message = try? PTPMessage.decode(datagram.bytes) else { continue }
                guard message.header.type == .delayRequest else {
                    following.withLock { if $0.isFollowing { $0.receive(message, from: datagram.from, at: datagram.arrival &+ realtimeToMonotonic) } }
                    continue
                }
                let response = PTPMessage(header: PTPHeader(type: .delayResponse, source: identity, sequence: message.header.sequence, logInterval: 0,
                                                      transportSpecific: Self.majorSdoId),
                                          body: .delayResponse(received: PTPTimestamp(totalNanoseconds: time(atRealtime: datagram.arrival)),
                                                               requester: message.header.source))
                PTPSockets.send(response.encoded(), from: sockets.general, to: datagram.from, port: PTPMessage.generalPort)
            }
        }
    }

    /// Sends the followed clocks the Delay_Reqs due, from the event port, noting when each left.
    private func followReceiverClocks() {
        let realtimeToMonotonic = PTPSockets.realtimeToMonotonic()
        let actions = following.withLock { $0.tick(now: PTPSockets.monotonicNanoseconds()) }
        for case .sendDelayRequest(let message, let address) in actions {
            PTPSockets.dropTransmitStamps(sockets.event)
            let before = PTPSockets.realtimeNanoseconds()
            guard PTPSockets.send(message.encoded(), from: sockets.event, to: address, port: PTPMessage.eventPort) else { continue }
            let sent = (PTPSockets.transmitStamp(sockets.event) ?? before) &+ realtimeToMonotonic
            following.withLock { $0.delayRequestSent(sequence: message.header.sequence, at: sent) }
        }
    }
}
