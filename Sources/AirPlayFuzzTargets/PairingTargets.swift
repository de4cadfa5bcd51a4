import AirPlayCrypto
import AirPlayPairing

/// HAP pairing as both roles meet it from a peer: TLV8, the receiver's pair-setup and
/// pair-verify servers, the sender's pairing client reading a receiver's answers, and the
/// encrypted channel's frame layer.
enum PairingTargets {
    static let all: [FuzzTarget] = [tlv8, pairSetup, pairVerify, pairingClient, encryptedFrames]

    /// A fixed identity and fixed "randomness", so that a crash replays.
    static let identity: PairingIdentity = {
        let seed = [UInt8](repeating: 0x5A, count: 32)
        guard let key = try? Ed25519SigningKey(seed: seed) else { preconditionFailure("Ed25519 from a fixed seed") }
        return PairingIdentity(identifier: "FUZZ-ACCESSORY", key: key)
    }()
    static let fixedRandom: @Sendable (Int) -> [UInt8] = { [UInt8](repeating: 0x33, count: $0) }

    /// TLV8 as both pairing roles read it. What reads also writes back to the same items.
    static let tlv8 = FuzzTarget("tlv8", "TLV8 pairing messages") { bytes in
        guard let message = try? TLV8(bytes: bytes) else { return }
        precondition((try? TLV8(bytes: message.bytes)) == message, "TLV8 does not read back as written")
        for kind in TLV8.Kind.allCases { _ = (message.byte(kind), message.integer(kind)) }
    }

    /// The receiver's pair-setup: optionally a well-formed M1 first (so the fuzzed message meets
    /// the state after it), then up to three messages from the input.
    static let pairSetup = FuzzTarget("pair-setup", "pair-setup messages to the receiver (M1, M3, M5)") { bytes in
        var input = FuzzInput(bytes)
        let opening = input.byte()
        var server = PairSetupServer(identity: identity, random: fixedRandom)
        var now = 0.0
        if opening & 1 != 0 {
            let start = PairingClient.setupStart(transient: opening & 2 != 0)
            _ = server.handle(start, pin: "3939", now: now)
        }
        for piece in input.pieces(3) {
            now += 1
            guard let message = try? TLV8(bytes: piece) else { continue }
            _ = server.handle(message, pin: opening & 4 != 0 ? nil : "3939", now: now)
        }
    }

    /// The receiver's pair-verify, M1 then M3, with one stored controller.
    static let pairVerify = FuzzTarget("pair-verify", "pair-verify messages to the receiver (M1, M3)") { bytes in
        var input = FuzzInput(bytes)
        var server = PairVerifyServer(identity: identity, random: fixedRandom)
        for (index, piece) in input.pieces(2).enumerated() {
            guard let message = try? TLV8(bytes: piece) else { continue }
            _ = server.handle(message, now: Double(index)) { $0 == "FUZZ-CONTROLLER" ? identity.publicKey : nil }
        }
    }

    /// The sender's side: a receiver's M2 (salt and B: SRP must refuse a B that is 0 mod N), M4
    /// and M6 of pair-setup, and M2 of pair-verify.
    static let pairingClient = FuzzTarget("pairing-client", "a receiver's pairing answers as the sender reads them") { bytes in
        var input = FuzzInput(bytes)
        let pieces = input.pieces(4).map { try? TLV8(bytes: $0) }
        var setup = PairingClient.Setup(identity: identity, pin: "3939")
        if let m2 = pieces[0] {
            _ = try? setup.proof(answering: m2, privateKey: fixedRandom(32))
        }
        if let m4 = pieces[1] {
            _ = try? setup.sessionKey(answering: m4)
            _ = try? setup.exchange(answering: m4)
            if let m6 = pieces[2] { _ = try? setup.receiver(answering: m6, m4: m4) }
        }
        let receiver = PairingClient.ReceiverCredentials(identifier: "FUZZ-ACCESSORY", publicKey: identity.publicKey)
        if let m2 = pieces[3], var verify = try? PairingClient.Verify(identity: identity, receiver: receiver, privateKey: fixedRandom(32)) {
            _ = try? verify.proof(answering: m2)
        }
    }

    /// The encrypted control channel after pairing: length-prefixed ChaCha20-Poly1305 frames
    /// arriving in pieces; what waits for the rest of a frame never exceeds one frame.
    static let encryptedFrames = FuzzTarget("encrypted-frames", "HAP-encrypted control channel frames") { bytes in
        var input = FuzzInput(bytes)
        let key = [UInt8](repeating: 0x11, count: 32)
        guard var opener = try? EncryptedFrames.Opener(key: key) else { preconditionFailure("ChaCha20-Poly1305 key") }
        for piece in input.pieces(3) {
            guard (try? opener.open(piece)) != nil else { return }
            precondition(opener.pendingCount < EncryptedFrames.overhead + 0x1_0000, "the opener holds more than a frame")
        }
    }
}
