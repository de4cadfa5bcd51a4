import AirPlayPlist
@testable import AirPlayReceiver
import AirPlayTesting
import AirPlayWire
import NIOCore
import Testing

/// `POST /fp-setup`, the fixed FairPlay handshake iOS makes after pairing and before it plays:
/// message 1 (16 bytes) picks one of four fixed replies by its byte 14, message 2 (164 bytes)
/// gets a fixed header and its own last 20 bytes back (`Protocol/vectors/fp-setup.json`).
@Suite struct FairPlaySetupTests {
    struct Vectors: Decodable {
        struct Message2: Decodable { var replyHeader: String }
        struct Example: Decodable { var what: String; var request: String; var reply: String }
        var replies1: [String]
        var message2: Message2
        var examples: [Example]
    }

    let vectors: Vectors

    init() throws {
        vectors = try ProtocolVectors.load(Vectors.self, from: "fp-setup.json")
    }

    /// The tables in the code are the vector file's (tools/lib/make_fp_setup_tables.py).
    @Test func theTablesAreTheVectorFiles() {
        #expect(FairPlaySetup.firstReplies.map(TextFormatting.hex) == vectors.replies1)
        #expect(FairPlaySetup.firstReplies.allSatisfy { $0.count == 142 })
        #expect(TextFormatting.hex(FairPlaySetup.secondReplyHeader) == vectors.message2.replyHeader)
    }

    @Test func theExamplesAreAnsweredByteForByte() throws {
        for example in vectors.examples {
            let request = try #require(TextFormatting.bytes(hex: example.request))
            #expect(FairPlaySetup.answer(request) == .reply(try #require(TextFormatting.bytes(hex: example.reply))), "\(example.what)")
        }
    }

    /// Each mode gets its own reply, whose byte 13 is the mode again.
    @Test(arguments: 0..<4) func everyModeHasItsReply(mode: Int) throws {
        let request: [UInt8] = Array("FPLY".utf8) + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, UInt8(mode), 0xBB]
        guard case .reply(let reply) = FairPlaySetup.answer(request) else { Issue.record("refused"); return }
        #expect(reply.count == 142 && reply[13] == UInt8(mode) && reply[6] == 2)
    }

    static let header: [UInt8] = Array("FPLY".utf8)
    static let malformed: [(body: [UInt8], reason: String)] = [
        ([], "starts with FPLY"),
        (Array("FPLX".utf8) + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, 0, 0], "starts with FPLY"),
        (header + [3, 2, 1, 0, 0, 0, 0, 4, 2, 0, 0, 0], "type 2"),
        (header + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, 4, 0], "mode 4"),
        (header + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, 0], "16 bytes, not 15"),
        (header + [3, 1, 3, 0, 0, 0, 0, 0x98] + [UInt8](repeating: 7, count: 100), "164 bytes, not 112"),
        (header + [3, 1, 5, 0, 0, 0, 0, 4, 2, 0, 0, 0], "sequence 5"),
    ]

    /// Every malformed body gets 400 and the reason (shairport-sync answers 200 to all of them).
    @Test(arguments: malformed)
    func malformedMessagesAreRefusedWithTheReason(body: [UInt8], reason: String) {
        guard case .refused(let text) = FairPlaySetup.answer(body) else { Issue.record("answered \(body)"); return }
        #expect(text.contains(reason), "\(text)")
        #expect(FairPlaySetup.response(to: body).status == 400)
    }

    /// Served (with feature bit 14) while the handshake is on, 404 when `fp_setup = false`.
    @Test(arguments: [true, false]) func theRouterServesItOnlyWhenOn(on: Bool) throws {
        var capabilities = ReceiverCapabilities(video: false, hls: false, audio: true, alac: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = true
        capabilities.fairPlaySetup = on
        let offered = capabilities
        let router = ControlRouter { ServerInfo(deviceID: DeviceID("02:FC:00:00:00:01")!, name: "Box", capabilities: offered) }
        var body = ByteBuffer()
        body.writeBytes(try #require(TextFormatting.bytes(hex: vectors.examples[0].request)))
        let response = router.respond(to: AirPlayRequest(method: "POST", target: "/fp-setup", version: .rtsp10,
                                                         headers: ["CSeq": "3"], body: body))
        #expect(response.status == (on ? 200 : 404))
        #expect(capabilities.features.contains(.fairPlayAuthentication) == on)
        if on {
            #expect(response.headers["Content-Type"] == "application/octet-stream" && response.headers["CSeq"] == "3")
            #expect(TextFormatting.hex(Array(response.body.readableBytesView)) == vectors.examples[0].reply)
            #expect(response.headers["Server"] == "AirTunes/366.0")
        }
    }
}
