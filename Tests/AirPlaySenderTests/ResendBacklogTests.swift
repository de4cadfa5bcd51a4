@testable import AirPlaySender
import Testing

/// What a sender can resend when a receiver asks (RTP type 0x55: first sequence number and
/// count): the last packets it sent, by number, across the wrap at 65536, never a newer packet
/// under an old number, and never more than it keeps however many are asked for.
@Suite struct ResendBacklogTests {
    @Test func aRequestGetsTheKeptPacketsInOrder() {
        var backlog = ResendBacklog(capacity: 8)
        for sequence in UInt16(100)..<106 { backlog.store([UInt8(sequence & 0xFF)], sequence: sequence) }
        let kept = backlog.packets(from: 101, count: 3)
        #expect(kept.map(\.sequence) == [101, 102, 103])
        #expect(kept.map(\.packet) == [[101], [102], [103]])
    }

    @Test func numbersOlderThanTheBacklogFindNothing() {
        var backlog = ResendBacklog(capacity: 8)
        for sequence in UInt16(100)..<110 { backlog.store([UInt8(sequence & 0xFF)], sequence: sequence) }
        // 100 and 101 were pushed out by 108 and 109, which share their slots.
        #expect(backlog.packet(100) == nil && backlog.packet(101) == nil)
        #expect(backlog.packets(from: 98, count: 5).map(\.sequence) == [102])
        #expect(backlog.packet(109) == [109])
    }

    @Test func requestsSpanTheWrapAt65536() {
        var backlog = ResendBacklog(capacity: 8)
        for sequence in [UInt16(65534), 65535, 0, 1] { backlog.store([UInt8(sequence & 0xFF)], sequence: sequence) }
        #expect(backlog.packets(from: 65535, count: 3).map(\.sequence) == [65535, 0, 1])
    }

    @Test func aRequestForMoreThanIsKeptLooksAtNoMoreThanTheBacklog() {
        var backlog = ResendBacklog(capacity: 8)
        for sequence in UInt16(0)..<8 { backlog.store([UInt8(sequence)], sequence: sequence) }
        #expect(backlog.packets(from: 0, count: 65535).count == 8)
    }
}
