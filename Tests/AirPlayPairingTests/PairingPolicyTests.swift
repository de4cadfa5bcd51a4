import AirPlayPairing
import Testing

/// The receiver's pairing rules: which PIN, who may try, and the back-off after failures,
/// counted per source (an IPv4 address or an IPv6 /64) with a receiver-wide backstop.
@Suite struct PairingPolicyTests {
    let one = ObjectIdentifier(Int.self), two = ObjectIdentifier(String.self)

    @Test func aFixedPINIsAlwaysTheConfiguredOne() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        #expect(try policy.pinForSetup(connection: one, now: 0).get() == "2468")
        #expect(policy.startPIN(now: 0) == nil, "nothing to show: the PIN is in the configuration")
        #expect(policy.displayedPIN(now: 0) == nil)
    }

    @Test func aRandomPINIsMadeAtPinStartShownAndUsedUpBySuccess() throws {
        var policy = PairingPolicy(source: .random)
        let pin = try #require(policy.startPIN(now: 10) { "0042" })
        #expect(pin == "0042" && policy.displayedPIN(now: 11) == "0042")
        #expect(try policy.pinForSetup(connection: one, now: 12) { "9999" }.get() == "0042", "the PIN on show is the one to type")
        policy.setupSucceeded()
        #expect(policy.displayedPIN(now: 13) == nil)
        // A shown PIN expires after five minutes.
        _ = policy.startPIN(now: 100) { "1111" }
        #expect(policy.displayedPIN(now: 100 + PairingPolicy.pinLifetime + 1) == nil)
    }

    @Test func randomPINsAreFourDigits() {
        for _ in 0..<200 {
            let pin = PairingPolicy.randomPIN()
            #expect(pin.count == 4 && pin.allSatisfy(\.isNumber), "\(pin)")
        }
    }

    @Test func anotherConnectionsSetupIsBusyUntilTheFirstEndsOrExpires() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        _ = try policy.pinForSetup(connection: one, now: 0).get()
        let busy = policy.pinForSetup(connection: two, now: 1)
        #expect(throws: PairingFailure.self) { try busy.get() }
        if case .failure(let failure) = busy { #expect(failure.code == .busy) }
        #expect(throws: Never.self) { try policy.pinForSetup(connection: two, now: 61).get() }
        policy.setupAbandoned(connection: two)
        #expect(throws: Never.self) { try policy.pinForSetup(connection: one, now: 62).get() }
    }

    @Test func tenFailuresStartABackOffThatDoublesAndSuccessForgives() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        for attempt in 0..<9 {
            _ = try policy.pinForSetup(connection: one, now: Double(attempt)).get()
            policy.setupFailed(now: Double(attempt))
        }
        #expect(throws: Never.self) { try policy.pinForSetup(connection: one, now: 9).get() }
        policy.setupFailed(now: 9)
        // The tenth failure: refused for 30 s, with Backoff and the seconds left to wait.
        let refused = policy.pinForSetup(connection: one, now: 10)
        if case .failure(let failure) = refused {
            #expect(failure.code == .backoff && failure.retryDelay == 29)
            #expect(failure.reply.byte(.error) == TLV8.ErrorCode.backoff.rawValue && failure.reply.integer(.retryDelay) == 29)
        } else {
            Issue.record("not refused")
        }
        #expect(policy.retryDelay(now: 10) == 29)
        #expect(throws: Never.self) { try policy.pinForSetup(connection: one, now: 40).get() }
        policy.setupFailed(now: 40)
        #expect(policy.retryDelay(now: 40) == 60, "the eleventh failure doubles it")
        policy.setupSucceeded()
        #expect(policy.retryDelay(now: 41) == 0)
    }

    @Test func aFloodOfSetupStartsIsAnsweredBusyNotComputed() {
        var policy = PairingPolicy(source: .fixed("2468"))
        for index in 0..<PairingPolicy.startsPerWindow {
            let admitted = policy.admitStart(now: Double(index) * 0.1)
            #expect(admitted)
        }
        let flooded = policy.admitStart(now: 3.5)
        #expect(!flooded, "one start too many within 10 s")
        let later = policy.admitStart(now: 10.5)
        #expect(later, "the window moves on")
    }

    /// Failures count per source: a guesser's ten lock that source out (Backoff, with the
    /// wait), while the owner's source still sets up; a success forgives its own source only.
    @Test func failuresCountPerSourceAndTheOwnerKeepsAWayIn() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        for attempt in 0..<10 {
            _ = try policy.pinForSetup(connection: one, source: "192.0.2.66", now: Double(attempt)).get()
            policy.setupFailed(source: "192.0.2.66", now: Double(attempt))
        }
        #expect(policy.retryDelay(source: "192.0.2.66", now: 10) == 29)
        #expect(throws: PairingFailure.self) { try policy.pinForSetup(connection: one, source: "192.0.2.66", now: 10).get() }
        #expect(try policy.pinForSetup(connection: two, source: "192.0.2.10", now: 10).get() == "2468", "the owner is not locked out")
        policy.setupSucceeded(source: "192.0.2.10")
        #expect(policy.retryDelay(source: "192.0.2.66", now: 11) == 28, "the owner's success forgives the owner, not the guesser")
        #expect(policy.lockouts(now: 11) == [PairingPolicy.Lockout(source: "192.0.2.66", failures: 10, seconds: 28)])
    }

    /// Once 30 failures came within an hour from all sources together, each source (a fresh
    /// one too) is locked out for the hour at its third failure; a source that never failed is
    /// still let in. An hour later the allowance is back to ten.
    @Test func theBackstopShortensEverySourcesAllowance() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        for index in 0..<PairingPolicy.backstopFailures {
            policy.setupFailed(source: "198.51.100.\(index)", now: Double(index))
        }
        #expect(policy.backstopHolds(now: 30))
        for attempt in 0..<3 { policy.setupFailed(source: "203.0.113.7", now: 31 + Double(attempt)) }
        #expect(policy.retryDelay(source: "203.0.113.7", now: 34) == 3599)
        #expect(try policy.pinForSetup(connection: two, source: "192.0.2.10", now: 35).get() == "2468")
        #expect(!policy.backstopHolds(now: 3700))
        for attempt in 0..<3 { policy.setupFailed(source: "203.0.113.8", now: 3700 + Double(attempt)) }
        #expect(policy.retryDelay(source: "203.0.113.8", now: 3703) == 0)
    }

    /// The one PIN setup at a time: a guesser's setup gives way to an M1 from a source that never
    /// failed, but not to another guesser.
    @Test func aGuesserCannotHoldTheSetupAgainstTheOwner() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        let three = ObjectIdentifier(Double.self)
        policy.setupFailed(source: "192.0.2.66", now: 0)
        policy.setupFailed(source: "192.0.2.67", now: 0)
        _ = try policy.pinForSetup(connection: one, source: "192.0.2.66", now: 1).get()
        #expect(throws: PairingFailure.self) { try policy.pinForSetup(connection: three, source: "192.0.2.67", now: 2).get() }
        #expect(try policy.pinForSetup(connection: two, source: "192.0.2.10", now: 2).get() == "2468")
        #expect(throws: PairingFailure.self) { try policy.pinForSetup(connection: one, source: "192.0.2.66", now: 3).get() }
    }

    /// A day of guessing as fast as the box answers (a guess a second) from one source gets 39
    /// guesses of 10,000 PINs (the issue's bound: 100), while the owner's source is admitted at
    /// every moment of it.
    @Test func aGuesserGetsThirtyNineGuessesADay() throws {
        var policy = PairingPolicy(source: .fixed("2468"))
        var now = 0.0, guesses = 0, ownerRefused = 0
        while now < 86_400 {
            let wait = policy.retryDelay(source: "2001:db8:1:2::/64", now: now)
            if wait > 0 {
                now += Double(wait)
                continue
            }
            _ = try policy.pinForSetup(connection: one, source: "2001:db8:1:2::/64", now: now).get()
            policy.setupFailed(source: "2001:db8:1:2::/64", now: now)
            guesses += 1
            if case .failure = policy.pinForSetup(connection: two, source: "192.0.2.10", now: now + 0.5) { ownerRefused += 1 }
            policy.setupAbandoned(connection: two)
            now += 1
        }
        #expect(guesses == 39, "\(guesses) guesses")
        #expect(ownerRefused == 0)
    }
}
