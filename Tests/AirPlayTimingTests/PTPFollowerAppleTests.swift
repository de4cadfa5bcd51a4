import AirPlayTiming
import AirPlayWire
import Testing

/// What the follower does for Apple senders' clocks, as nqptp does (`Protocol/ptp.md`, "Apple's
/// clocks"): a silent master a session names is woken with two Announces; a clock that steps starts a
/// new timing sequence; a clock that stops (an idle iPhone) is held, not followed, and starts a
/// new sequence when it runs again.
@Suite struct PTPFollowerAppleTests {
    static let us: Int64 = 1_000
    static let master = PTPPortIdentity(clockIdentity: 0x0A0B_0CFF_FE0D_0E0F, port: 1)
    static let ours = PTPPortIdentity(clockIdentity: 0x02FC_00FF_FE00_0001, port: 1)

    /// A master on a quiet link: one Announce a second, a two-step Sync eight times a second,
    /// its clock `offset` ahead of ours unless the test says what it reads.
    struct Clock {
        var follower = PTPFollower(identity: PTPFollowerAppleTests.ours)
        var now: Int64 = 1_000_000_000_000
        var offset: Int64 = 7_000_000_000
        var sequence: UInt16 = 0
        /// What its Follow_Ups say, when not `now + offset` (a stopped clock).
        var frozenAt: Int64?
        var announces: [PTPMessage] = []
        /// Where its datagrams come from, as the follower's sockets describe it.
        var address = "10.0.0.1"

        mutating func seconds(_ count: Int, followUps: Bool = true, priority1: UInt8 = 128) {
            for step in 0..<(count * 8) {
                if step % 8 == 0 {
                    let announce = PTPAnnounce(priority1: priority1, priority2: 100, grandmasterIdentity: PTPFollowerAppleTests.master.clockIdentity)
                    follower.receive(PTPMessage(header: PTPHeader(type: .announce, source: PTPFollowerAppleTests.master, sequence: sequence),
                                                body: .announce(announce)), from: address, at: now)
                }
                if followUps {
                    sequence &+= 1
                    let origin = frozenAt ?? (now + offset)
                    follower.receive(PTPMessage(header: PTPHeader(type: .sync, flags: 0x0200, source: PTPFollowerAppleTests.master, sequence: sequence, logInterval: -3),
                                                body: .sync(PTPTimestamp(seconds: 0, nanoseconds: 0))), from: address, at: now + 50 * us)
                    follower.receive(PTPMessage(header: PTPHeader(type: .followUp, source: PTPFollowerAppleTests.master, sequence: sequence, logInterval: -3),
                                                body: .followUp(PTPTimestamp(totalNanoseconds: origin))), from: address, at: now + 70 * us)
                }
                // Ticks every 25 ms: the second Announce of a wake-up is due 150 ms after the first.
                for tick in 0..<5 {
                    for case .sendAnnounce(let message, let address) in follower.tick(now: now + Int64(tick) * 25_000_000) {
                        #expect(address == self.address)
                        announces.append(message)
                    }
                }
                now += 125_000_000
            }
        }

        var status: PTPFollower.MasterStatus? { follower.statuses(now: now).first }
        /// The follower's error on the master's time now, in nanoseconds, less the 50 µs its
        /// Syncs take to arrive (it answers no Delay_Req: taken at zero path delay, as nqptp does).
        var error: Int64? { follower.masterTime(at: now).map { $0 - (now + offset) + 50 * PTPFollowerAppleTests.us } }
    }

    /// A master the session named that announces but sends no Follow_Ups (an Apple Silicon Mac
    /// may stay silent until spoken to) is woken at its third such Announce, once: two Announces
    /// to its general port 150 ms apart, a grandmaster a little better (priority1 − 1), then a
    /// little worse (+ 1), 64 bytes each, laid out as nqptp sends them. A new list of timing
    /// peers (the next SETUP) arms it again.
    @Test func aSilentMasterIsWokenAtItsThirdQuietAnnounce() throws {
        var clock = Clock()
        clock.seconds(4, followUps: false)
        #expect(clock.announces.isEmpty, "no session named it")
        clock.follower.setPeers(["10.0.0.1"])
        clock.seconds(6, followUps: false)
        #expect(clock.announces.count == 2 && clock.status?.wakeUps == 1)
        let bytes = try #require(clock.announces.first).encoded()
        #expect(bytes.count == 64)
        #expect(bytes[0] == 0x1B && bytes[1] == 0x02 && bytes[6] == 0x04 && bytes[7] == 0x08, "Announce, PTPv2, unicast and PTP timescale")
        #expect(Array(bytes[20..<28]) == Array(bytes[53..<61]), "from our own clock identity, as its grandmaster")
        #expect(bytes[28] == 0x80 && bytes[29] == 0x08 && bytes[32] == 0x05 && bytes[33] == 0xFE)
        #expect(bytes[44] == 0 && bytes[45] == 37 && Array(bytes[48..<52]) == [0xF8, 0xFE, 0x43, 0x6A] && bytes[63] == 0xA0)
        guard case .announce(let better) = clock.announces[0].body, case .announce(let worse) = clock.announces[1].body else {
            Issue.record("not Announces")
            return
        }
        #expect(better.priority1 == 127 && worse.priority1 == 129 && better.priority2 == 100)
        clock.follower.setPeers(["10.0.0.1"])
        clock.seconds(4, followUps: false)
        #expect(clock.announces.count == 4 && clock.status?.wakeUps == 2)
    }

    /// An iPhone over IPv6 names its link-local address in `timingPeerInfo` as it likes
    /// (upper case, zeros written out, no interface); its datagrams arrive from the canonical
    /// form with the interface they came in on. It is the same host, and the wake-up goes back
    /// to the scoped address, as a link-local reply must.
    @Test func anIPv6PeerIsMatchedByHostAndAnsweredOnItsInterface() {
        var clock = Clock()
        clock.address = "fe80::a0b:cff:fe0d:e0f%veth1"
        clock.follower.setPeers(["FE80:0:0:0:0A0B:0CFF:FE0D:0E0F"])
        clock.seconds(4, followUps: false)
        #expect(clock.announces.count == 2, "woken on its interface (the address check is in Clock)")
        #expect(clock.status?.address == "fe80::a0b:cff:fe0d:e0f%veth1")
        clock.follower.setPeers(["fe80::1"])
        clock.seconds(1)
        #expect(clock.follower.ignored > 0, "another host's clock is not followed")
    }

    /// A master that serves its time is never sent anything: nqptp also wakes every named
    /// master on its first Announce, which disturbed OwnTone's clock (its rooms drifted 2-3 ms
    /// apart).
    @Test func aMasterThatServesIsLeftAlone() {
        var clock = Clock()
        clock.follower.setPeers(["10.0.0.1"])
        clock.seconds(8)
        #expect(clock.announces.isEmpty && clock.status?.wakeUps == 0)
    }

    /// A clock that steps by seconds (a sender restarting its timeline, an iPhone waking)
    /// starts a new timing sequence at once, instead of averaging two timescales for a
    /// window's length (16 s).
    @Test func aSteppedClockStartsANewSequence() throws {
        var clock = Clock()
        clock.seconds(4)
        #expect(abs(try #require(clock.error)) < 5 * Self.us)
        clock.offset += 5_000_000_000
        clock.seconds(1)
        let status = try #require(clock.status)
        #expect(status.sequence == 2 && status.lastRestart?.contains("stepped by 5.0 s") == true, "\(status)")
        #expect(abs(try #require(clock.error)) < 5 * Self.us, "on the new timescale within a second")
    }

    /// A clock that stops (its Follow_Ups repeat one time: an idle iPhone) is held on the line
    /// it had, not dragged by the time passing here; after 60 s of it the master is woken; when
    /// it runs again, from wherever it now reads, a new sequence starts.
    @Test func aStoppedClockIsHeldThenFollowedAfresh() throws {
        var clock = Clock()
        clock.follower.setPeers(["10.0.0.1"])
        clock.seconds(4)
        let wokenAtStart = clock.status?.wakeUps ?? 0
        clock.frozenAt = clock.now - 125_000_000 + clock.offset   // what its last Follow_Up said
        clock.seconds(3)
        var status = try #require(clock.status)
        #expect(status.stopped && status.frozenFollowUps == 24 && status.sequence == 1)
        #expect(abs(try #require(clock.error)) < 5 * Self.us, "the line in force carries on")
        clock.seconds(58)
        #expect(clock.status?.wakeUps == wokenAtStart + 1, "woken after 480 repeated times")
        // It runs again, 61 s behind where it would have been.
        clock.offset -= clock.now + clock.offset - clock.frozenAt!
        clock.frozenAt = nil
        clock.seconds(1)
        status = try #require(clock.status)
        #expect(!status.stopped && status.sequence == 2 && status.lastRestart?.contains("ran again") == true, "\(status)")
        #expect(abs(try #require(clock.error)) < 5 * Self.us)
    }

    /// A new grandmaster behind the same port (a sender that rebuilt its clock) is a new timescale.
    @Test func aNewGrandmasterStartsANewSequence() throws {
        var clock = Clock()
        clock.seconds(2)
        let other = PTPAnnounce(priority1: 128, grandmasterIdentity: 0x1234)
        clock.follower.receive(PTPMessage(header: PTPHeader(type: .announce, source: Self.master, sequence: 99), body: .announce(other)),
                               from: "10.0.0.1", at: clock.now)
        let status = try #require(clock.status)
        #expect(status.sequence == 2 && status.lastRestart == "its grandmaster changed")
    }
}
