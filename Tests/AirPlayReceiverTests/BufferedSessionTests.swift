@testable import AirPlayReceiver
import AirPlayPlist
import AirPlayWire
import NIOCore
import Testing

/// Buffered AirPlay 2 streams (type 103) through the session machine and their control plists:
/// a PTP session, a buffered stream, rate anchors, flushes and timing peers.
@Suite struct BufferedSessionTests {
    typealias Machine = AudioSessionStateMachine
    typealias RAOP = AudioSessionStateMachineTests

    let connection = RAOP.Connection()
    var id: ObjectIdentifier { ObjectIdentifier(connection) }
    static let alac = RAOPStreamDescription(codec: .alac(fmtp: [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]), sampleRate: 44100,
                                            channels: 2, framesPerPacket: 352)

    static func plistRequest(_ method: String, _ plist: PropertyList) -> AirPlayRequest {
        AirPlayRequest(method: method, target: "rtsp://127.0.0.1/1", version: .rtsp10,
                       headers: ["Content-Type": "application/x-apple-binary-plist"], body: ByteBuffer(bytes: plist.encoded(as: .binary)))
    }

    /// A PTP session with a buffered stream set up on `id`.
    func bufferedSession() throws -> (Machine, Int) {
        var machine = RAOP.machine()
        let session = AirPlay2Setup.Session(timingProtocol: "PTP", timingPort: nil, sessionUUID: "S", deviceID: nil, name: "Mac", model: nil,
                                            timingPeers: ["10.0.0.5"])
        guard case .openEventPort(let number)? = machine.setupSession(session, ptp: true, on: id, now: 0).last else {
            throw TestFailure("no event port asked for")
        }
        let reply = try #require(RAOP.reply(machine.eventPortOpened(session: number, port: 7100, timingPeerAddresses: ["10.0.0.9"])))
        let body = try PropertyList(decoding: Array(reply.body.readableBytesView))
        #expect(body["timingPeerInfo"]?["Addresses"] == .array([.string("10.0.0.9")]), "our follower's address goes back to the sender")
        _ = machine.setupStreams(Self.alac, buffered: true, senderControlPort: nil, on: id, now: 0)
        let streams = try #require(RAOP.reply(machine.portsOpened(session: number, audio: 41000, control: 41001, timing: 0)))
        let described = try PropertyList(decoding: Array(streams.body.readableBytesView))
        #expect(described["streams"] == .array([.dictionary(["type": .integer(103), "dataPort": .integer(41000),
                                                             "controlPort": .integer(41001), "audioBufferSize": .integer(8 << 20)])]))
        return (machine, number)
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func anAnchorPlaysAndARateZeroAnchorPauses() throws {
        var (machine, number) = try bufferedSession()
        let anchor = RateAnchor(playing: true, rtpTime: 1000, networkTime: 145_386_829_999_999, timeline: 0xBCD0_7473_011F_0008)
        let actions = machine.receive(Self.plistRequest("SETRATEANCHORTIME", anchor.plist), on: id, now: 1)
        #expect(actions.contains(.anchor(session: number, try RateAnchor(plist: anchor.plist))))
        #expect(actions.contains(.nowPlaying(.rate(1))))
        #expect(RAOP.reply(actions)?.status == 200)
        let pause = machine.receive(Self.plistRequest("SETRATEANCHORTIME", .dictionary(["rate": .integer(0)])), on: id, now: 2)
        #expect(pause.contains(.nowPlaying(.rate(0))) && RAOP.reply(pause)?.status == 200)
        #expect(machine.current?.paused == true)
    }

    @Test func anAnchorsNetworkTimeIsSecondsAndABinaryFraction() throws {
        // Apple fills the top half of the 64-bit fraction: 0x80000000 << 32 is half a second.
        let plist = PropertyList.dictionary(["rate": .integer(1), "rtpTime": .integer(4_000_000_000), "networkTimeSecs": .integer(436_043),
                                             "networkTimeFrac": .integer(Int64(bitPattern: 0x8000_0000_0000_0000)),
                                             "networkTimeTimelineID": .integer(Int64(bitPattern: 0xA483_E7AB_91EA_0008))])
        let anchor = try RateAnchor(plist: plist)
        #expect(anchor.networkTime == 436_043_500_000_000)
        #expect(anchor.rtpTime == 4_000_000_000 && anchor.timeline == 0xA483_E7AB_91EA_0008 && anchor.playing)
        // What we send reads back the same, to the nanosecond.
        let sent = RateAnchor(playing: true, rtpTime: 7, networkTime: 12_345_678_901, timeline: 1)
        #expect(try RateAnchor(plist: sent.plist) == sent)
        #expect(throws: AirPlay2Setup.Refusal.self) { try RateAnchor(plist: .dictionary(["rate": .integer(1)])) }
    }

    @Test func flushesAreImmediateOrDeferred() throws {
        var (machine, number) = try bufferedSession()
        let immediate = BufferedFlush(from: nil, until: .init(sequence: 11_259_414, timestamp: 1_667_495_692))
        let now = machine.receive(Self.plistRequest("FLUSHBUFFERED", immediate.plist), on: id, now: 1)
        #expect(now.contains(.flushBuffered(session: number, immediate)) && now.contains(.nowPlaying(.flushed)))
        let deferred = BufferedFlush(from: .init(sequence: 100, timestamp: 35_200), until: .init(sequence: 200, timestamp: 70_400))
        let later = machine.receive(Self.plistRequest("FLUSHBUFFERED", deferred.plist), on: id, now: 2)
        #expect(later.contains(.flushBuffered(session: number, deferred)) && !later.contains(.nowPlaying(.flushed)))
        let bad = machine.receive(Self.plistRequest("FLUSHBUFFERED", .dictionary(["flushFromSeq": .integer(1)])), on: id, now: 3)
        #expect(RAOP.reply(bad)?.status == 400)
    }

    @Test func anchorsAndFlushesNeedABufferedStream() throws {
        var machine = RAOP.machine()
        let none = machine.receive(Self.plistRequest("SETRATEANCHORTIME", .dictionary(["rate": .integer(0)])), on: id, now: 0)
        #expect(RAOP.reply(none)?.status == 454)
        let session = AirPlay2Setup.Session(timingProtocol: "NTP", timingPort: 6002, sessionUUID: nil, deviceID: nil, name: nil, model: nil)
        guard case .openEventPort(let number)? = machine.setupSession(session, on: id, now: 0).last else { return }
        _ = machine.eventPortOpened(session: number, port: 7100)
        _ = machine.setupStreams(Self.alac, senderControlPort: 6001, on: id, now: 0)
        _ = machine.portsOpened(session: number, audio: 1, control: 2, timing: 3)
        let realtime = machine.receive(Self.plistRequest("FLUSHBUFFERED", BufferedFlush(from: nil, until: .init(sequence: 1, timestamp: 1)).plist),
                                       on: id, now: 1)
        #expect(RAOP.reply(realtime)?.status == 455)
    }

    @Test func setPeersNamesTheTimingPeersInEitherShape() throws {
        var machine = RAOP.machine()
        let plain = machine.receive(Self.plistRequest("SETPEERS", .array([.string("10.0.0.5"), .string("fe80::1")])), on: id, now: 0)
        #expect(plain.contains(.timingPeers(["10.0.0.5", "fe80::1"])))
        let extended = PropertyList.array([.dictionary(["Addresses": .array([.string("10.0.0.7")]), "ID": .string("X"),
                                                        "ClockID": .integer(5)])])
        #expect(machine.receive(Self.plistRequest("SETPEERSX", extended), on: id, now: 0).contains(.timingPeers(["10.0.0.7"])))
        #expect(RAOP.reply(machine.receive(Self.plistRequest("SETPEERS", .array([])), on: id, now: 0))?.status == 400)
        // What our sender writes is what the box reads.
        #expect(TimingPeers.addresses(in: TimingPeers.plist(addresses: ["10.0.0.1", "10.0.0.2"])) == ["10.0.0.1", "10.0.0.2"])
    }

    @Test func buffered103StreamsAreTakenOnlyWithPTP() throws {
        let stream = PropertyList.dictionary(["streams": .array([.dictionary(["type": .integer(103), "ct": .integer(2), "audioFormat": .integer(0x40000),
                                                                              "spf": .integer(352), "shk": .data([UInt8](repeating: 1, count: 32))])])])
        guard case .streams(let streams) = try AirPlay2Setup(plist: stream, ptp: true) else { throw TestFailure("not phase 2") }
        #expect(streams.first?.type == 103 && streams.first?.sampleRate == 44100)
        #expect(throws: AirPlay2Setup.Refusal.self) { try AirPlay2Setup(plist: stream, ptp: false) }
        let ptpSession = PropertyList.dictionary(["timingProtocol": .string("PTP"), "timingPeerInfo": .dictionary([
            "Addresses": .array([.string("10.0.0.5"), .string("fe80::5")]), "ID": .string("A")]),
            "timingPeerList": .array([.dictionary(["Addresses": .array([.string("10.0.0.5")])])])])
        guard case .session(let session) = try AirPlay2Setup(plist: ptpSession, ptp: true) else { throw TestFailure("not phase 1") }
        #expect(session.timingPeers == ["10.0.0.5", "fe80::5"])
    }
}
