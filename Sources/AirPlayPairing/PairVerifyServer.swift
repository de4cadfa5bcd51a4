import AirPlayCrypto

/// The receiver's side of one connection's pair-verify, as a state machine: a controller paired
/// earlier proves it holds its key, over a fresh X25519 exchange.
///
/// M1 (its ephemeral key) → M2 (ours, and our signed identity, sealed); M3 (its signed identity,
/// sealed) → M4. After M4 the connection is encrypted with keys from the X25519 secret.
public struct PairVerifyServer: Sendable {
    /// What the connection does after sending the reply.
    public enum Outcome: Equatable, Sendable {
        /// Nothing more (M2).
        case none
        /// The controller is verified: encrypt the connection from the next byte.
        case verified(controller: String, sharedSecret: [UInt8])
        /// The request failed; `counts` when it was a bad signature or unknown controller.
        case failed(PairingFailure, counts: Bool)
    }

    /// One step: the reply body and what follows it.
    public typealias Step = PairingStep<Outcome>

    enum State: Sendable {
        case idle
        case waitingForIdentity(sharedSecret: [UInt8], ours: [UInt8], theirs: [UInt8], since: Double)
    }

    private var state: State = .idle
    private let identity: PairingIdentity
    private let timeout: Double
    private let random: @Sendable (Int) -> [UInt8]

    /// A machine answering as `identity`; `random` makes the ephemeral X25519 key (fixed in tests).
    public init(identity: PairingIdentity, timeout: Double = 30, random: @escaping @Sendable (Int) -> [UInt8] = SecureRandom.bytes) {
        self.identity = identity
        self.timeout = timeout
        self.random = random
    }

    /// Answers one message; `controllerKey` finds a stored controller's public key by identifier.
    public mutating func handle(_ message: TLV8, now: Double, controllerKey: (String) -> [UInt8]?) -> Step {
        let received = message.byte(.state) ?? 0
        do {
            switch (received, state) {
            case (1, _):
                return try start(message, now: now)
            case (3, .waitingForIdentity(let secret, let ours, let theirs, let since)) where now - since < timeout:
                state = .idle
                return try finish(message, sharedSecret: secret, ours: ours, theirs: theirs, controllerKey: controllerKey)
            default:
                state = .idle
                let reason = received == 0 ? "no state item" : "M\(received) out of order or after the verify expired"
                let failure = PairingFailure(state: received &+ 1, code: .unknown, reason: reason)
                return Step(reply: failure.reply, outcome: .failed(failure, counts: false))
            }
        } catch let failure as PairingFailure {
            state = .idle
            return Step(reply: failure.reply, outcome: .failed(failure, counts: failure.code == .authentication))
        } catch {
            state = .idle
            let failure = PairingFailure(state: received &+ 1, code: .unknown, reason: "\(error)")
            return Step(reply: failure.reply, outcome: .failed(failure, counts: false))
        }
    }

    /// M1 → M2.
    private mutating func start(_ message: TLV8, now: Double) throws -> Step {
        guard let theirs = message[.publicKey], theirs.count == 32 else {
            throw PairingFailure(state: 2, code: .unknown, reason: "M1 without a 32-byte X25519 key")
        }
        let ephemeral = try X25519KeyAgreement(privateKey: random(32))
        let secret: [UInt8]
        do {
            secret = try ephemeral.sharedSecret(with: theirs)
        } catch {
            throw PairingFailure(state: 2, code: .authentication, reason: "M1's key is unusable: \(error)")
        }
        let ourID = Array(identity.identifier.utf8)
        let signature = try identity.sign(ephemeral.publicKey + ourID + theirs)
        let cipher = try ChaChaPoly(key: PairingLabel.key(secret, PairingLabel.verifyEncrypt))
        let sealed = try cipher.seal(TLV8.signedIdentity(identifier: ourID, signature: signature).bytes, nonce: ChaChaPoly.nonce(label: "PV-Msg02"))
        state = .waitingForIdentity(sharedSecret: secret, ours: ephemeral.publicKey, theirs: theirs, since: now)
        return Step(reply: TLV8([(.state, [2]), (.publicKey, ephemeral.publicKey), (.encryptedData, sealed)]), outcome: .none)
    }

    /// M3 → M4.
    private func finish(_ message: TLV8, sharedSecret: [UInt8], ours: [UInt8], theirs: [UInt8],
                        controllerKey: (String) -> [UInt8]?) throws -> Step {
        guard let sealed = message[.encryptedData] else { throw PairingFailure(state: 4, code: .unknown, reason: "M3 without encrypted data") }
        let cipher = try ChaChaPoly(key: PairingLabel.key(sharedSecret, PairingLabel.verifyEncrypt))
        let inner: TLV8
        do {
            inner = try TLV8(bytes: cipher.open(sealed, nonce: ChaChaPoly.nonce(label: "PV-Msg03")))
        } catch {
            throw PairingFailure(state: 4, code: .authentication, reason: "M3 does not decrypt: \(error)")
        }
        guard let identifier = inner[.identifier], let name = String(validating: identifier, as: UTF8.self),
              let signature = inner[.signature] else {
            throw PairingFailure(state: 4, code: .authentication, reason: "M3 lacks an identifier or signature")
        }
        guard let key = controllerKey(name) else {
            throw PairingFailure(state: 4, code: .authentication, reason: "controller \(name.prefix(64)) is not paired")
        }
        guard Ed25519.isValid(signature: signature, of: theirs + identifier + ours, publicKey: key) else {
            throw PairingFailure(state: 4, code: .authentication, reason: "M3's signature does not verify for \(name.prefix(64))")
        }
        return Step(reply: TLV8([(.state, [4])]), outcome: .verified(controller: name, sharedSecret: sharedSecret))
    }
}
