import AirPlayCrypto

/// The receiver's rules around pair-setup, as a pure value: which PIN a setup uses, who may try
/// now, and how long a run of failures locks a source out. Time is passed in.
///
/// - `pin = "NNNN"` fixes the PIN; `pin = "random"` makes a new 4-digit PIN for each setup,
///   shown on the box (log, `/now-playing`) until the setup ends or 5 minutes pass.
/// - Failures (wrong PIN or signature) are counted per source: an IPv4 address, or an IPv6
///   /64 (the caller's key: a host rotates addresses within its /64 at will). After a source's
///   10th failure its setups are refused for a back-off that starts at 30 s and doubles with
///   each further failure, up to an hour: about 40 guesses a day from one source. A refused
///   M1 is answered with HAP's Backoff error and its RetryDelay in seconds (MaxTries would tell
///   the sender never to try again), without computing anything. A success forgives its source.
/// - The backstop: once 30 failures came within an hour from all sources together, each
///   source gets 3 failures before it is locked out for the hour. A source that never failed
///   (the box's owner, who knows the PIN) is never refused for others' failures.
/// - One PIN setup at a time: another connection's M1 meanwhile gets `Busy`, unless it comes
///   from a source that never failed and the setup under way from one that has: a guesser
///   cannot hold the one setup against the owner.
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
    /// Failures from all sources within `backstopWindow` seconds that start the backstop.
    public static let backstopFailures = 30
    /// The window of `backstopFailures`.
    public static let backstopWindow = 3600.0
    /// A source's failures allowed while the backstop holds, before it is locked out for
    /// `longestBackoff`.
    public static let freeAttemptsUnderAttack = 3
    /// A source's record is forgotten this long after its last failure.
    public static let memory = 86_400.0
    /// The most sources remembered (the longest-quiet is forgotten first).
    public static let rememberedSources = 1024
    /// The source key when the caller cannot tell one.
    public static let unknownSource = "unknown"

    /// One source's failed setups.
    struct SourceRecord: Sendable {
        var failures = 0
        var lockedUntil = 0.0
        var lastFailure = 0.0
    }

    /// A source locked out now, for `/diagnostics`.
    public struct Lockout: Hashable, Sendable {
        /// The source's key (an IPv4 address or an IPv6 /64).
        public var source: String
        /// Its failed setups remembered.
        public var failures: Int
        /// Seconds until it may try again.
        public var seconds: Int

        /// A lock-out from its parts.
        public init(source: String, failures: Int, seconds: Int) {
            self.source = source
            self.failures = failures
            self.seconds = seconds
        }
    }

    /// Where the PIN comes from.
    public let source: PINSource
    private var sources: [String: SourceRecord] = [:]
    private var recentFailures: [Double] = []
    private var shown: (pin: String, since: Double)?
    private var setupOwner: (connection: ObjectIdentifier, source: String, since: Double)?
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

    /// The PIN an M1 from `connection` (at `source`) must use, or the failure to answer it with
    /// (back-off, another setup under way). A random PIN is made here when `/pair-pin-start`
    /// was skipped.
    public mutating func pinForSetup(connection: ObjectIdentifier, source: String = PairingPolicy.unknownSource, now: Double,
                                     setupTimeout: Double = 60,
                                     random: () -> String = PairingPolicy.randomPIN) -> Result<String, PairingFailure> {
        if let refusal = backoff(source: source, now: now) { return .failure(refusal) }
        if let owner = setupOwner, owner.connection != connection, now - owner.since < setupTimeout {
            let ownerFailed = (sources[owner.source]?.failures ?? 0) > 0
            let clean = (sources[source]?.failures ?? 0) == 0
            guard ownerFailed && clean else {
                return .failure(PairingFailure(state: 2, code: .busy, reason: "another pair-setup is under way"))
            }
            setupOwner = nil   // the guesser's setup gives way to one from a source that never failed
        }
        // The owner's own repeated M1s do not extend its hold: it lasts one setup time-out.
        if setupOwner?.connection != connection || now - (setupOwner?.since ?? 0) >= setupTimeout { setupOwner = (connection, source, now) }
        switch self.source {
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

    /// The Backoff error for `source` while it is locked out, with its delay; nil when it may
    /// set up. Asked before anything else of an M1: a locked-out source costs nothing and spends
    /// none of the starts others need.
    public func backoff(source: String = PairingPolicy.unknownSource, now: Double) -> PairingFailure? {
        let wait = retryDelay(source: source, now: now)
        guard wait > 0 else { return nil }
        return PairingFailure(state: 2, code: .backoff, reason: "too many failed pair-setups from \(source): refused for \(wait) s more",
                              retryDelay: wait)
    }

    /// Seconds until `source` may set up again (0 when it may).
    public func retryDelay(source: String = PairingPolicy.unknownSource, now: Double) -> Int {
        guard let record = sources[source] else { return 0 }
        return max(0, Int((record.lockedUntil - now).rounded(.up)))
    }

    /// Whether the backstop holds at `now`: `backstopFailures` within the last `backstopWindow`.
    public func backstopHolds(now: Double) -> Bool {
        recentFailures.filter { now - $0 < Self.backstopWindow }.count >= Self.backstopFailures
    }

    /// The sources locked out at `now`, the longest wait first.
    public func lockouts(now: Double) -> [Lockout] {
        sources.compactMap { key, record in
            let seconds = Int((record.lockedUntil - now).rounded(.up))
            return seconds > 0 ? Lockout(source: key, failures: record.failures, seconds: seconds) : nil
        }.sorted { ($0.seconds, $1.source) > ($1.seconds, $0.source) }
    }

    /// A setup from `source` failed on a wrong PIN or signature.
    public mutating func setupFailed(source: String = PairingPolicy.unknownSource, now: Double) {
        setupOwner = nil
        sources = sources.filter { now - $0.value.lastFailure < Self.memory }
        recentFailures = Array((recentFailures + [now]).filter { now - $0 < Self.backstopWindow }.suffix(Self.backstopFailures))
        var record = sources[source] ?? SourceRecord()
        record.failures += 1
        record.lastFailure = now
        if backstopHolds(now: now), record.failures >= Self.freeAttemptsUnderAttack {
            record.lockedUntil = now + Self.longestBackoff
        } else if record.failures >= Self.freeAttempts {
            let doublings = Double(record.failures - Self.freeAttempts)
            record.lockedUntil = now + min(Self.longestBackoff, Self.firstBackoff * pow2(doublings))
        }
        sources[source] = record
        if sources.count > Self.rememberedSources, let quietest = sources.min(by: { $0.value.lastFailure < $1.value.lastFailure })?.key {
            sources[quietest] = nil
        }
    }

    /// A PIN setup from `source` succeeded: the PIN is used up and that source's failures
    /// forgiven (not others': a guesser's record stays). Not for transient setups: their PIN
    /// is public.
    public mutating func setupSucceeded(source: String = PairingPolicy.unknownSource) {
        sources[source] = nil
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
