@testable import AirPlaySender
import AirPlayPlist
import AirPlayWire
import NIOCore
import Testing

/// A receiver's session after its setup, as the sender runs it: which request each command
/// sends, the keep-alive's fallback from `/feedback` to the volume, metadata only of the kinds
/// the receiver's `md` lists, and nothing after TEARDOWN.
@Suite struct SenderSessionMachineTests {
    typealias Machine = SenderSessionMachine

    static func request(_ actions: [Machine.Action]) -> SenderRequest? {
        guard case .send(let request, _)? = actions.first else { return nil }
        return request
    }

    static let ok = AirPlayResponse(status: 200)
    static func refused(_ status: Int) -> AirPlayResponse { AirPlayResponse(status: status) }

    /// A pause is a FLUSH to the next packet's point, a resume a RECORD from it, both with
    /// RTP-Info; a refusal of either fails the command with the receiver's status.
    @Test func pauseAndResumeAreFlushAndRecordAtAnRTPPoint() throws {
        var machine = Machine(nowPlaying: .dmap([0, 1, 2]))
        #expect(machine.phase == .playing, "the setup's RECORD was sent")
        let flush = try #require(Self.request(machine.command(.flush(RTPInfo(sequence: 7, rtpTime: 2464)))))
        #expect(flush.method == "FLUSH" && flush.headers[RTPInfo.headerName] == "seq=7;rtptime=2464" && machine.phase == .paused)
        let record = try #require(Self.request(machine.command(.record(RTPInfo(sequence: 7, rtpTime: 2464)))))
        #expect(record.method == "RECORD" && record.headers["Range"] == "npt=0-" && record.headers[RTPInfo.headerName] == "seq=7;rtptime=2464")
        #expect(machine.phase == .playing)
        let failed = machine.replied(Self.refused(455), to: record, required: true)
        guard case .failed(let error)? = failed.first, case .refused(status: 455) = error.kind else {
            Issue.record("a refused RECORD fails: \(failed)")
            return
        }
    }

    /// The keep-alive is `POST /feedback`; a receiver that refuses it (AirPort-era RAOP
    /// receivers answer 4xx or 501) gets the volume at once, and from then on only the volume.
    @Test func aRefusedFeedbackFallsBackToTheVolumeForGood() throws {
        var machine = Machine(nowPlaying: .dmap([]))
        let feedback = try #require(Self.request(machine.command(.keepAlive(decibels: -12))))
        #expect(feedback.method == "POST" && feedback.target == "/feedback")
        #expect(machine.replied(Self.ok, to: feedback, required: true).isEmpty)
        let fallback = try #require(Self.request(machine.replied(Self.refused(501), to: feedback, required: true)))
        #expect(fallback.method == "SET_PARAMETER" && String(decoding: fallback.body, as: UTF8.self) == "volume: -12.000000\r\n")
        #expect(machine.feedback == .refused)
        let next = try #require(Self.request(machine.command(.keepAlive(decibels: -6))))
        #expect(next.method == "SET_PARAMETER" && String(decoding: next.body, as: UTF8.self) == "volume: -6.000000\r\n")
    }

    /// Text, artwork and progress go as SET_PARAMETERs at the metadata's RTP time, each only
    /// where `md` lists it; a refusal of one is let go. A receiver with bit 50 gets MediaRemote
    /// now-playing instead.
    @Test func metadataGoesWhereTheReceiverWantsIt() {
        var item = DMAP.Item()
        item.title = "Sweep"
        let metadata = Machine.Metadata(item: item, artwork: Machine.Artwork(type: "image/png", bytes: [0x89, 0x50]),
                                        progress: Machine.Progress(start: 100, current: 200, end: 300), rtpTime: 200)
        var all = Machine(nowPlaying: .dmap([0, 1, 2]))
        let sent = all.command(.metadata(metadata))
        let requests = sent.compactMap { if case .send(let request, required: false) = $0 { request } else { nil } }
        #expect(requests.map(\.contentType) == ["application/x-dmap-tagged", "image/png", "text/parameters"])
        #expect(requests.allSatisfy { $0.method == "SET_PARAMETER" && $0.headers[RTPInfo.headerName] == "rtptime=200" })
        #expect(String(decoding: requests[2].body, as: UTF8.self) == "progress: 100/200/300\r\n")
        #expect(all.replied(Self.refused(400), to: requests[1], required: false).isEmpty, "refused artwork: playing goes on")

        var textOnly = Machine(nowPlaying: .dmap([0]))
        #expect(textOnly.command(.metadata(metadata)).count == 1)
        var none = Machine(nowPlaying: .dmap([]))
        #expect(none.command(.metadata(metadata)).isEmpty)
        var mediaRemote = Machine(nowPlaying: .mediaRemote)
        #expect(mediaRemote.command(.metadata(metadata)) == [.sendMediaRemoteNowPlaying(metadata)])
    }

    /// A buffered stream's anchors are SETRATEANCHORTIME plists: rate 1 plays, rate 0 pauses.
    @Test func anchorsPlayAndPause() throws {
        var machine = Machine(nowPlaying: .dmap([]), recorded: false)
        #expect(machine.phase == .paused)
        let anchor = RateAnchor.play(rtpTime: 1000, networkTime: 5_000_000_000, timeline: 42)
        let play = try #require(Self.request(machine.command(.anchor(anchor))))
        #expect(play.method == "SETRATEANCHORTIME" && machine.phase == .playing)
        #expect(try RateAnchor(plist: PropertyList(decoding: play.body)) == anchor)
        _ = machine.command(.anchor(.pause))
        #expect(machine.phase == .paused)
    }

    /// TEARDOWN ends the session (its refusal, or a dead connection, is let go) and nothing is
    /// sent after it.
    @Test func nothingGoesAfterTeardown() throws {
        var machine = Machine(nowPlaying: .dmap([0]))
        let teardown = machine.command(.tearDown)
        #expect(teardown == [.send(SenderRequest(method: "TEARDOWN"), required: false)] && machine.phase == .ended)
        #expect(machine.command(.keepAlive(decibels: 0)).isEmpty)
        #expect(machine.command(.record(RTPInfo(sequence: 1, rtpTime: 1))).isEmpty)
    }
}
