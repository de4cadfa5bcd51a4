@testable import AirPlaySender
import AirPlayWire
import NIOCore
import Testing

/// The sender's AirPlay 1 encryption choice, step by step: what the receiver's TXT record says
/// (`et`), whether its `Apple-Response` verified, and whether we can encrypt at all.
@Suite struct SenderSetupMachineTests {
    static let challenge: [UInt8] = Array(0..<16)

    static func machine(et: String, encrypted: Bool) -> SenderSetupMachine {
        let traits = RAOPReceiverTraits(txt: ["cn": "0,1", "et": et], deviceID: nil)
        let announcement = SenderSetupMachine.Announcement(codec: .alac, clear: "v=0 clear", encrypted: encrypted ? "v=0 rsa" : nil)
        return SenderSetupMachine(route: .raop(traits: traits, challenge: challenge, announcements: [announcement]),
                                  receiverName: "box", sequence: 1, rtpTime: 0, volumeDecibels: 0)
    }

    static func ok(_ headers: MessageHeaders = [:]) -> AirPlayResponse { AirPlayResponse(status: 200, headers: headers) }

    static func announcedBody(_ actions: [SenderSetupMachine.Action]) -> String? {
        guard case .send(let request)? = actions.last, request.method == "ANNOUNCE" else { return nil }
        return String(decoding: request.body, as: UTF8.self)
    }

    @Test func optionsCarriesTheChallengeWithoutBase64Padding() {
        var machine = Self.machine(et: "0,1", encrypted: true)
        guard case .send(let options)? = machine.start().first else { Issue.record("no OPTIONS"); return }
        #expect(options.method == "OPTIONS" && options.headers["Apple-Challenge"] == "AAECAwQFBgcICQoLDA0ODw")
    }

    @Test func aVerifiedReceiverThatListsRSAGetsTheEncryptedAnnouncement() {
        var machine = Self.machine(et: "0,1", encrypted: true)
        _ = machine.start()
        #expect(machine.replied(Self.ok(["Apple-Response": "sig"])) == [.verifyAppleResponse("sig", challenge: Self.challenge)])
        #expect(Self.announcedBody(machine.identityChecked(true)) == "v=0 rsa")
        #expect(machine.outcome.encrypted && machine.outcome.identityVerified == true)
    }

    @Test func anUnverifiedAdvertisedReceiverIsStillEncryptedButTheUserIsWarned() {
        var machine = Self.machine(et: "0,1", encrypted: true)
        _ = machine.start()
        _ = machine.replied(Self.ok(["Apple-Response": "sig"]))
        let actions = machine.identityChecked(false)
        #expect(actions.first == .warn("box: its Apple-Response does not verify with the AirPort key (not an AirPlay 1 receiver as it claims?)"))
        #expect(Self.announcedBody(actions) == "v=0 rsa")
    }

    @Test func withoutAKeyToWrapTheStreamGoesInClearWhereAllowed() {
        var machine = Self.machine(et: "0,1", encrypted: false)
        _ = machine.start()
        #expect(Self.announcedBody(machine.replied(Self.ok())) == "v=0 clear")
        #expect(!machine.outcome.encrypted)
    }

    @Test func aReceiverTakingOnlyEncryptionWeCannotSpeakIsRefusedBeforeANNOUNCE() {
        var machine = Self.machine(et: "3,5", encrypted: true)
        _ = machine.start()
        #expect(machine.replied(Self.ok()).last
            == .failed(SenderError(.refused(status: 0), "box takes only encryption this sender does not speak (et=[3, 5])")))
    }

    @Test func aReplyOutOfTurnEndsTheSetupRatherThanGuessing() {
        var machine = Self.machine(et: "0", encrypted: false)
        _ = machine.start()
        #expect(machine.eventChannelConnected() == [.failed(SenderError(.badInput, "setup of box: an event channel was not expected now"))])
    }
}
