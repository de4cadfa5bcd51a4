import AirPlayMedia
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import LinuxIO

/// Carries out the FCUP exchanges of handed-over videos (`FCUPExchange`, one per video session):
/// the HLS gateway awaits a playlist (`requestPlaylist`), the request goes out on the session's
/// event channel, the phone's `/action` answer (`answer`) resumes the gateway, and a deadline
/// fails a playlist the phone never gives. Holds the gateway's continuations, nothing else: every
/// decision is the exchange's.
public final class FCUPBroker: Sendable {
    /// Writes a request on a session's event channel; false when it has none.
    public typealias Sender = @Sendable (_ sessionID: String, _ request: FCUPRequest) -> Bool

    private struct State: Sendable {
        var exchanges: [String: FCUPExchange] = [:]
        var continuations: [FCUPExchange.Waiter: CheckedContinuation<Result<String, HandedOverPlaylistError>, Never>] = [:]
        var nextWaiter = 1
        /// Sessions whose video ended lately: a late answer for them gets 200 (the newest 32).
        var ended: [String] = []
    }

    private let state = NIOLockedValueBox(State())
    private let sender: Sender
    private let timeout: Double
    private let logger: Logger

    /// A broker writing through `sender`, giving the phone `timeout` seconds a playlist.
    public init(timeout: Double = 10, logger: Logger, sender: @escaping Sender) {
        self.sender = sender
        self.timeout = timeout
        self.logger = logger
    }

    /// A broker writing on the sessions' `/reverse` channels.
    public convenience init(events: EventChannels, logger: Logger) {
        self.init(logger: logger) { sessionID, request in events.send(sessionID: sessionID, event: request.event) }
    }

    private static func now() -> Double { SystemClock().now() }

    /// Asks the session's phone for the playlist at `url` (for the HLS gateway).
    public func requestPlaylist(sessionID: String, url: String) async -> Result<String, HandedOverPlaylistError> {
        await withCheckedContinuation { continuation in
            let actions = state.withLockedValue { state -> [FCUPExchange.Action] in
                let waiter = state.nextWaiter
                state.nextWaiter += 1
                state.continuations[waiter] = continuation
                var exchange = state.exchanges[sessionID] ?? FCUPExchange(playbackSessionID: sessionID, timeout: timeout)
                let actions = exchange.fetch(url, waiter: waiter, now: Self.now())
                state.exchanges[sessionID] = exchange
                return actions
            }
            perform(actions, sessionID: sessionID)
        }
    }

    /// The phone answered a playlist request (`/action` `unhandledURLResponse`): the status and
    /// reason the `/action` gets.
    public func answer(sessionID: String, response: FCUPResponse) -> (status: Int, reason: String?) {
        let outcome = state.withLockedValue { state -> (FCUPExchange.Reply, [FCUPExchange.Action]) in
            guard var exchange = state.exchanges[sessionID] else {
                if state.ended.contains(sessionID) { return (.ok, []) }
                return (.refused(status: 400, reason: "no playlist request is waiting for session \(sessionID.prefix(64))"), [])
            }
            let outcome = exchange.answer(response, now: Self.now())
            state.exchanges[sessionID] = exchange
            return outcome
        }
        perform(outcome.1, sessionID: sessionID)
        switch outcome.0 {
        case .ok: return (200, nil)
        case .refused(let status, let reason): return (status, reason)
        }
    }

    /// The session's video ended (stop, another `/play`, the item removed): its waiting
    /// playlists fail with `reason`, late answers are taken and dropped, and the next video of
    /// the session starts a new exchange (ids from 1 again).
    public func end(sessionID: String, reason: String) {
        let actions = state.withLockedValue { state -> [FCUPExchange.Action] in
            guard var exchange = state.exchanges.removeValue(forKey: sessionID) else { return [] }
            state.ended.removeAll { $0 == sessionID }
            state.ended.append(sessionID)
            if state.ended.count > 32 { state.ended.removeFirst() }
            return exchange.cancel(reason: reason)
        }
        perform(actions, sessionID: sessionID)
    }

    private func tick(sessionID: String) {
        let actions = state.withLockedValue { state -> [FCUPExchange.Action] in
            guard var exchange = state.exchanges[sessionID] else { return [] }
            let actions = exchange.tick(now: Self.now())
            state.exchanges[sessionID] = exchange
            return actions
        }
        perform(actions, sessionID: sessionID)
    }

    private func perform(_ actions: [FCUPExchange.Action], sessionID: String) {
        for action in actions {
            switch action {
            case .send(let request):
                logger.info("fcup request", metadata: ["session": "\(sessionID)", "id": "\(request.requestID)", "url": "\(request.url.prefix(200))"])
                if !sender(sessionID, request) {
                    end(sessionID: sessionID, reason: "the sender has no event channel open (POST /reverse) to ask for its playlists")
                    return
                }
                // The deadline: a tick a moment after it (an earlier answer makes it a no-op).
                Task { [timeout] in
                    try? await Task.sleep(for: .milliseconds(Int((timeout + 0.05) * 1000)))
                    self.tick(sessionID: sessionID)
                }
            case .deliver(let waiter, let result):
                let continuation = state.withLockedValue { $0.continuations.removeValue(forKey: waiter) }
                if case .failure(let failure) = result {
                    logger.notice("fcup failed", metadata: ["session": "\(sessionID)", "reason": "\(failure.reason)"])
                }
                continuation?.resume(returning: result)
            }
        }
    }
}
