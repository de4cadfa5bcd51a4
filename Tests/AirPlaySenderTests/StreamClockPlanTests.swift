@testable import AirPlaySender
import Testing

/// Which clock times each receiver of `airplay stream` (`StreamClockPlan`): buffered rooms on
/// our grandmaster, realtime AirPlay 2 rooms on PTP where `--timing` or their record says so,
/// at most one receiver's own clock followed, and NTP as the fallback `auto` may take.
@Suite struct StreamClockPlanTests {
    typealias Receiver = StreamClockPlan.Receiver

    static let homePod = Receiver(name: "HomePod", airPlay2: true, advertisesPTPClock: true, insistsOnItsOwnClock: true)
    static let kitchen = Receiver(name: "Kitchen", airPlay2: true, advertisesPTPClock: true)
    static let airPlay1 = Receiver(name: "Old speaker", airPlay2: false)
    static let local = Receiver(name: "This box", airPlay2: true, advertisesPTPClock: true, onThisHost: true)
    static let buffered = Receiver(name: "Den", airPlay2: true, buffered: true, advertisesPTPClock: true)

    /// By default a realtime AirPlay 2 room goes on PTP where its record advertises a clock,
    /// except a room on this host (its follower holds UDP 319/320 here); AirPlay 1 never does.
    @Test func autoPutsOnPTPTheRoomsThatAdvertiseIt() {
        let plan = StreamClockPlan(receivers: [Self.kitchen, Self.airPlay1, Self.local], timing: .auto)
        #expect(plan.realtimeOnPTP == [0])
        #expect(plan.needsRealtimeClock && !plan.servesBufferedClock)
        #expect(plan.followed == nil && plan.warnings.isEmpty)
    }

    /// Realtime rooms beside a buffered one share its grandmaster: no second clock.
    @Test func aMixedGroupSharesTheBufferedGrandmaster() {
        let plan = StreamClockPlan(receivers: [Self.buffered, Self.kitchen], timing: .auto)
        #expect(plan.servesBufferedClock && plan.realtimeOnPTP == [1] && !plan.needsRealtimeClock)
    }

    @Test func ntpKeepsEveryRealtimeRoomOffPTP() {
        let plan = StreamClockPlan(receivers: [Self.kitchen, Self.homePod], timing: .ntp)
        #expect(plan.realtimeOnPTP.isEmpty && plan.followed == nil && !plan.needsRealtimeClock)
    }

    /// `--timing ptp` serves our clock to every AirPlay 2 room, a HomePod's wish aside.
    @Test func ptpServesOurClockToEveryAirPlay2Room() {
        let plan = StreamClockPlan(receivers: [Self.homePod, Self.local, Self.airPlay1], timing: .ptp)
        #expect(plan.realtimeOnPTP == [0, 1] && plan.followed == nil)
    }

    /// A standalone HomePod insists on its own clock: `auto` follows it; a second one cannot be
    /// followed too, and the user is told it may stay silent.
    @Test func autoFollowsOneInsistingReceiverAndWarnsOfASecond() {
        var second = Self.homePod
        second.name = "Bedroom HomePod"
        let plan = StreamClockPlan(receivers: [Self.kitchen, Self.homePod, second], timing: .auto)
        #expect(plan.followed == 1)
        #expect(plan.warnings == ["Bedroom HomePod keeps its own PTP clock too, but only HomePod's can be followed: it may stay silent"])
    }

    /// `--timing follow` follows the first room on PTP, whatever its record says.
    @Test func followFollowsTheFirstRoomOnPTP() {
        let plan = StreamClockPlan(receivers: [Self.airPlay1, Self.kitchen, Self.homePod], timing: .follow)
        #expect(plan.realtimeOnPTP == [1, 2] && plan.followed == 1)
    }

    /// Without the right to serve a clock, `auto` plays on NTP and says why; `ptp` and
    /// `follow` fail, since the user asked for PTP.
    @Test func withoutAClockAutoFallsBackToNTPAndPTPFails() throws {
        let plan = try StreamClockPlan(receivers: [Self.kitchen, Self.homePod], timing: .auto)
            .withoutRealtimePTP(because: "UDP 319 in use")
        #expect(plan.realtimeOnPTP.isEmpty && plan.followed == nil)
        #expect(plan.warnings == ["NTP timing: this command cannot serve a PTP clock (UDP 319 in use)"])
        #expect(throws: SenderError.self) { try StreamClockPlan(receivers: [Self.kitchen], timing: .ptp).withoutRealtimePTP(because: "x") }
        #expect(throws: SenderError.self) { try StreamClockPlan(receivers: [Self.kitchen], timing: .follow).withoutRealtimePTP(because: "x") }
    }

    /// A room added on the way (`airplay group add`) joins the group's PTP timeline where it
    /// would at the start, but under `follow` only where it advertises a clock: the followed
    /// receiver is already chosen.
    @Test func aJoinerIsTimedAsTheGroup() {
        #expect(StreamClockPlan.joinerOnPTP(Self.kitchen, timing: .auto))
        #expect(!StreamClockPlan.joinerOnPTP(Self.local, timing: .auto))
        #expect(StreamClockPlan.joinerOnPTP(Self.local, timing: .ptp))
        #expect(!StreamClockPlan.joinerOnPTP(Self.kitchen, timing: .ntp))
        #expect(!StreamClockPlan.joinerOnPTP(Receiver(name: "x", airPlay2: true), timing: .follow))
        #expect(!StreamClockPlan.joinerOnPTP(Self.buffered, timing: .ptp))
        #expect(!StreamClockPlan.joinerOnPTP(Self.airPlay1, timing: .ptp))
    }
}
