import AirPlayWire
import NIOCore

/// The receiver's requests on one AirPlay 2 event channel (remote commands), as a pure
/// machine: it numbers each request (CSeq), matches the sender's answers to them, and ends
/// each one once: answered, timed out, or lost with the channel. It keeps one wake-up armed at
/// a time. The channel handler only carries its actions out.
///
/// Senders answer in order: `airplay` and Music Assistant's sender echo the CSeq, OwnTone
/// writes a bare `RTSP/1.0 200 OK`. An answer without a CSeq is taken for the oldest request
/// waiting (so one that comes after its request timed out is credited to the next: harmless,
/// since both were sent).
struct EventChannelRequests {
    /// Something for the channel to do.
    enum Action: Equatable {
        /// Write this request (already numbered).
        case write(AirPlayRequest)
        /// Request `id` is over: the sender's answer, or why there is none.
        case finish(id: Int, Outcome)
        /// Call `tick(now:)` at this time (the earliest deadline).
        case wakeUp(at: Double)
    }

    /// How a request ended.
    enum Outcome: Equatable {
        /// The sender answered with this status.
        case answered(status: Int)
        /// Not sent, or lost: the channel is gone, or too many wait already.
        case failed(String)
        /// Sent, but not answered in time: the sender may still act on it.
        case timedOut(String)
    }

    private struct Waiting {
        var id: Int
        var cseq: Int
        var deadline: Double
    }

    /// Requests that may wait for an answer at once; more are refused (a flood of presses
    /// must not pile up on a sender that stopped reading).
    static let maxWaiting = 8
    /// Seconds the sender has to answer.
    let answerWithin: Double
    private var nextCSeq = 1
    private var waiting: [Waiting] = []
    private var closed = false
    /// When the one wake-up asked for is due, if one is.
    private var armed: Double?

    /// A machine whose requests wait `answerWithin` seconds for their answer.
    init(answerWithin: Double = 2) { self.answerWithin = answerWithin }

    /// How many requests wait for an answer.
    var waitingCount: Int { waiting.count }

    /// Sends `request` as request `id`: numbered and written, or refused at once.
    mutating func send(_ request: AirPlayRequest, id: Int, now: Double) -> [Action] {
        guard !closed else { return [.finish(id: id, .failed("the sender's event channel is closed"))] }
        guard waiting.count < Self.maxWaiting else {
            return [.finish(id: id, .failed("\(Self.maxWaiting) requests already wait for the sender's answer"))]
        }
        var numbered = request
        numbered.headers.replaceOrAdd(name: "CSeq", value: String(nextCSeq))
        waiting.append(Waiting(id: id, cseq: nextCSeq, deadline: now + answerWithin))
        nextCSeq += 1
        // A wake-up already armed comes no later than this deadline; its tick arms the next.
        guard armed == nil else { return [.write(numbered)] }
        armed = waiting[0].deadline
        return [.write(numbered), .wakeUp(at: waiting[0].deadline)]
    }

    /// The sender answered: the request with its CSeq (or the oldest) is over.
    mutating func answered(_ response: AirPlayResponse, now: Double) -> [Action] {
        let cseq = response.headers["CSeq"].flatMap { Int($0.trimmingWhitespace()) }
        guard let index = cseq.map({ cseq in waiting.firstIndex { $0.cseq == cseq } }) ?? (waiting.isEmpty ? nil : 0) else {
            return []  // an answer nobody waits for (late, after its timeout): dropped
        }
        let done = waiting.remove(at: index)
        return [.finish(id: done.id, .answered(status: response.status))]
    }

    /// The armed wake-up: ends every request whose time is up; arms one for the next deadline.
    mutating func tick(now: Double) -> [Action] {
        armed = nil
        let (late, onTime) = (waiting.filter { $0.deadline <= now }, waiting.filter { $0.deadline > now })
        waiting = onTime
        var actions = late.map { Action.finish(id: $0.id, .timedOut("the sender did not answer within \(Self.seconds(answerWithin))")) }
        if let next = waiting.first?.deadline {
            armed = next
            actions.append(.wakeUp(at: next))
        }
        return actions
    }

    /// The channel closed: every waiting request fails, later ones are refused.
    mutating func channelClosed() -> [Action] {
        closed = true
        defer { waiting = [] }
        return waiting.map { .finish(id: $0.id, .failed("the sender closed its event channel before answering")) }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
