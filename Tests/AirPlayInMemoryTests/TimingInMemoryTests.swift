import AirPlayInMemory
import AirPlaySender
import Testing

/// Where the receiver places each packet a sender times by each known convention, sender and
/// receiver both real code, on a clock the test moves (`Protocol/raop.md` §1). What the
/// namespace tests show with processes and wall-clock minutes, here in milliseconds.
@Suite struct TimingInMemoryTests {
    /// The spread of `heardAt - sentAt` over the packets placed.
    static func delays(_ placements: [InMemoryRAOPStream.Placement]) -> (min: Double, max: Double, placed: Int) {
        let delays = placements.compactMap { placement in placement.heardAt.map { $0 - placement.sentAt } }
        return (delays.min() ?? .nan, delays.max() ?? .nan, delays.count)
    }

    @Test func ourSenderIsHeardOneLatencyAfterEachPacketIsDue() {
        var stream = InMemoryRAOPStream(senderOffset: 3_900_000_000)
        let placements = stream.play(seconds: 10, from: 100)
        let (least, most, placed) = Self.delays(placements)
        #expect(placed == placements.count, "every packet placed: the first timing answer comes before the first packet")
        #expect(abs(least - RAOPStreamer.latencySeconds) < 1e-4 && abs(most - RAOPStreamer.latencySeconds) < 1e-4, "\(least)…\(most)")
    }

    /// A sender whose crystal runs 80 ppm fast (5 ms a minute) is followed: over a minute no
    /// packet lands more than a millisecond off its latency. Until the timing answers span 10 s
    /// the receiver knows the offset but not the drift, so a placement may step by under a
    /// millisecond when a newer answer moves the line (the playout slews such steps out); once
    /// the drift is known, consecutive packets never move against each other.
    @Test func aSenderClock80ppmFastIsFollowedWithoutJumps() {
        var stream = InMemoryRAOPStream(senderOffset: 1_000_000, senderPPM: 80)
        let placements = stream.play(seconds: 60, from: 100)
        let heard = placements.compactMap(\.heardAt)
        #expect(heard.count == placements.count)
        let (least, most, _) = Self.delays(placements)
        #expect(least > RAOPStreamer.latencySeconds - 0.001 && most < RAOPStreamer.latencySeconds + 0.001, "\(least)…\(most)")
        let packet = 352 / 44100.0
        let steps = zip(placements, zip(heard, heard.dropFirst())).map { (sentAt: $0.sentAt, step: abs(($1.1 - $1.0) - packet)) }
        let learning = steps.filter { $0.sentAt < 111 }.map(\.step).max() ?? 0
        let known = steps.filter { $0.sentAt >= 111 }.map(\.step).max() ?? 0
        #expect(learning < 0.001, "a step of \(learning * 1000) ms while the drift was learnt")
        #expect(known < 0.00001, "a step of \(known * 1000) ms once the drift was known")
    }

    /// libraop back-dates its start by its whole latency and bursts the backlog: every frame is
    /// still placed where its sync says (250 ms after the start, then at the stream's rate), and
    /// none is overdue when it arrives.
    @Test func libraopsBackDatedBurstIsPlacedWhereItsSyncsSay() throws {
        var stream = InMemoryRAOPStream(convention: .libraop(latencyFrames: 112_455))
        let placements = stream.play(seconds: 6, from: 200)
        let first = try #require(placements.first?.heardAt)
        #expect(abs(first - 200.25) < 1e-4, "the first frame is heard 250 ms after the start: \(first)")
        for (index, placement) in placements.enumerated() {
            let expected = 200.25 + Double(index * 352) / 44100
            #expect(abs((placement.heardAt ?? 0) - expected) < 1e-4, "packet \(index)")
            #expect((placement.heardAt ?? 0) > placement.arrivedAt, "packet \(index) overdue on arrival")
        }
        #expect(placements[1].sentAt == placements[0].sentAt, "the backlog goes out at once")
    }

    /// PipeWire's syncs claim no latency; the receiver's floor (0.5 s) is what the frames get.
    @Test func pipeWiresZeroLatencySyncsGetTheReceiversFloor() {
        var stream = InMemoryRAOPStream(convention: .zeroLatencySyncs, minimumLatency: 0.5)
        let (least, most, placed) = Self.delays(stream.play(seconds: 5, from: 100))
        #expect(placed > 0)
        #expect(abs(least - 0.5) < 1e-3 && abs(most - 0.5) < 1e-3, "\(least)…\(most)")
    }

    /// The same stream over a slow link (40 ms each way) is placed the same: the offset is
    /// measured from the round trip, not taken from arrival times.
    @Test func aSlowLinkDoesNotMovePlacement() {
        var stream = InMemoryRAOPStream(senderOffset: 500, oneWay: 0.04)
        let (least, most, _) = Self.delays(stream.play(seconds: 5, from: 100))
        #expect(abs(least - RAOPStreamer.latencySeconds) < 1e-4 && abs(most - RAOPStreamer.latencySeconds) < 1e-4, "\(least)…\(most)")
    }
}
