@testable import AirPlayReceiver
import AirPlayWire
import Testing

/// A realtime stream's packets as the receiver meets them (RAOP, AirPlay 2 type 96): gaps in
/// the sequence numbers are asked for with 0x55 requests (never one across the wrap), asked
/// for again while they can still play, and a FLUSH starts a new run that resumes with the
/// first packet at or after RTP-Info's seq. Pure values and times: no socket, no lock.
@Suite struct AudioPacketPipelineTests {
    static func ask(_ first: UInt16, _ count: UInt16) -> RAOPResendRequest { RAOPResendRequest(first: first, count: count) }

    /// After a FLUSH a jump in sequence numbers is no loss; a packet still in flight from
    /// before the flush point is not the sender playing again, the first after it is (and so
    /// is one marked as a first packet).
    @Test func aFlushStartsANewRunThatResumesAtItsSequence() {
        var packets = AudioPacketPipeline(now: 0)
        _ = packets.arrived(sequence: 10, marker: true, retransmitted: false, now: 1)
        packets.flush(resumingAt: 11)
        #expect(packets.expectedSequence == nil && packets.flushed && packets.flushes == 1)
        #expect(packets.arrived(sequence: 10, marker: false, retransmitted: false, now: 2.1) == .init(), "stale: in flight before the flush")
        #expect(packets.arrived(sequence: 500, marker: false, retransmitted: false, now: 3) == .init(resumed: true))
        #expect(packets.arrived(sequence: 501, marker: false, retransmitted: false, now: 3) == .init())
        packets.flush(resumingAt: nil)
        #expect(packets.arrived(sequence: 7, marker: false, retransmitted: true, now: 4) == .init(), "a resend does not resume")
        #expect(packets.arrived(sequence: 9000, marker: false, retransmitted: false, now: 4) == .init(resumed: true),
                "no RTP-Info: any next packet resumes")
        packets.flush(resumingAt: 20000)
        #expect(packets.arrived(sequence: 100, marker: true, retransmitted: false, now: 5).resumed, "a marked first packet resumes")
    }

    /// A gap in the sequence numbers asks for the missing packets once, never in one request
    /// across the wrap; retransmissions and late packets do not move the expectation back; a
    /// huge jump is a restart, not a loss.
    @Test func gapsAreAskedForAgain() {
        var packets = AudioPacketPipeline(now: 0)
        #expect(packets.arrived(sequence: 65534, marker: true, retransmitted: false, now: 1).resends.isEmpty)
        // 65535, 0 and 1, asked for in two requests: pyatv cannot look up a run across the wrap.
        #expect(packets.arrived(sequence: 2, marker: false, retransmitted: false, now: 1).resends == [Self.ask(65535, 1), Self.ask(0, 2)])
        #expect(packets.arrived(sequence: 0, marker: false, retransmitted: true, now: 1).resends.isEmpty)
        #expect(packets.arrived(sequence: 1, marker: false, retransmitted: false, now: 1).resends.isEmpty, "a late packet is no new gap")
        #expect(packets.arrived(sequence: 3, marker: false, retransmitted: false, now: 1).resends.isEmpty)
        #expect(packets.arrived(sequence: 3000, marker: false, retransmitted: false, now: 1).resends.isEmpty)
        #expect(packets.resends.requested == 3 && packets.resends.retransmitted == 1)
    }

    /// A gap that starts exactly at sequence 0 is one plain request (working out how much of
    /// it lies before the wrap once overflowed and brought the daemon down).
    @Test func aGapStartingAtZeroIsOneRequest() {
        var packets = AudioPacketPipeline(now: 0)
        #expect(packets.arrived(sequence: 65535, marker: true, retransmitted: false, now: 1).resends.isEmpty)
        #expect(packets.arrived(sequence: 3, marker: false, retransmitted: false, now: 1).resends == [Self.ask(0, 3)])
        #expect(packets.tick(now: 1.2) == [Self.ask(0, 3)], "asked again, still from 0")
    }

    /// A resend can be lost too: what is still missing a round trip after it was asked for is
    /// asked for again (runs of consecutive numbers in one request), up to ten times in all,
    /// and never once the packet came or a second has passed (it would play late). The round
    /// trip is learnt from resends of packets asked for once: here 50 ms, so the wait is
    /// 50 ms + 2 × 18.75 ms = 87.5 ms.
    @Test func missingResendsAreAskedForAgainWhileTheyCanPlay() {
        var packets = AudioPacketPipeline(now: 0)
        _ = packets.arrived(sequence: 65532, marker: true, retransmitted: false, now: 10)
        #expect(packets.arrived(sequence: 2, marker: false, retransmitted: false, now: 10).resends == [Self.ask(65533, 3), Self.ask(0, 2)])
        // 65535 and 1 come back; 65533, 65534 and 0 do not.
        _ = packets.arrived(sequence: 65535, marker: false, retransmitted: true, now: 10.05)
        _ = packets.arrived(sequence: 1, marker: false, retransmitted: true, now: 10.05)
        #expect(packets.tick(now: 10.08).isEmpty, "too soon to ask again")
        #expect(packets.tick(now: 10.09) == [Self.ask(65533, 2), Self.ask(0, 1)])
        _ = packets.arrived(sequence: 0, marker: false, retransmitted: true, now: 10.2)
        var asked = 2
        for now in stride(from: 10.18, through: 11.3, by: 0.09) {
            let requests = packets.tick(now: now)
            if asked < ResendTracker.maximumAttempts {
                #expect(requests == [Self.ask(65533, 2)], "at \(now)")
                asked += 1
            } else {
                #expect(requests.isEmpty, "asked ten times: given up")
            }
        }
        #expect(packets.resends.requested == 5 && packets.resends.requestedAgain == 3 + 2 * (asked - 2))

        _ = packets.arrived(sequence: 10, marker: false, retransmitted: false, now: 20)
        #expect(packets.tick(now: 21.2).isEmpty, "a second after the first request it would play late")
    }

    /// The wait before asking again follows the link: 150 ms until a resend has been timed,
    /// never under 20 ms on a fast LAN, and a resend of a packet asked for twice is not timed
    /// (which request it answers is unknown).
    @Test func theWaitBeforeAskingAgainFollowsTheRoundTrip() {
        var roundTrip = ResendRoundTrip()
        #expect(roundTrip.retryInterval == 0.15)
        roundTrip.arrived(AwaitedPacket(firstAsked: 0, lastAsked: 1, attempts: 2), now: 1.001)
        #expect(roundTrip.retryInterval == 0.15, "not timed")
        for step in 0..<20 { roundTrip.arrived(AwaitedPacket(firstAsked: Double(step), lastAsked: Double(step), attempts: 1), now: Double(step) + 0.004) }
        #expect(roundTrip.retryInterval == 0.02)
        for step in 0..<40 {
            let sample = step % 2 == 0 ? 0.04 : 0.08
            roundTrip.arrived(AwaitedPacket(firstAsked: Double(step), lastAsked: Double(step), attempts: 1), now: Double(step) + sample)
        }
        #expect(roundTrip.retryInterval > 0.08 && roundTrip.retryInterval <= 0.15, "\(roundTrip.retryInterval)")
    }

    /// Audio, sync and timing packets all say the sender is alive; time never goes back.
    @Test func everyPacketIsHeard() {
        var packets = AudioPacketPipeline(now: 5)
        packets.heard(now: 7)
        #expect(packets.lastHeard == 7)
        _ = packets.arrived(sequence: 1, marker: true, retransmitted: false, now: 9)
        packets.heard(now: 8)
        #expect(packets.lastHeard == 9)
    }
}
