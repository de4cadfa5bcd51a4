/// When a control connection has waited too long, as a value: bytes, decoded requests, sent
/// responses and the time go in; a time-out comes out.
///
/// - A request must arrive whole within `requestTimeout` of its first byte, or the sender gets
///   408 and the connection closes: a client that trickles a head (slowloris) holds nothing.
/// - A connection with nothing in flight for `idleTimeout` closes, unless it holds an audio
///   session (RAOP senders keep a quiet RTSP connection for the whole stream; that session
///   has its own time-out).
public struct ConnectionTimeouts: Sendable {
    /// The limits.
    public struct Limits: Hashable, Sendable {
        /// Seconds from a request's first byte to its last.
        public var requestTimeout: Double
        /// Seconds a connection may sit with no request in flight.
        public var idleTimeout: Double

        /// Limits from their parts.
        public init(requestTimeout: Double, idleTimeout: Double) {
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
        }

        /// 10 s for a request, 120 s idle.
        public static let `default` = Limits(requestTimeout: 10, idleTimeout: 120)
    }

    /// What the connection must do.
    public enum Action: Hashable, Sendable {
        /// Answer 408 Request Timeout and close.
        case requestTimedOut
        /// Close quietly.
        case idleTimedOut
    }

    private enum State: Hashable {
        /// Nothing in flight since `since`.
        case idle(since: Double)
        /// Part of a request arrived; the first byte came at `since`.
        case receiving(since: Double)
        /// Requests are being answered.
        case answering(pending: Int)
        /// The connection is done with time-outs (timed out, or an event channel now).
        case finished
    }

    private let limits: Limits
    private var state: State

    /// A fresh connection, idle since `now`.
    public init(limits: Limits, now: Double) {
        self.limits = limits
        state = .idle(since: now)
    }

    /// Whether nothing is in flight (the next bytes start a request).
    public var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    /// What admission sees (`ConnectionAdmission`): idle or half-received since when; nil while
    /// answering, or once no longer timed.
    public var waiting: ConnectionAdmission.Waiting? {
        switch state {
        case .idle(let since): .idle(since: since)
        case .receiving(let since): .receiving(since: since)
        case .answering, .finished: nil
        }
    }

    /// Bytes came in: a request starts unless one is already being received or answered.
    public mutating func bytesArrived(now: Double) {
        if case .idle = state { state = .receiving(since: now) }
    }

    /// A whole request was decoded (or refused by the decoder): it is being answered.
    public mutating func requestDecoded() {
        switch state {
        case .idle, .receiving: state = .answering(pending: 1)
        case .answering(let pending): state = .answering(pending: pending + 1)
        case .finished: break
        }
    }

    /// A response went out; with none left in flight the connection is idle again.
    public mutating func responseSent(now: Double) {
        guard case .answering(let pending) = state else { return }
        state = pending > 1 ? .answering(pending: pending - 1) : .idle(since: now)
    }

    /// The connection stops being timed (it became an event channel, or was closed).
    public mutating func stop() { state = .finished }

    /// The time passed; `holdsSession` says whether the connection owns an audio session.
    public mutating func tick(now: Double, holdsSession: Bool) -> Action? {
        switch state {
        case .receiving(let since) where now - since > limits.requestTimeout:
            state = .finished
            return .requestTimedOut
        case .idle(let since) where now - since > limits.idleTimeout:
            if holdsSession {
                state = .idle(since: now)
                return nil
            }
            state = .finished
            return .idleTimedOut
        default:
            return nil
        }
    }
}
