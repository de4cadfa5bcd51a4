import AirPlayCrypto

/// The receiver-wide rules around pair-setup, as a pure value: which PIN a setup uses, who may
/// try now, and how long a run of failures locks setup out. Time is passed in.
///
/// - `pin = "NNNN"` fixes the PIN; `pin = "random"` makes a new 4-digit PIN for each setup,
///   shown on the box (log, `/now-playing`) until the setup ends or 5 minutes pass.
/// - After 10 failed setups (wrong PIN or signature) setup is refused for a back-off that
///   starts at 30 s and doubles with each further failure, up to an hour; a success resets it.
///   A refused M1 is answered with HAP's Backoff error and its RetryDelay in seconds (MaxTries
///   would tell the sender never to try again), without computing anything.
/// - One PIN setup at a time: another connection's M1 meanwhile gets `Busy`.
public struct PairingPolicy: Sendable {
    /// Where the PIN comes from.
    public enum PINSource: Equatable, Sendable {
        /// Always this PIN.
        case fixed(String)
        /// A new random PIN per setup.
        case random
    }

    /// Failed setups allowed before the back-off starts.
    public static let freeAttempts = 10
    /// The first back-off, in seconds.
    public static let firstBackoff = 30.0
    /// The longest back-off, in seconds.
    public static let longestBackoff = 3600.0
    /// How long a random PIN stays valid.
    public static let pinLifetime = 300.0
    /// Setups started (M1, transient ones included) allowed per `startWindow` seconds: each
    /// costs two 3072-bit exponentiations, so a flood of M1s is answered Busy, not computed.
    public static let startsPerWindow = 30
    /// The window of `startsPerWindow`.
    public static let startWindow = 10.0

    /// Where the PIN comes from.
    public let source: PINSource
    private(set) var failures = 0
    private(set) var lockedUntil = 0.0
    private var shown: (pin: String, since: Double)?
    private var setupOwner: (connection: ObjectIdentifier, since: Double)?
    private var recentStarts: [Double] = []

    /// A policy for a PIN source.
    public init(source: PINSource) { self.source = source }

    /// The PIN to show on the box while a setup waits for it (random PINs only).
    public func displayedPIN(now: Double) -> String? {
        guard case .random = source, let shown, now - shown.since < Self.pinLifetime else { return nil }
        return shown.pin
    }

    /// `/pair-pin-start`: a random PIN is made (and returned, to be shown) unless one is showing.
    public mutating func startPIN(now: Double, random: () -> String = PairingPolicy.randomPIN) -> String? {
        guard case .random = source else { return nil }
        if let pin = displayedPIN(now: now) { return pin }
        let pin = random()
        shown = (pin, now)
        return pin
    }

    /// The PIN an M1 from `connection` must use, or the failure to answer it with (back-off,
    /// another setup under way). A random PIN is made here when `/pair-pin-start` was skipped.
    public mutating func pinForSetup(connection: ObjectIdentifier, now: Double, setupTimeout: Double = 60,
                                     random: () -> String = PairingPolicy.randomPIN) -> Result<String, PairingFailure> {
        if now < lockedUntil {
            let wait = Int((lockedUntil - now).rounded(.up))
            return .failure(PairingFailure(state: 2, code: .backoff, reason: "too many failed pair-setups: refused for \(wait) s more",
                                           retryDelay: wait))
        }
        if let owner = setupOwner, owner.connection != connection, now - owner.since < setupTimeout {
            return .failure(PairingFailure(state: 2, code: .busy, reason: "another pair-setup is under way"))
        }
        // The owner's own repeated M1s do not extend its hold: it lasts one setup time-out.
        if setupOwner?.connection != connection || now - (setupOwner?.since ?? 0) >= setupTimeout { setupOwner = (connection, now) }
        switch source {
        case .fixed(let pin): return .success(pin)
        case .random: return .success(displayedPIN(now: now) ?? startPIN(now: now, random: random)!)
        }
    }

    /// Whether another setup may start now (any kind); counts it when it may.
    public mutating func admitStart(now: Double) -> Bool {
        recentStarts.removeAll { now - $0 >= Self.startWindow }
        guard recentStarts.count < Self.startsPerWindow else { return false }
        recentStarts.append(now)
        return true
    }

    /// Seconds until setup is allowed again (0 when it is).
    public func retryDelay(now: Double) -> Int { max(0, Int((lockedUntil - now).rounded(.up))) }

    /// A setup failed on a wrong PIN or signature.
    public mutating func setupFailed(now: Double) {
        failures += 1
        setupOwner = nil
        if failures >= Self.freeAttempts {
            let doublings = Double(failures - Self.freeAttempts)
            lockedUntil = now + min(Self.longestBackoff, Self.firstBackoff * pow2(doublings))
        }
    }

    /// A PIN setup succeeded: the PIN is used up and the failures forgiven. (Not for transient
    /// setups: their PIN is public.)
    public mutating func setupSucceeded() {
        failures = 0
        lockedUntil = 0
        shown = nil
        setupOwner = nil
    }

    /// The connection that owned a setup closed or gave up.
    public mutating func setupAbandoned(connection: ObjectIdentifier) {
        if setupOwner?.connection == connection { setupOwner = nil }
    }

    /// Four random decimal digits, uniformly drawn.
    public static func randomPIN() -> String {
        var value: UInt16
        repeat {
            let bytes = SecureRandom.bytes(2)
            value = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        } while value >= 60_000  // 60,000 is a multiple of 10,000: no digit is favoured
        let digits = String(value % 10_000)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(min(exponent, 20)) { result *= 2 }
        return result
    }
}
