import AirPlayWire
import Testing

/// NTP-style timing as both sides of RAOP speak it: one responder, one round-trip rule.
@Suite struct TimingExchangeTests {
    private func ntp(_ seconds: Double) -> UInt64 { UInt64(seconds * 4_294_967_296) }

    @Test func theReplyEchoesTheRequestsTransmitTimeAndStampsOurClockTwice() {
        var readings = [ntp(100.25), ntp(100.5)].makeIterator()
        let reply = RAOPTiming.reply(to: RAOPTiming(origin: 0, receive: 0, transmit: ntp(7))) { readings.next()! }
        #expect(reply == RAOPTiming(origin: ntp(7), receive: ntp(100.25), transmit: ntp(100.5)))
        #expect(reply.bytes(reply: true).prefix(4) == [0x80, 0xD3, 0x00, 0x07])
    }

    @Test func theRoundTripLeavesOutThePeersHoldingTimeAndGivesItsOffset() throws {
        // Sent at 10.0 (ours); the peer, 5 s ahead, got it at 15.1 and answered at 15.2; back at 10.3.
        let reply = RAOPTiming(origin: ntp(10.0), receive: ntp(15.1), transmit: ntp(15.2))
        let exchange = try #require(reply.exchange(arrival: ntp(10.3)))
        #expect(abs(exchange.roundTrip - 0.2) < 1e-6)
        #expect(abs(exchange.offset - 5.0) < 1e-6)
        // A reply from before we asked, or a minute late, says nothing.
        #expect(reply.exchange(arrival: ntp(9.0)) == nil)
        #expect(reply.exchange(arrival: ntp(75.0)) == nil)
    }
}
