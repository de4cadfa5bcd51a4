import AirPlayInMemory
import AirPlaySender
import AirPlayTiming
import AirPlayWire
import Testing

/// A standalone HomePod on OS 27 insists on being the PTP master: it renders only anchors on
/// its own clock, and serves that clock only to a sender that offers none. The sender's side
/// (`ReceiverClockFollowing`, what `PTPGrandmaster` runs on its ports when it follows) plays
/// against the fake clock here, on the test's clock, with a one-way delay of 300 µs each way.
@Suite struct ReceiverClockInMemoryTests {
    static let sender = "10.0.0.1", homePod = "10.0.0.2"
    static let ours = PTPPortIdentity(clockIdentity: 0x02_AA_BB_FF_FE_00_00_01, port: 1)
    static let oneWay: Int64 = 300_000

    /// Runs both sides for `seconds` from `start` in 1 ms steps, each message arriving one
    /// `oneWay` after it left; `offer` sends the HomePod our grandmaster's Announce first.
    static func exchange(_ following: inout ReceiverClockFollowing, _ clock: inout InMemoryHomePodClock, from start: Int64,
                         seconds: Double, offer: Bool = false) -> (announcesFromUs: Int, delayRequests: Int) {
        var toSender: [(at: Int64, message: PTPMessage)] = [], toHomePod: [(at: Int64, message: PTPMessage)] = []
        if offer {
            toHomePod.append((start, PTPMessage(header: PTPHeader(type: .announce, source: ours, sequence: 1, transportSpecific: 1),
                                                body: .announce(PTPAnnounce(priority1: 128, grandmasterIdentity: ours.clockIdentity)))))
        }
        var announces = 0, requests = 0
        var now = start
        while now < start + Int64(seconds * 1e9) {
            for item in toHomePod where item.at <= now {
                for (reply, _) in clock.receive(item.message, from: sender, at: item.at) { toSender.append((item.at + oneWay, reply)) }
            }
            toHomePod.removeAll { $0.at <= now }
            for (message, _) in clock.tick(now: now) { toSender.append((now + oneWay, message)) }
            for item in toSender where item.at <= now { following.receive(item.message, from: homePod, at: item.at) }
            toSender.removeAll { $0.at <= now }
            for action in following.tick(now: now) {
                switch action {
                case .sendDelayRequest(let message, _):
                    requests += 1
                    following.delayRequestSent(sequence: message.header.sequence, at: now)
                    toHomePod.append((now + oneWay, message))
                case .sendAnnounce: announces += 1
                }
            }
            now += 1_000_000
        }
        return (announces, requests)
    }

    /// Followed, the HomePod's clock becomes the timeline: an anchor the sender writes for a
    /// moment of its own clock names the HomePod's clock, and the HomePod plays it at that
    /// moment to within 20 µs, though its clock is 4000 s away from ours and 40 ppm fast.
    @Test func aStandaloneHomePodsClockIsFollowedAndItPlaysWhenTheSenderMeansIt() throws {
        var clock = InMemoryHomePodClock(address: Self.homePod, offset: 4_000_000_000_000, ppm: 40)
        var following = ReceiverClockFollowing(identity: Self.ours)
        following.follow(Self.homePod)
        clock.setPeers([Self.sender, Self.homePod])   // SETPEERS
        let start: Int64 = 1_000_000_000
        #expect(following.followed(now: start) == nil, "no clock before its Syncs")
        let (announces, requests) = Self.exchange(&following, &clock, from: start, seconds: 3)
        let now = start + 3_000_000_000
        let followed = try #require(following.followed(now: now), "followed within 3 s")
        #expect(followed.timeline == clock.identity.clockIdentity && followed.address == Self.homePod)
        #expect(announces == 0, "the sender never offers a clock: that would silence it")
        #expect(requests > 8, "path delays measured: \(requests) Delay_Reqs")
        for moment in stride(from: now, to: now + 2_000_000_000, by: 250_000_000) {
            let clockTime = following.clockTime(at: moment)
            let networkTime = try #require(clockTime)
            let heard = try #require(clock.soundsAt(networkTime: networkTime, timeline: followed.timeline))
            #expect(abs(heard - moment) < 20_000, "heard \(heard - moment) ns from the moment meant")
        }
    }

    /// A sender that serves its grandmaster (one Announce is enough) hears no clock from the
    /// HomePod, and the HomePod plays nothing anchored on ours: the silence users reported.
    @Test func offeredOurClockTheHomePodServesNoneAndPlaysNothing() {
        var clock = InMemoryHomePodClock(address: Self.homePod, offset: 4_000_000_000_000)
        var following = ReceiverClockFollowing(identity: Self.ours)
        following.follow(Self.homePod)
        clock.setPeers([Self.sender, Self.homePod])
        _ = Self.exchange(&following, &clock, from: 0, seconds: 3, offer: true)
        #expect(clock.offeredAClock)
        #expect(following.followed(now: 3_000_000_000) == nil, "Announces but no Syncs: no clock to follow")
        #expect(clock.soundsAt(networkTime: 3_000_000_000, timeline: Self.ours.clockIdentity) == nil)
    }

    /// A HomePod that falls silent mid-stream is not woken with Announces (a receiver's
    /// follower would wake an iPhone so), and its clock goes on where its line left it.
    @Test func aSilentHomePodIsNeitherWokenNorDroppedFromTheTimeline() throws {
        var clock = InMemoryHomePodClock(address: Self.homePod, offset: -2_000_000_000)
        var following = ReceiverClockFollowing(identity: Self.ours)
        following.follow(Self.homePod)
        clock.setPeers([Self.sender, Self.homePod])
        _ = Self.exchange(&following, &clock, from: 0, seconds: 3)
        clock.setPeers([])   // it stops serving
        var silent = InMemoryHomePodClock(address: Self.homePod, offset: clock.offset)
        let (announces, _) = Self.exchange(&following, &silent, from: 3_000_000_000, seconds: 40)
        #expect(announces == 0)
        let later: Int64 = 43_000_000_000
        let clockTime = following.clockTime(at: later)
        let time = try #require(clockTime, "past the holdover, the last line still answers")
        #expect(abs(time - clock.clock(at: later)) < 50_000)
    }

    /// Which receivers keep their own clock, from their `_airplay._tcp` record.
    @Test func onlyAStandaloneHomePodOnOS27KeepsItsOwnClock() {
        let standalone: TXTRecord = ["model": "AudioAccessory1,1", "igl": "1", "gid": "5E1C0F3A", "osvers": "27.0", "flags": "0x98404"]
        #expect(ReceiverClockRule.role(airPlayTXT: standalone) == .receiver)
        var mini = standalone
        mini["model"] = "AudioAccessory5,1"
        #expect(ReceiverClockRule.role(airPlayTXT: mini) == .receiver, "a HomePod mini too")
        for (key, value, why) in [("pgid", "A1B2", "in an Apple TV's group"), ("tsid", "C3D4", "half of a stereo pair"),
                                  ("igl", "0", "not its own group leader"), ("osvers", "26.4", "before OS 27")] {
            var record = standalone
            record[key] = value
            #expect(ReceiverClockRule.role(airPlayTXT: record) == .sender, "\(why)")
        }
        #expect(ReceiverClockRule.role(airPlayTXT: ["am": "AudioAccessory6,1", "igl": "1", "ov": "27.1"]) == .receiver, "short keys")
        #expect(ReceiverClockRule.role(airPlayTXT: ["model": "AudioAccessory1,1", "igl": "1", "srcvers": "980.77.2"]) == .receiver,
                "no OS version: AirPlay 980 is OS 27's")
        #expect(ReceiverClockRule.role(airPlayTXT: ["model": "AudioAccessory1,1", "igl": "1", "srcvers": "870.14.1"]) == .sender)
        #expect(ReceiverClockRule.role(airPlayTXT: ["model": "AppleTV14,1", "igl": "1", "osvers": "27.0"]) == .sender)
        #expect(ReceiverClockRule.role(airPlayTXT: nil) == .sender, "HOST:PORT: no record")
    }
}
