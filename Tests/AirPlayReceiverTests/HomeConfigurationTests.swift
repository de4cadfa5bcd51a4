import AirPlayPairing
import AirPlayPlist
@testable import AirPlayReceiver
import AirPlayTesting
import AirPlayWire
import Foundation
import Logging
import NIOCore
import Testing

/// `POST /configure`, which the Home app sends when it adds the box as a speaker: answered with
/// who the box is (identifier, public key, name, access), and nothing the sender asks is applied.
@Suite struct HomeConfigurationTests {
    let pairing: ReceiverPairing

    init() throws {
        let directory = NSTemporaryDirectory() + "home-configure-\(UUID().uuidString.prefix(8))"
        pairing = ReceiverPairing(store: try PairingStore(directory: directory), pin: .random, access: .anyone,
                                  logger: Logger(label: "test"), clock: ManualClock())
    }

    func router(airPlay2: Bool) -> ControlRouter {
        var capabilities = ReceiverCapabilities(video: false, hls: false, audio: true, alac: true)
        let identity = pairing.store.identity
        capabilities.pairingIdentity = (identity.identifier, TextFormatting.hex(identity.publicKey))
        capabilities.airPlay2Pairing = airPlay2
        let offered = capabilities
        var router = ControlRouter { ServerInfo(deviceID: DeviceID("02:FC:00:00:00:01")!, name: "Kitchen", capabilities: offered) }
        router.pairing = pairing
        return router
    }

    func configure(_ body: [UInt8], airPlay2: Bool = true) -> AirPlayResponse {
        let connection = ConnectionContext(id: ObjectIdentifier(pairing), local: nil, remote: nil, close: {})
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        return router(airPlay2: airPlay2).reply(to: AirPlayRequest(method: "POST", target: "/configure", version: .rtsp10,
                                                                    headers: ["CSeq": "9"], body: buffer), connection: connection).response
    }

    /// The Home app asks for a new name, Home members only, and a password: the answer is the box
    /// as configured, and nothing changed.
    @Test func theAnswerIsTheBoxAsConfigured() throws {
        let asked = PropertyList.dictionary(["ConfigurationDictionary": .dictionary([
            "Device_Name": .string("Renamed"), "Access_Control_Level": .integer(1), "Enable_HK_Access_Control": .bool(true),
            "Password": .string("secret"),
        ])])
        let response = configure(asked.encoded(as: .binary))
        #expect(response.status == 200 && response.headers["Content-Type"] == "application/x-apple-binary-plist")
        let reply = try PropertyList(decoding: Array(response.body.readableBytesView))
        #expect(reply["Identifier"]?.stringValue == pairing.store.identity.identifier)
        #expect(reply["PublicKey"] == .data(pairing.store.identity.publicKey))
        #expect(reply["Device_Name"]?.stringValue == "Kitchen", "the name stays the owner's")
        #expect(reply["Access_Control_Level"]?.integerValue == 0 && reply["Enable_HK_Access_Control"]?.boolValue == false)
        #expect(try HomeConfiguration.describeRequest(asked.encoded(as: .binary)).contains("Password=(set)"))
        #expect(try !HomeConfiguration.describeRequest(asked.encoded(as: .binary)).contains("secret"))
    }

    @Test func anEmptyBodyIsAnsweredAndABrokenOneRefused() {
        #expect(configure([]).status == 200)
        let broken = configure(Array("not a plist".utf8))
        #expect(broken.status == 400 && String(buffer: broken.body).contains("property list"))
    }

    /// Only the Apple profile serves it: an AirPlay 1 receiver has no Home setup.
    @Test func withoutAirPlay2ThereIsNone() {
        #expect(configure([], airPlay2: false).status == 404)
    }
}
