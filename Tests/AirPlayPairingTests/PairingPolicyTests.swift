import AirPlayPairing
import Testing

/// The receiver-wide pairing rules: which PIN, who may try, and the back-off after failures.
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
}
