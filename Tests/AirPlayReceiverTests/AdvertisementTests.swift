import AirPlayPlist
@testable import AirPlayReceiver
import AirPlayWire
import NIOCore
import Testing

/// One capability model feeds both TXT records and /server-info, so they always agree and never overclaim.
@Suite struct AdvertisementTests {
    let id = DeviceID("02:FC:00:00:00:01")!

    @Test func videoAndAudioOn() {
        let capabilities = ReceiverCapabilities(video: true, hls: true, audio: true)
        #expect(capabilities.features.bitNumbers == [0, 3, 4, 9, 15, 16, 17, 23])
        #expect(capabilities.statusFlags.txtValue == "0x4")
    }

    @Test func turningVideoOffClearsBits0And4() {
        let features = ReceiverCapabilities(video: false, hls: true, audio: true).features
        #expect(!features.contains(.video))
        #expect(!features.contains(.videoHTTPLiveStreams))
        #expect(!features.contains(.videoVolumeControl))
        #expect(features.contains(.audio))
    }

    @Test func hlsNeedsADemuxer() {
        let features = ReceiverCapabilities(video: true, hls: false, audio: false).features
        #expect(features.contains(.video))
        #expect(!features.contains(.videoHTTPLiveStreams))
    }

    @Test(arguments: [(true, true), (true, false), (false, true), (false, false)])
    func unimplementedBitsAreNeverSet(video: Bool, audio: Bool) {
        let features = ReceiverCapabilities(video: video, hls: true, audio: audio).features
        #expect(features.isDisjoint(with: FeatureSet.pairingBits))
        #expect(features.isDisjoint(with: [.screenMirroring, .screenRotate, .videoFairPlay, .fairPlayAuthentication,
                                          .photo, .slideshow, .mfiAuthentication, .airPlayVideoV2]))
        let flags = ReceiverCapabilities(video: video, hls: true, audio: audio).statusFlags
        #expect(flags.isDisjoint(with: [.pinRequired, .pairingRequired]))
    }

    @Test func servicesCarryTheSameFacts() {
        let advertisement = ReceiverAdvertisement(deviceID: id, port: 7100,
                                                  capabilities: ReceiverCapabilities(video: true, hls: true, audio: true))
        let services = advertisement.services(deviceName: "Test Box")
        #expect(services.map(\.type) == ["_airplay._tcp", "_raop._tcp"])
        #expect(services.map(\.name) == ["Test Box", "02FC00000001@Test Box"])
        #expect(services.allSatisfy { $0.port == 7100 })
        let airplay = services[0].txt
        let raop = services[1].txt
        #expect(airplay["deviceid"] == "02:FC:00:00:00:01")
        #expect(airplay["features"] == raop["ft"])
        #expect(airplay["flags"] == raop["sf"])
        #expect(airplay["model"] == raop["am"])
        #expect(airplay["srcvers"] == raop["vs"])
        #expect(raop["cn"] == "0")
        #expect(raop["et"] == "0,1")
        #expect(airplay["pk"] == nil, "no pairing key without a pairing identity")
        // What we publish decodes, with our own sender's decoder, to what we claim.
        let decoded = ReceiverRecord(serviceType: "_raop._tcp", instanceName: services[1].name, txt: raop)
        #expect(decoded?.deviceID == id)
        #expect(decoded?.deviceName == "Test Box")
    }

    @Test func pairingIsPublishedAndItsBitsOnlyWithAirPlay2() {
        var capabilities = ReceiverCapabilities(video: true, hls: true, audio: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        let plain = ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities)
        #expect(plain.airPlayTXT["pi"] == "5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5" && plain.raopTXT["pk"] == String(repeating: "ab", count: 32))
        #expect(plain.capabilities.features.isDisjoint(with: [.systemPairing, .homeKitPairing, .coreUtilsPairing]),
                "pyatv takes bit 48 for AirPlay 2 audio: not without airplay2 = true")
        capabilities.airPlay2Pairing = true
        capabilities.pairingRequired = true
        let paired = ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities)
        #expect(paired.capabilities.features.isSuperset(of: [.homeKitPairing, .coreUtilsPairing, .unifiedMediaControl]))
        #expect(paired.airPlayTXT["flags"] == "0x204", "pairing required (bit 9) beside the output bit")
    }

    /// Video, audio with ALAC and AAC, AirPlay 2 with a pairing identity, PTP and /fp-setup.
    static func everythingOn() -> ReceiverCapabilities {
        var capabilities = ReceiverCapabilities(video: true, hls: true, audio: true, alac: true, aac: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = true
        capabilities.bufferedAudio = true
        capabilities.fairPlaySetup = true
        return capabilities
    }

    /// With AirPlay 2 the box presents itself as the receivers iPhones and Macs are known to play
    /// to (shairport-sync 4.3/5.x): version 366.0, protocol 1.1, their feature bits, less video's
    /// own; no RSA (bit 23) and no system pairing (43), which no working AirPlay 2 receiver sets.
    /// Bit 50 (MediaRemote now playing) beside 15-17, as HomePods on OS 27 advertise both.
    @Test func theAppleProfileIsShairportSyncsSetPlusVideo() {
        var capabilities = Self.everythingOn()
        #expect(capabilities.features.bitNumbers == [0, 3, 4, 9, 11, 14, 15, 16, 17, 18, 19, 20, 22, 30, 38, 40, 41, 46, 47, 48, 50])
        // shairport-sync 5.2.1 with metadata: 0x405FCA00,0x18340 (bits 9, 11, 14-20, 22, 30, 38, 40, 41, 47, 48).
        let shairportSync = FeatureSet(txtValue: "0x405FCA00,0x18340")!
        #expect(capabilities.features.isSuperset(of: shairportSync))
        #expect(capabilities.features.subtracting(shairportSync).bitNumbers == [0, 3, 4, 46, 50], "video, HomeKit pairing as 4.3.7, MediaRemote now playing")
        #expect(capabilities.sourceVersion == "366.0" && capabilities.protocolVersion == "1.1" && capabilities.serverHeader == "AirTunes/366.0")

        let advertisement = ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities)
        #expect(advertisement.airPlayTXT.entries.map(\.key)
            == ["acl", "deviceid", "features", "flags", "gid", "gcgl", "model", "protovers", "pi", "pk", "srcvers"])
        let info = ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList
        #expect(info["featuresEx"]?.stringValue == "GcpfQEDDBQA", "the mask's 8 bytes, least significant first, base64 unpadded")
        #expect(info["psi"]?.stringValue == "5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5" && info["vv"]?.integerValue == 2)
        #expect(advertisement.raopTXT["vs"] == "366.0" && advertisement.raopTXT["pi"] == nil && advertisement.raopTXT["pk"] != nil)

        // Truthful formats: without an AAC decoder neither bit 20 nor AAC-LC in supportedFormats.
        capabilities.aac = false
        #expect(!capabilities.features.contains(.audioFormatAAC))
        #expect(capabilities.supportedAudioFormats & (1 << 22 | 1 << 23) == 0)
        // Without the /fp-setup handshake, no bit 14.
        capabilities.fairPlaySetup = false
        #expect(!capabilities.features.contains(.fairPlayAuthentication))
        // PTP without buffering (`buffered_audio = false`): 41 and 47 stay, 40 and bufferStream go,
        // so AirPlay 2 senders stream realtime on PTP (as to a Sonos).
        (capabilities.bufferedAudio, capabilities.ptpTiming) = (false, true)
        #expect(capabilities.features.contains(.ptpClock) && !capabilities.features.contains(.bufferedAudio))
        #expect(ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList["supportedFormats"]?["bufferStream"] == nil)
        // AirPlay 1 alone keeps the records of an Apple TV 3.
        capabilities.airPlay2Pairing = false
        #expect(capabilities.sourceVersion == "220.68" && capabilities.features.contains(.rsaAuthentication))
        #expect(ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities).airPlayTXT["gcgl"] == nil)
    }

    /// A legacy unicast answer (pyatv's `--scan-hosts`) holds 512 bytes; avahi drops the host's
    /// address record first when TXT crowds it out, and pyatv then lists nothing. `_raop._tcp`
    /// stays small enough to carry it (pyatv takes the address of both services from either).
    @Test func theRAOPRecordLeavesRoomForTheAddress() {
        let capabilities = Self.everythingOn()
        let advertisement = ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities)
        let wireSize = { (txt: TXTRecord) in txt.strings.reduce(0) { $0 + 1 + $1.utf8.count } }
        // Measured with avahi 0.8: a 238-byte record and a 30-character name answer in 456 bytes.
        #expect(wireSize(advertisement.raopTXT) <= 240, "\(wireSize(advertisement.raopTXT)) bytes")
        #expect(wireSize(advertisement.airPlayTXT) <= 280, "\(wireSize(advertisement.airPlayTXT)) bytes")
    }

    /// Buffered audio and PTP (bits 40, 41, with 47 for SETPEERS) are advertised only when a
    /// PTP follower runs to play them on, and `/info` then says which formats a SETUP may name.
    @Test func bufferedAudioIsAdvertisedOnlyWithPTP() throws {
        var capabilities = ReceiverCapabilities(video: true, hls: true, audio: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = true
        #expect(capabilities.features.isDisjoint(with: [.bufferedAudio, .ptpClock, .peerManagement]))
        let realtimeOnly = try #require(ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList["supportedFormats"])
        #expect(realtimeOnly["bufferStream"] == nil && realtimeOnly["audioStream"] != nil)
        capabilities.bufferedAudio = true
        #expect(capabilities.features.isSuperset(of: [.bufferedAudio, .ptpClock, .peerManagement]))
        let formats = try #require(ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList["supportedFormats"])
        // PCM, ALAC at 44.1/48 kHz and 16/24 bits: bits 11, 13, 15, 17-21; AAC-LC (22, 23) only with its decoder.
        #expect(formats["bufferStream"]?.integerValue == 0x3E_A800)
        capabilities.aac = true
        let withAAC = try #require(ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList["supportedFormats"])
        #expect(withAAC["bufferStream"]?.integerValue == 0xFE_A800)
        capabilities.audio = false
        #expect(capabilities.features.isDisjoint(with: [.bufferedAudio, .ptpClock]), "no audio, no buffered audio")
        capabilities.audio = true
        capabilities.airPlay2Pairing = false
        #expect(capabilities.features.isDisjoint(with: [.bufferedAudio, .ptpClock]), "AirPlay 1 only")
    }

    @Test func alacIsAnnouncedOnlyWithADecoder() {
        let without = ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: ReceiverCapabilities(video: false, hls: false, audio: true))
        let with = ReceiverAdvertisement(deviceID: id, port: 7000,
                                         capabilities: ReceiverCapabilities(video: false, hls: false, audio: true, alac: true))
        #expect(without.raopTXT["cn"] == "0")
        #expect(with.raopTXT["cn"] == "0,1")
        let both = ReceiverAdvertisement(deviceID: id, port: 7000,
                                         capabilities: ReceiverCapabilities(video: false, hls: false, audio: true, alac: true, aac: true))
        #expect(both.raopTXT["cn"] == "0,1,2,3")
    }

    @Test func audioOffWithdrawsRAOP() {
        let advertisement = ReceiverAdvertisement(deviceID: id, port: 7000,
                                                  capabilities: ReceiverCapabilities(video: true, hls: true, audio: false))
        #expect(advertisement.services(deviceName: "Box").map(\.type) == ["_airplay._tcp"])
    }

    @Test func serverInfoMatchesTheAdvertisement() {
        let capabilities = ReceiverCapabilities(video: true, hls: true, audio: true)
        let info = ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList
        #expect(info["deviceid"]?.stringValue == "02:FC:00:00:00:01")
        #expect(info["features"]?.integerValue == Int64(capabilities.features.rawValue))
        #expect(info["model"]?.stringValue == ReceiverIdentity.model)
        #expect(info["protovers"]?.stringValue == "1.0")
        #expect(info["srcvers"]?.stringValue == "220.68")
        #expect(info["name"]?.stringValue == "Box")
    }
}

/// The control router: /server-info and /info in the format the client speaks, clear errors otherwise.
@Suite struct ControlRouterTests {
    let router = ControlRouter {
        ServerInfo(deviceID: DeviceID("02:FC:00:00:00:01")!, name: "Box",
                   capabilities: ReceiverCapabilities(video: true, hls: true, audio: true))
    }

    private func get(_ path: String, headers: MessageHeaders = [:], body: [UInt8] = [],
                     version: ProtocolVersion = .http11, method: String = "GET") -> AirPlayResponse {
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        return router.respond(to: AirPlayRequest(method: method, target: path, version: version, headers: headers, body: buffer))
    }

    @Test func serverInfoIsXMLByDefault() throws {
        let response = get("/server-info")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/x-apple-plist+xml")
        #expect(response.headers["Server"] == "AirTunes/220.68")
        let plist = try PropertyList(decoding: Array(response.body.readableBytesView))
        #expect(plist["name"]?.stringValue == "Box")
    }

    @Test func binaryWhenAcceptAsksForIt() {
        let response = get("/info", headers: ["Accept": "application/x-apple-binary-plist"])
        #expect(response.headers["Content-Type"] == "application/x-apple-binary-plist")
        #expect(response.body.readableBytesView.starts(with: Array("bplist00".utf8)))
    }

    @Test func binaryWhenTheClientSendsBinary() {
        let body = PropertyList.dictionary(["qualifier": .array([.string("txtAirPlay")])]).encoded(as: .binary)
        #expect(get("/info", body: body).headers["Content-Type"] == "application/x-apple-binary-plist")
        #expect(get("/info", headers: ["Content-Type": "application/x-apple-binary-plist"]).headers["Content-Type"]
            == "application/x-apple-binary-plist")
    }

    @Test func unknownPathIs404WithAReason() {
        let response = get("/nope")
        #expect(response.status == 404)
        #expect(String(buffer: response.body).contains("/nope"))
    }

    @Test func wrongMethodIs405WithAllow() {
        let response = get("/server-info", method: "DELETE")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET")
    }

    @Test func rtspRepliesEchoCSeqAndProtocol() {
        let response = get("/info", headers: ["CSeq": "9"], version: .rtsp10)
        #expect(response.version == .rtsp10)
        #expect(response.headers["CSeq"] == "9")
    }

    @Test func rejectionsCarryTheirReasonAndCloseWhenNeeded() {
        let response = router.respond(to: RequestRejection(status: 411, reason: "no chunks", version: .rtsp10,
                                                           cseq: "2", closesConnection: true))
        #expect(response.status == 411)
        #expect(response.version == .rtsp10)
        #expect(response.headers["CSeq"] == "2")
        #expect(response.headers["Connection"] == "close")
        #expect(String(buffer: response.body) == "no chunks\n")
    }
}
