import AirPlayWire

/// A standalone HomePod's PTP clock in memory, as HomePod OS 27 behaves (Music Assistant's
/// airplay-cli PR #74, support#6430 and #6469): it is its own grandmaster (priority1 248) and
/// stays so. While a sender offers a clock of its own (an Announce from it came) it serves
/// nothing and renders nothing; otherwise it Announces every 250 ms and sends each peer that
/// `SETPEERS` named unicast two-step Syncs 8 times a second, and answers Delay_Reqs. Its clock
/// is the test's clock plus an offset, running `ppm` fast.
///
/// All times are the test's clock in nanoseconds; messages carry its own clock's.
public struct InMemoryHomePodClock: Sendable {
    /// Its port identity (its grandmaster identity too).
    public let identity: PTPPortIdentity
    /// Its address, where its messages come from.
    public let address: String
    /// Its clock minus the test's at time 0, and how fast it runs against the test's (ppm).
    public let offset: Int64, ppm: Double
    /// Whether a sender offered a clock of its own: it then serves none.
    public private(set) var offeredAClock = false
    private var peers: [String] = []
    private var nextSync: Int64 = 0, nextAnnounce: Int64 = 0
    private var syncSequence: UInt16 = 0, announceSequence: UInt16 = 0

    /// A clock at `address`, `offset` nanoseconds ahead of the test's and `ppm` fast.
    public init(clockIdentity: UInt64 = 0x1C_1D_86_FF_FE_2B_3C_4D, address: String, offset: Int64, ppm: Double = 0) {
        identity = PTPPortIdentity(clockIdentity: clockIdentity, port: 1)
        self.address = address
        self.offset = offset
        self.ppm = ppm
    }

    /// Its clock when the test's reads `time`.
    public func clock(at time: Int64) -> Int64 {
        time &+ offset &+ Int64(Double(time) * ppm / 1e6)
    }

    /// The test's time at which its clock reads `clock`.
    public func time(atClock clock: Int64) -> Int64 {
        Int64((Double(clock &- offset)) / (1 + ppm / 1e6))
    }

    /// `SETPEERS`: the addresses it serves from now on (its own is skipped).
    public mutating func setPeers(_ addresses: [String]) {
        peers = addresses.filter { $0 != address }
    }

    /// What it sends at the test's time `now`: Announces to its peers, and Syncs with their
    /// Follow_Ups unless a sender offered a clock.
    public mutating func tick(now: Int64) -> [(message: PTPMessage, to: String)] {
        var out: [(PTPMessage, String)] = []
        if now >= nextAnnounce {
            nextAnnounce = now + 250_000_000
            announceSequence &+= 1
            let announce = PTPAnnounce(priority1: 248, clockClass: 248, grandmasterIdentity: identity.clockIdentity)
            let header = PTPHeader(type: .announce, source: identity, sequence: announceSequence, logInterval: -2, transportSpecific: 1)
            out += peers.map { (PTPMessage(header: header, body: .announce(announce)), $0) }
        }
        if now >= nextSync, !offeredAClock {
            nextSync = now + 125_000_000
            syncSequence &+= 1
            let sync = PTPHeader(type: .sync, flags: 0x0200, source: identity, sequence: syncSequence, logInterval: -3, transportSpecific: 1)
            let followUp = PTPHeader(type: .followUp, source: identity, sequence: syncSequence, logInterval: -3, transportSpecific: 1)
            for peer in peers {
                out.append((PTPMessage(header: sync, body: .sync(PTPTimestamp(seconds: 0, nanoseconds: 0))), peer))
                out.append((PTPMessage(header: followUp, body: .followUp(PTPTimestamp(totalNanoseconds: clock(at: now)))), peer))
            }
        }
        return out
    }

    /// A message from `from` at the test's time `now`: a Delay_Req is answered; an Announce is
    /// a clock on offer, and it stops serving its own.
    public mutating func receive(_ message: PTPMessage, from: String, at now: Int64) -> [(message: PTPMessage, to: String)] {
        switch message.header.type {
        case .announce:
            offeredAClock = true
            return []
        case .delayRequest:
            let header = PTPHeader(type: .delayResponse, source: identity, sequence: message.header.sequence, logInterval: 0, transportSpecific: 1)
            return [(PTPMessage(header: header, body: .delayResponse(received: PTPTimestamp(totalNanoseconds: clock(at: now)),
                                                                        requester: message.header.source)), from)]
        default:
            return []
        }
    }

    /// When (the test's time) it plays what an anchor says sounds at `networkTime` on
    /// `timeline`: on its own clock only; nil for any other timeline, or while it was offered one.
    public func soundsAt(networkTime: Int64, timeline: UInt64) -> Int64? {
        guard timeline == identity.clockIdentity, !offeredAClock else { return nil }
        return time(atClock: networkTime)
    }
}
