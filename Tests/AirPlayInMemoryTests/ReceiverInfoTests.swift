import AirPlayInMemory
import AirPlayPlist
import AirPlayReceiver
import AirPlaySender
import AirPlayWire
import Testing

/// A receiver given as HOST:PORT has no TXT record: `airplay` asks it `GET /info` (as Apple's
/// senders ask every receiver) and reads what it can do from the answer, which airplayd's own
/// `ServerInfo` writes. This is how a mixed group tells its AirPlay 2 rooms from its AirPlay 1 ones.
@Suite struct ReceiverInfoTests {
    static let id = DeviceID("02:FC:00:00:00:01")!

    static func answer(airPlay2: Bool, ptp: Bool, buffer: Bool = true) -> PropertyList {
        var capabilities = ReceiverCapabilities(video: false, hls: false, audio: true, alac: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = airPlay2
        capabilities.ptpTiming = airPlay2 && ptp
        capabilities.bufferedAudio = airPlay2 && ptp && buffer
        return ServerInfo(deviceID: id, name: "Room", capabilities: capabilities).propertyList
    }

    @Test func anAirPlay2RoomOnPTPSaysSoAndNamesItsBufferedFormats() throws {
        let info = try #require(ReceiverInfo(Self.answer(airPlay2: true, ptp: true)))
        #expect(ReceiverLink.speaksAirPlay2(info.features) && info.features.contains(.ptpClock))
        #expect(!info.features.isDisjoint(with: [.systemPairing, .coreUtilsPairing]), "transient pairing offered")
        // ALAC 44.1 kHz/16-bit (bit 18) and 48 kHz/24-bit (bit 21) among the buffered formats.
        let buffered = try #require(info.bufferedFormats)
        #expect(buffered & (1 << 18) != 0 && buffered & (1 << 21) != 0)
        #expect(info.realtimeFormats != nil)
        let address = ReceiverAddress(host: "10.0.0.2", port: 7000, key: "10.0.0.2:7000", name: "Room")
        #expect(ReceiverLinks.features(of: address, info: info) == info.features, "without a record, /info decides")
    }

    /// A room that follows PTP but keeps no buffer (airplayd's `buffered_audio = false`, a
    /// Sonos): PTP (41) without buffered audio (40), so `--mode auto` streams it realtime on PTP.
    @Test func aRoomWithoutABufferOffersPTPButNoBufferedFormats() throws {
        let info = try #require(ReceiverInfo(Self.answer(airPlay2: true, ptp: true, buffer: false)))
        #expect(info.features.contains(.ptpClock) && !info.features.contains(.bufferedAudio))
        #expect(info.bufferedFormats == nil && info.realtimeFormats != nil)
    }

    @Test func anAirPlay1RoomSaysNeitherAirPlay2NorPTP() throws {
        let info = try #require(ReceiverInfo(Self.answer(airPlay2: false, ptp: false)))
        #expect(!ReceiverLink.speaksAirPlay2(info.features) && !info.features.contains(.ptpClock))
        #expect(info.bufferedFormats == nil)
    }

    /// A record, when there is one, outranks the answer (it is what the user picked from).
    @Test func aRecordOutranksTheAnswer() throws {
        let info = try #require(ReceiverInfo(Self.answer(airPlay2: true, ptp: true)))
        let address = ReceiverAddress(host: "10.0.0.2", port: 7000, key: "k", name: "Room", raopTXT: ["ft": "0x5A7FFFF7,0x0"])
        #expect(!ReceiverLinks.features(of: address, info: info).contains(.ptpClock))
    }

    /// An answer without `features` says nothing a sender can go by.
    @Test func anAnswerWithoutFeaturesIsNone() {
        #expect(ReceiverInfo(.dictionary(["name": .string("Room")])) == nil)
        #expect(ReceiverInfo(.array([])) == nil)
    }

    /// HomePod OS 27 answers `GET /info` only to an Apple-looking User-Agent (403 to pyatv's and
    /// others'): `airplay` asks with `AirPlay/VERSION (swift-airplay)` and is answered.
    @Test func aHomePodThatAnswersOnlyApplesUserAgentAnswersOurs() throws {
        let homePod = InMemoryReceiver(quirks: [.infoOnlyToAppleUserAgents])
        var theirs = ReceiverConnection.infoRequest
        theirs.headers.replaceOrAdd(name: "User-Agent", value: "pyatv/0.16")
        var receiver = homePod
        #expect(receiver.handle(theirs, from: InMemoryConnection(), now: 0).status == 403)
        let response = receiver.handle(ReceiverConnection.infoRequest, from: InMemoryConnection(), now: 0)
        #expect(response.status == 200)
        let info = try #require(ReceiverInfo(try PropertyList(decoding: Array(response.body.readableBytesView))))
        #expect(info.features.contains(.ptpClock) && info.features.contains(.bufferedAudio))
    }
}
