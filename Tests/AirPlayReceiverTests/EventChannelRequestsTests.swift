@testable import AirPlayReceiver
import AirPlayWire
import Testing

/// The receiver's requests on an AirPlay 2 event channel: numbered, matched to the sender's
/// answers (by CSeq, or in order when the sender names none, as OwnTone does), each ended
/// once, and bounded in number and time.
@Suite struct EventChannelRequestsTests {
    typealias Machine = EventChannelRequests
    static let command = AirPlayRequest(method: "POST", target: "/command", version: .rtsp10)

    static func answer(_ status: Int, cseq: String? = nil) -> AirPlayResponse {
        var response = AirPlayResponse(status: status)
        if let cseq { response.headers.add(name: "CSeq", value: cseq) }
        return response
    }

    static func written(_ actions: [Machine.Action]) -> [AirPlayRequest] {
        actions.compactMap { if case .write(let request) = $0 { request } else { nil } }
    }

    @Test func eachRequestIsNumberedAndEndsWithItsAnswer() {
        var machine = Machine(answerWithin: 1)
        let first = machine.send(Self.command, id: 10, now: 0), second = machine.send(Self.command, id: 11, now: 0.1)
        #expect(Self.written(first).first?.headers["CSeq"] == "1" && Self.written(second).first?.headers["CSeq"] == "2")
        #expect(first.contains(.wakeUp(at: 1)))
        #expect(!second.contains { if case .wakeUp = $0 { true } else { false } }, "one wake-up armed at a time")
        // Answered out of order, by CSeq.
        #expect(machine.answered(Self.answer(200, cseq: "2"), now: 0.2) == [.finish(id: 11, .answered(status: 200))])
        #expect(machine.answered(Self.answer(500, cseq: "1"), now: 0.3) == [.finish(id: 10, .answered(status: 500))])
        #expect(machine.waitingCount == 0)
    }

    /// OwnTone answers `RTSP/1.0 200 OK` with no CSeq: the oldest request is the one answered.
    @Test func anAnswerWithoutCSeqEndsTheOldest() {
        var machine = Machine()
        _ = machine.send(Self.command, id: 1, now: 0)
        _ = machine.send(Self.command, id: 2, now: 0)
        #expect(machine.answered(Self.answer(200), now: 0.1) == [.finish(id: 1, .answered(status: 200))])
        #expect(machine.answered(Self.answer(200), now: 0.1) == [.finish(id: 2, .answered(status: 200))])
        #expect(machine.answered(Self.answer(200), now: 0.1) == [], "an answer nobody waits for is dropped")
    }

    /// A sender that never answers (a held volume key into pyatv): every request times out, and
    /// one wake-up at a time is armed however many wait.
    @Test func aSenderThatDoesNotAnswerTimesOut() {
        var machine = Machine(answerWithin: 1)
        _ = machine.send(Self.command, id: 1, now: 0)
        _ = machine.send(Self.command, id: 2, now: 0.5)
        #expect(machine.tick(now: 0.9) == [.wakeUp(at: 1)])
        #expect(machine.tick(now: 1.0) == [.finish(id: 1, .timedOut("the sender did not answer within 1 s")), .wakeUp(at: 1.5)])
        #expect(machine.answered(Self.answer(200, cseq: "1"), now: 1.2) == [], "too late: already ended")
        #expect(machine.tick(now: 2) == [.finish(id: 2, .timedOut("the sender did not answer within 1 s"))])
    }

    /// A flood of presses on a sender that stopped reading: eight wait, the ninth is refused.
    @Test func atMostEightWait() {
        var machine = Machine()
        for id in 0..<Machine.maxWaiting { _ = machine.send(Self.command, id: id, now: 0) }
        #expect(machine.send(Self.command, id: 99, now: 0) == [.finish(id: 99, .failed("8 requests already wait for the sender's answer"))])
    }

    @Test func aClosedChannelFailsWhatWaitsAndRefusesTheRest() {
        var machine = Machine()
        _ = machine.send(Self.command, id: 1, now: 0)
        #expect(machine.channelClosed() == [.finish(id: 1, .failed("the sender closed its event channel before answering"))])
        #expect(machine.send(Self.command, id: 2, now: 1) == [.finish(id: 2, .failed("the sender's event channel is closed"))])
    }
}
