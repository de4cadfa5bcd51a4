import AirPlayInMemory
import AirPlayReceiver
import AirPlaySender
import AirPlayMedia
import AirPlayWire
import Testing

/// The setup exchange, sender and receiver both real machines, in memory: which requests go in
/// which order, what each side ends up agreeing, and how each known receiver's quirk shows.
@Suite struct SetupInMemoryTests {
    /// An AirPlay 1 setup offering ALAC then PCM, in clear.
    static func raop(codecs: [ReceiverLink.Codec] = [.alac, .pcm], traits: RAOPReceiverTraits = RAOPReceiverTraits()) -> SenderSetupMachine {
        let announcements = codecs.map {
            SenderSetupMachine.Announcement(codec: $0, clear: ReceiverLink.sdp($0, origin: "127.0.0.2", connection: "127.0.0.1", key: nil), encrypted: nil)
        }
        return SenderSetupMachine(route: .raop(traits: traits, challenge: nil, announcements: announcements), receiverName: "box",
                                  sequence: 100, rtpTime: 4000, volumeDecibels: -10)
    }

    /// An AirPlay 2 realtime setup (NTP) in `order`.
    static func realtime(order: SenderSetupMachine.Order = .streamsFirst) -> SenderSetupMachine {
        SenderSetupMachine(route: .realtime(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: nil), alac: true,
                                            streamKey: [UInt8](repeating: 7, count: 32), ssrc: 0x1234),
                           order: order, receiverName: "box", sequence: 1, rtpTime: 0, volumeDecibels: 0)
    }

    /// An AirPlay 2 buffered setup (PTP, ALAC 44.1 kHz/16-bit).
    static func buffered() -> SenderSetupMachine {
        let stream = AirPlay2SenderSession.bufferedStream(compression: 2, audioFormat: 1 << 18, samplesPerFrame: 352,
                                                          format: .init(sampleRate: 44100, channels: 2, bitsPerSample: 16),
                                                          key: [UInt8](repeating: 9, count: 32), ssrc: 0x1500_0000)
        return SenderSetupMachine(route: .buffered(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: ["10.0.0.2"]),
                                                   stream: stream, peers: ["10.0.0.2", "10.0.0.3"]),
                                  receiverName: "box", sequence: 0, rtpTime: 0, volumeDecibels: 0)
    }

    @Test func anAirPlay1SetupIsOptionsAnnounceSetupRecordThenTheVolume() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        let outcome = try setup.run(Self.raop(), against: &receiver, now: 0).get()
        #expect(setup.exchanges.map(\.description) == [
            "OPTIONS → 200", "ANNOUNCE application/sdp → 200", "SETUP → 200", "RECORD → 200", "SET_PARAMETER text/parameters → 200",
        ])
        #expect(outcome.codec == .alac)
        #expect(outcome.audioPort == InMemoryReceiver.audioPort && outcome.controlPort == InMemoryReceiver.controlPort)
        #expect(outcome.timingPort == InMemoryReceiver.timingPort)
        let session = try #require(receiver.machine.current)
        #expect(session.phase == .recording && session.kind == .raop && session.volume == -10)
    }

    @Test func aSpeakerThatRefusesALACGets415AndThenPCM() throws {
        var receiver = InMemoryReceiver(quirks: .refusesALAC)
        var setup = InMemorySetup()
        let outcome = try setup.run(Self.raop(), against: &receiver, now: 0).get()
        #expect(setup.exchanges.prefix(3).map(\.description) == ["OPTIONS → 200", "ANNOUNCE application/sdp → 415", "ANNOUNCE application/sdp → 200"])
        #expect(outcome.codec == .pcm)
        #expect(receiver.machine.current?.stream?.codec == .pcm)
    }

    /// pyatv 0.18 announces L16 with an fmtp line that looks like ALAC's: the stream is PCM.
    @Test func pyatvsL16WithAnALACLookingFmtpIsSetUpAsPCM() throws {
        let pyatv = "v=0\r\no=iTunes 1894178057 0 IN IP4 127.0.0.1\r\ns=iTunes\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 0 RTP/AVP 96\r\n"
            + "a=rtpmap:96 L16/44100/2\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n"
        let machine = SenderSetupMachine(route: .raop(traits: RAOPReceiverTraits(), challenge: nil,
                                                      announcements: [.init(codec: .pcm, clear: pyatv, encrypted: nil)]),
                                         receiverName: "box", sequence: 1, rtpTime: 0, volumeDecibels: 0)
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        _ = try setup.run(machine, against: &receiver, now: 0).get()
        let stream = try #require(receiver.machine.current?.stream)
        #expect(stream.codec == .pcm && stream.framesPerPacket == 352 && stream.sampleRate == 44100)
    }

    @Test func aSpeakerThatRefusesEveryOfferedCodecEndsTheSetupWithItsReason() {
        var receiver = InMemoryReceiver(quirks: .refusesALAC)
        var setup = InMemorySetup()
        let result = setup.run(Self.raop(codecs: [.alac]), against: &receiver, now: 0)
        #expect(result == .failure(SenderError(.refused(status: 415), "ANNOUNCE answered 415: ALAC is not taken")))
        #expect(receiver.machine.current == nil)
    }

    @Test func aSecondSenderTakesTheBoxOverAndTheFirstIsClosed() throws {
        var receiver = InMemoryReceiver(takeover: .replace)
        var first = InMemorySetup(), second = InMemorySetup()
        _ = try first.run(Self.raop(), against: &receiver, now: 0).get()
        _ = try second.run(Self.raop(), against: &receiver, now: 1).get()
        #expect(receiver.machine.current?.connection == second.connection.id)
        #expect(receiver.actions.contains(.closeConnection(first.connection.id)))
    }

    @Test func aBoxThatRefusesTakeoverAnswers453AndKeepsItsSender() throws {
        var receiver = InMemoryReceiver(takeover: .refuse)
        var first = InMemorySetup(), second = InMemorySetup()
        _ = try first.run(Self.raop(), against: &receiver, now: 0).get()
        let result = second.run(Self.raop(), against: &receiver, now: 1)
        guard case .failure(let error) = result else { Issue.record("the second sender was let in"); return }
        #expect(error.kind == .refused(status: 453))
        #expect(receiver.machine.current?.connection == first.connection.id)
    }

    @Test func anAirPlay2RealtimeSetupOpensTheEventChannelBetweenItsTwoSetups() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        let outcome = try setup.run(Self.realtime(), against: &receiver, now: 0).get()
        #expect(setup.exchanges.map(\.method) == ["SETUP", "SETUP", "RECORD", "SET_PARAMETER"])
        #expect(setup.connectedEventPort == InMemoryReceiver.eventPort)
        #expect(outcome.audioPort == InMemoryReceiver.audioPort && outcome.controlPort == InMemoryReceiver.controlPort)
        #expect(outcome.timingPort == nil, "with NTP the receiver asks us for the time; we never ask it")
        let session = try #require(receiver.machine.current)
        #expect(session.kind == .airPlay2 && session.phase == .recording && session.senderTimingPort == UInt16(InMemorySetup.udpPort))
    }

    @Test func applesOrderRecordBeforeTheStreamSetupPlaysTheSame() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        _ = try setup.run(Self.realtime(order: .recordFirst), against: &receiver, now: 0).get()
        #expect(setup.exchanges.map(\.method) == ["SETUP", "RECORD", "SETUP", "SET_PARAMETER"])
        let session = try #require(receiver.machine.current)
        #expect(session.recorded && session.stream?.codec != nil)
    }

    @Test func aReceiverThatNeedsApplesOrderRefusesTheOtherWithItsReason() throws {
        var receiver = InMemoryReceiver(quirks: .needsRecordBeforeStreams)
        var setup = InMemorySetup()
        #expect(setup.run(Self.realtime(order: .streamsFirst), against: &receiver, now: 0)
            == .failure(SenderError(.refused(status: 455), "SETUP answered 455: RECORD first")))
        var again = InMemorySetup()
        var fresh = InMemoryReceiver(quirks: .needsRecordBeforeStreams)
        _ = try again.run(Self.realtime(order: .recordFirst), against: &fresh, now: 0).get()
    }

    /// Realtime on PTP (OwnTone's and Apple's way to a speaker without buffered audio): our
    /// grandmaster is the timing peer, named again in SETPEERS right after RECORD.
    @Test func aRealtimeStreamOnPTPNamesItsPeersAfterRecord() throws {
        let machine = SenderSetupMachine(route: .realtime(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: ["10.0.0.2"]),
                                                          alac: true, streamKey: [UInt8](repeating: 7, count: 32), ssrc: 0x1234,
                                                          peers: ["10.0.0.2", "10.0.0.3"]),
                                         receiverName: "box", sequence: 1, rtpTime: 0, volumeDecibels: 0)
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        let outcome = try setup.run(machine, against: &receiver, now: 0).get()
        #expect(setup.exchanges.map(\.method) == ["SETUP", "RECORD", "SETPEERS", "SETUP", "SET_PARAMETER"])
        #expect(outcome.controlPort == InMemoryReceiver.controlPort && outcome.timingPort == nil)
        let session = try #require(receiver.machine.current)
        #expect(session.usesPTP && !session.buffered && session.phase == .recording)
        #expect(receiver.actions.contains(.timingPeers(["10.0.0.2", "10.0.0.3"])))
    }

    @Test func aBufferedSetupRecordsSetsPeersThenConnectsTheDataPort() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        let outcome = try setup.run(Self.buffered(), against: &receiver, now: 0).get()
        #expect(setup.exchanges.map(\.method) == ["SETUP", "RECORD", "SETPEERS", "SETUP", "SET_PARAMETER"])
        #expect(setup.connectedDataPort == InMemoryReceiver.audioPort && outcome.dataPort == InMemoryReceiver.audioPort)
        let session = try #require(receiver.machine.current)
        #expect(session.buffered && session.usesPTP && session.recorded)
        #expect(receiver.actions.contains(.timingPeers(["10.0.0.2", "10.0.0.3"])))
    }

    @Test func shairportSync5sEmptyAnswerToAnNTPSessionIsNamedNotMisread() {
        var receiver = InMemoryReceiver(quirks: .emptyAnswerToNTPSessions)
        var setup = InMemorySetup()
        #expect(setup.run(Self.realtime(), against: &receiver, now: 0)
            == .failure(SenderError(.refused(status: 200), "SETUP answered 200 with no body")))
    }

    /// Sonos takes the AirPlay 2 session, refuses its native realtime stream (400), and plays
    /// the RAOP-compatible path: the sender learns it (and `airplay stream` sets the speaker up
    /// again over AirPlay 1), which then plays.
    @Test func aSpeakerThatRefusesNativeStreamsSaysSoAndPlaysAirPlay1() throws {
        var receiver = InMemoryReceiver(quirks: .refusesNativeStreams)
        var setup = InMemorySetup()
        #expect(setup.run(Self.realtime(), against: &receiver, now: 0)
            == .failure(SenderError(.refused(status: 400), "SETUP answered 400: streams are not taken")))
        #expect(setup.refusedNativeStreams)
        var again = InMemorySetup()
        _ = try again.run(Self.raop(), against: &receiver, now: 1).get()
        #expect(receiver.machine.current?.kind == .raop && receiver.machine.current?.phase == .recording)
    }

    /// Any other failure says nothing of the sort (no fallback for a refused session).
    @Test func anEmptyAnswerIsNotARefusedStream() {
        var receiver = InMemoryReceiver(quirks: .emptyAnswerToNTPSessions)
        var setup = InMemorySetup()
        _ = setup.run(Self.realtime(), against: &receiver, now: 0)
        #expect(!setup.refusedNativeStreams)
    }

    @Test func aSessionWithoutRTSPOrAudioForItsTimeoutEnds() throws {
        var receiver = InMemoryReceiver(sessionTimeout: 30)
        var setup = InMemorySetup()
        _ = try setup.run(Self.raop(), against: &receiver, now: 0).get()
        receiver.tick(now: 29)
        #expect(receiver.machine.current != nil)
        receiver.tick(now: 31)
        #expect(receiver.machine.current == nil)
        #expect(receiver.actions.contains(.closeConnection(setup.connection.id)))
    }

    @Test func flushPausesAndTheNextRecordPlaysAgain() throws {
        var receiver = InMemoryReceiver()
        var setup = InMemorySetup()
        _ = try setup.run(Self.raop(), against: &receiver, now: 0).get()
        let flush = setup.send(SenderRequest(method: "FLUSH", headers: ["RTP-Info": "seq=200;rtptime=40000"]), to: &receiver, now: 1)
        #expect(flush.status == 200)
        let session = try #require(receiver.machine.current)
        #expect(session.paused)
        #expect(receiver.actions.contains(.flush(session: session.number, before: 40000, resumeSequence: 200)))
    }
}
