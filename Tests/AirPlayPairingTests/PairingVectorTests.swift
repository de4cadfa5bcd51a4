import AirPlayCrypto
import AirPlayPairing
import AirPlayTesting
import Testing

/// The receiver's pair-setup and pair-verify machines answer pyatv's messages from
/// Protocol/vectors/pairing.json byte for byte (the vectors' secrets fed in as "random").
@Suite struct PairingVectorTests {
    let vectors: VectorDocument
    let accessory: PairingIdentity
    init() throws {
        vectors = try VectorDocument("pairing.json")
        accessory = PairingIdentity(identifier: try vectors.string("inputs", "accessory_pairing_id_ascii"),
                                    key: try Ed25519SigningKey(seed: try vectors.bytes("inputs", "accessory_ed25519_seed")))
    }

    /// Hands out fixed byte strings in order, as the machines ask for randomness.
    final class Script: @unchecked Sendable {
        private var queue: [[UInt8]]
        init(_ queue: [[UInt8]]) { self.queue = queue }
        func next(_ count: Int) -> [UInt8] {
            let value = queue.removeFirst()
            precondition(value.count == count, "script gave \(value.count) bytes for \(count)")
            return value
        }
    }

    private func tlv(_ section: String, _ key: String) throws -> TLV8 { try TLV8(bytes: try vectors.bytes(section, key)) }

    @Test func aPINPairSetupAnswersM2M4M6AndPairsTheController() throws {
        let s = "pair_setup_pin_1234"
        let script = Script([try vectors.bytes("inputs", "srp_salt"), try vectors.bytes("inputs", "srp_b")])
        var machine = PairSetupServer(identity: accessory, random: script.next)
        let m2 = machine.handle(try tlv(s, "M1_tlv"), pin: "1234", now: 0)
        #expect(m2.reply.bytes == (try vectors.bytes(s, "M2_tlv")) && m2.outcome == .none)
        let m4 = machine.handle(try tlv(s, "M3_tlv"), pin: "1234", now: 1)
        #expect(m4.reply.bytes == (try vectors.bytes(s, "M4_tlv")) && m4.outcome == .none)
        let m6 = machine.handle(try tlv(s, "M5_tlv"), pin: "1234", now: 2)
        #expect(m6.reply.bytes == (try vectors.bytes(s, "M6_tlv")))
        #expect(m6.outcome == .paired(ControllerPairing(identifier: try vectors.string("inputs", "controller_pairing_id_ascii"),
                                                        publicKey: try vectors.bytes("inputs", "controller_ed25519_public"), admin: true)))
    }

    @Test func aWrongPINGetsAnAuthenticationErrorThatCounts() throws {
        let s = "pair_setup_pin_1234"
        let script = Script([try vectors.bytes("inputs", "srp_salt"), try vectors.bytes("inputs", "srp_b")])
        var machine = PairSetupServer(identity: accessory, random: script.next)
        _ = machine.handle(try tlv(s, "M1_tlv"), pin: "9999", now: 0)
        let m4 = machine.handle(try tlv(s, "M3_tlv"), pin: "9999", now: 1)
        #expect(m4.reply.bytes == (try vectors.bytes(s, "M4_wrong_pin_tlv")))
        guard case .failed(let failure, let counts) = m4.outcome else { Issue.record("\(m4.outcome)"); return }
        #expect(failure.code == .authentication && counts)
        // The setup is over: M5 now is out of order.
        let late = machine.handle(try tlv(s, "M5_tlv"), pin: "9999", now: 2)
        #expect(late.reply.byte(.error) == TLV8.ErrorCode.unknown.rawValue)
    }

    @Test func aSetupThatStallsExpires() throws {
        let s = "pair_setup_pin_1234"
        let script = Script([try vectors.bytes("inputs", "srp_salt"), try vectors.bytes("inputs", "srp_b")])
        var machine = PairSetupServer(identity: accessory, timeout: 60, random: script.next)
        _ = machine.handle(try tlv(s, "M1_tlv"), pin: "1234", now: 0)
        #expect(machine.isInProgress(now: 59))
        #expect(!machine.isInProgress(now: 61))
        let m4 = machine.handle(try tlv(s, "M3_tlv"), pin: "1234", now: 61)
        #expect(m4.reply.byte(.error) == TLV8.ErrorCode.unknown.rawValue)
    }

    @Test func aTransientSetupEndsAtM4WithTheSRPKeyAsSecret() throws {
        let s = "transient_pin_3939"
        let script = Script([try vectors.bytes("inputs", "srp_salt_transient"), try vectors.bytes("inputs", "srp_b_transient")])
        var machine = PairSetupServer(identity: accessory, random: script.next)
        // No PIN on offer: transient pairing needs none.
        let m2 = machine.handle(try tlv(s, "M1_tlv"), pin: nil, now: 0)
        #expect(m2.reply.bytes == (try vectors.bytes(s, "M2_tlv")))
        let m4 = machine.handle(try tlv(s, "M3_tlv"), pin: nil, now: 1)
        #expect(m4.reply.bytes == (try vectors.bytes(s, "M4_tlv")))
        let secret = try vectors.bytes(s, "shared_secret_is_K_64_bytes")
        #expect(m4.outcome == .transient(sharedSecret: secret))
        let keys = try ControlChannelKeys(sharedSecret: secret)
        #expect(keys.senderToReceiver == (try vectors.bytes(s, "Control-Write-Encryption-Key (sender->receiver)")))
        #expect(keys.receiverToSender == (try vectors.bytes(s, "Control-Read-Encryption-Key (receiver->sender)")))
    }

    @Test func pinSetupIsRefusedWhenNoPINIsOffered() throws {
        var machine = PairSetupServer(identity: accessory)
        let m2 = machine.handle(try tlv("pair_setup_pin_1234", "M1_tlv"), pin: nil, now: 0)
        #expect(m2.reply.byte(.state) == 2 && m2.reply.byte(.error) == TLV8.ErrorCode.unavailable.rawValue)
    }

    @Test func pairVerifyAnswersM2AndM4AndYieldsTheControlKeys() throws {
        let s = "pair_verify"
        let controllerID = try vectors.string("inputs", "controller_pairing_id_ascii")
        let controllerKey = try vectors.bytes("inputs", "controller_ed25519_public")
        let script = Script([try vectors.bytes("inputs", "accessory_x25519_private")])
        var machine = PairVerifyServer(identity: accessory, random: script.next)
        let m2 = machine.handle(try tlv(s, "M1_tlv"), now: 0) { _ in nil }
        #expect(m2.reply.bytes == (try vectors.bytes(s, "M2_tlv")))
        let m4 = machine.handle(try tlv(s, "M3_tlv"), now: 1) { $0 == controllerID ? controllerKey : nil }
        #expect(m4.reply.bytes == (try vectors.bytes(s, "M4_tlv")))
        let secret = try vectors.bytes(s, "shared_secret_x25519")
        #expect(m4.outcome == .verified(controller: controllerID, sharedSecret: secret))
        let keys = try ControlChannelKeys(sharedSecret: secret)
        #expect(keys.senderToReceiver == (try vectors.bytes(s, "Control-Write-Encryption-Key (sender->receiver)")))
        #expect(keys.receiverToSender == (try vectors.bytes(s, "Control-Read-Encryption-Key (receiver->sender)")))
    }

    @Test func pairVerifyFromAnUnknownControllerFails() throws {
        let s = "pair_verify"
        let script = Script([try vectors.bytes("inputs", "accessory_x25519_private")])
        var machine = PairVerifyServer(identity: accessory, random: script.next)
        _ = machine.handle(try tlv(s, "M1_tlv"), now: 0) { _ in nil }
        let m4 = machine.handle(try tlv(s, "M3_tlv"), now: 1) { _ in nil }
        #expect(m4.reply.bytes == (try vectors.bytes(s, "M4_auth_error_tlv")))
    }

    @Test func eventChannelKeysComeFromTheSameSecretWithEventsSalt() throws {
        let keys = try EventChannelKeys(sharedSecret: try vectors.bytes("pair_verify", "shared_secret_x25519"))
        #expect(keys.receiverToSender == (try vectors.bytes("pair_verify", "Events-Write-Encryption-Key (receiver->sender on event channel)")))
        #expect(keys.senderToReceiver == (try vectors.bytes("pair_verify", "Events-Read-Encryption-Key (sender->receiver on event channel)")))
    }

    @Test func framesMatchPyatvsAndSplitAt1024Bytes() throws {
        let keys = try ControlChannelKeys(sharedSecret: try vectors.bytes("pair_verify", "shared_secret_x25519"))
        var senderSide = try EncryptedFrames.Sealer(key: keys.senderToReceiver)
        let request = Array(try vectors.string("control_frames", "request_plaintext_ascii").utf8)
        let frame = try senderSide.seal(request)
        #expect(frame == (try vectors.bytes("control_frames", "request_frame_counter0")))
        #expect(try senderSide.seal(request) == (try vectors.bytes("control_frames", "request_frame_counter1_same_plaintext")))

        var receiverReads = try EncryptedFrames.Opener(key: keys.senderToReceiver)
        // A frame may arrive in pieces.
        #expect(try receiverReads.open(Array(frame.prefix(7))) == [])
        #expect(try receiverReads.open(Array(frame.dropFirst(7))) == request)

        var receiverWrites = try EncryptedFrames.Sealer(key: keys.receiverToSender)
        let response = Array(try vectors.string("control_frames", "response_plaintext_ascii").utf8)
        #expect(try receiverWrites.seal(response) == (try vectors.bytes("control_frames", "response_frame_counter0")))
        let big = (0..<5).flatMap { _ in (0..<256).map { UInt8($0) } }
        #expect(try receiverWrites.seal(big) == (try vectors.bytes("control_frames", "big_response_counter1_and_2_two_frames")))
    }

    @Test func aTamperedFrameIsRefused() throws {
        var sealer = try EncryptedFrames.Sealer(key: [UInt8](repeating: 7, count: 32))
        var opener = try EncryptedFrames.Opener(key: [UInt8](repeating: 7, count: 32))
        var frame = try sealer.seal(Array("hello".utf8))
        frame[3] ^= 0x40
        #expect(throws: CryptoError.self) { try opener.open(frame) }
    }
}
