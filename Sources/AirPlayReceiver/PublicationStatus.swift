import AirPlayWire

/// Where the box's mDNS records stand, from the publisher's events: what `GET /diagnostics`
/// says and `airplay doctor` reads ("not published: avahi-daemon is not running").
public struct PublicationStatus: Hashable, Sendable {
    /// `starting`, `waiting` (no avahi-daemon), `registering`, `established` or `failed`.
    public private(set) var state = "starting"
    /// The name published (or being published).
    public private(set) var name: String
    /// The configured name, when a collision made the box take another.
    public private(set) var renamedFrom: String?
    /// Why it waits or failed, in Avahi's words.
    public private(set) var reason: String?
    /// When the state last changed, on the caller's clock.
    public private(set) var since: Double

    /// Before the publisher's first event.
    public init(name: String, now: Double) {
        self.name = name
        self.since = now
    }

    /// Takes one publisher event at `now`.
    public mutating func note(_ event: PublisherEvent, now: Double) {
        let before = state
        switch event {
        case .waitingForDaemon(let why): (state, reason) = ("waiting", why)
        case .registering(let deviceName): (state, name, reason) = ("registering", deviceName, nil)
        case .established(let deviceName): (state, name, reason) = ("established", deviceName, nil)
        case .renamed(let old, let new):
            renamedFrom = renamedFrom ?? old
            name = new
        case .txtUpdated: break
        case .failed(let why): (state, reason) = ("failed", why)
        }
        if state != before { since = now }
    }

    /// The status as JSON, its age counted at `now`.
    public func json(now: Double) -> JSONValue {
        .object(["state": .string(state), "name": .string(name), "renamedFrom": .string(renamedFrom), "reason": .string(reason),
                 "secondsInState": .number(((now - since) * 10).rounded() / 10)])
    }
}
