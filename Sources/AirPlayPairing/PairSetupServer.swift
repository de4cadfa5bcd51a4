import AirPlayCrypto

/// The receiver's side of one connection's pair-setup, as a state machine: TLV8 messages and
/// the time in, a reply and an outcome out. It holds no sockets, files or clocks.
///
/// - PIN setup: M1 → M2 (salt, B), M3 (A, proof) → M4 (proof), M5 (the controller's identity,
///   sealed) → M6 (ours, sealed); the controller is then paired.
/// - Transient setup (M1 flags 0x10, PIN 3939): M1–M4 only; the SRP key then keys the
///   encrypted control channel of this connection, and nothing is stored.
public struct PairSetupServer: Sendable {
    /// What the connection does after sending the reply.
    public enum Outcome: Equatable, Sendable {
        /// Nothing more (M2, or M4 of a PIN setup).
        case none
        /// A transient setup succeeded: encrypt the connection from the next byte with keys
        /// from this secret (the 64-byte SRP key).
        case transient(sharedSecret: [UInt8])
        /// A PIN setup succeeded: store this controller.
        case paired(ControllerPairing)
        /// The request failed; `counts` when it was a wrong PIN or signature (for back-off).
        case failed(PairingFailure, counts: Bool)
    }

    /// One step: the reply body and what follows it.
    public typealias Step = PairingStep<Outcome>

    enum State: Sendable {
        case idle
        case waitingForProof(SRPServer, transient: Bool, since: Double)
        case waitingForExchange(sessionKey: [UInt8], since: Double)
    }

    /// The PIN of transient pairing.
    public static let transientPIN = "3939"
    /// M1's flag asking for transient pairing.
    public static let transientFlag: UInt64 = 0x10

    private var state: State = .idle
    private let identity: PairingIdentity
    private let timeout: Double
    private let random: @Sendable (Int) -> [UInt8]

    /// A machine answering as `identity`; a setup not finished within `timeout` seconds is
    /// dropped. `random` makes the salt and the SRP secret (fixed in tests).
    public init(identity: PairingIdentity, timeout: Double = 60, random: @escaping @Sendable (Int) -> [UInt8] = SecureRandom.bytes) {
        self.identity = identity
        self.timeout = timeout
        self.random = random
    }

    /// True while a setup is under way (M2 or M4 sent, not yet finished or expired).
    public func isInProgress(now: Double) -> Bool {
        switch state {
        case .idle: false
        case .waitingForProof(_, _, let since), .waitingForExchange(_, let since): now - since < timeout
        }
    }

    /// True when M1 asks for transient pairing.
    public static func isTransient(_ message: TLV8) -> Bool {
        (message.integer(.flags) ?? 0) & transientFlag != 0
    }

    /// Answers one message. `pin` is the PIN a PIN setup must use (nil when the receiver has
    /// none to offer, e.g. it refuses PIN pairing); transient setups use 3939.
    public mutating func handle(_ message: TLV8, pin: String?, now: Double) -> Step {
        let received = message.byte(.state) ?? 0
        do {
            switch (received, state) {
            case (1, _):
                return try start(message, pin: pin, now: now)
            case (3, .waitingForProof(let srp, let transient, let since)) where now - since < timeout:
                return try prove(message, srp: srp, transient: transient, since: since)
            case (5, .waitingForExchange(let key, let since)) where now - since < timeout:
                return try exchange(message, sessionKey: key)
            default:
                state = .idle
                let reason = received == 0 ? "no state item" : "M\(received) out of order or after the setup expired"
                return fail(PairingFailure(state: received &+ 1, code: .unknown, reason: reason), counts: false)
            }
        } catch let failure as PairingFailure {
            state = .idle
            return fail(failure, counts: failure.code == .authentication)
        } catch {
            state = .idle
            return fail(PairingFailure(state: received &+ 1, code: .unknown, reason: "\(error)"), counts: false)
        }
    }

    private func fail(_ failure: PairingFailure, counts: Bool) -> Step {
        Step(reply: failure.reply, outcome: .failed(failure, counts: counts))
    }

    /// M1 → M2: salt and B.
    private mutating func start(_ message: TLV8, pin: String?, now: Double) throws -> Step {
        let method = message.byte(.method) ?? 0
        // Method 1 is setup with an MFi certificate, which a Linux box cannot have.
        guard method == 0 else { throw PairingFailure(state: 2, code: .unavailable, reason: "pair-setup method \(method) is not offered") }
        let transient = Self.isTransient(message)
        guard let password = transient ? Self.transientPIN : pin else {
            throw PairingFailure(state: 2, code: .unavailable, reason: "PIN pairing is not offered")
        }
        let srp = try SRPServer(password: password, salt: random(16), privateKey: random(32))
        state = .waitingForProof(srp, transient: transient, since: now)
        return Step(reply: TLV8([(.state, [2]), (.salt, srp.salt), (.publicKey, srp.publicKey)]), outcome: .none)
    }

    /// M3 → M4: the server's proof, or an authentication error for a wrong PIN.
    private mutating func prove(_ message: TLV8, srp: SRPServer, transient: Bool, since: Double) throws -> Step {
        guard let publicKey = message[.publicKey], let proof = message[.proof] else {
            throw PairingFailure(state: 4, code: .unknown, reason: "M3 without a public key or proof")
        }
        let verified: (serverProof: [UInt8], sessionKey: [UInt8])
        do {
            verified = try srp.verify(clientPublicKey: publicKey, clientProof: proof)
        } catch {
            throw PairingFailure(state: 4, code: .authentication, reason: "M3: \(error)")
        }
        let reply = TLV8([(.state, [4]), (.proof, verified.serverProof)])
        if transient {
            state = .idle
            return Step(reply: reply, outcome: .transient(sharedSecret: verified.sessionKey))
        }
        state = .waitingForExchange(sessionKey: verified.sessionKey, since: since)
        return Step(reply: reply, outcome: .none)
    }

    /// M5 → M6: check the controller's signed identity, answer with ours.
    private mutating func exchange(_ message: TLV8, sessionKey: [UInt8]) throws -> Step {
        state = .idle
        guard let sealed = message[.encryptedData] else { throw PairingFailure(state: 6, code: .unknown, reason: "M5 without encrypted data") }
        let cipher = try ChaChaPoly(key: PairingLabel.key(sessionKey, PairingLabel.setupEncrypt))
        let inner: TLV8
        do {
            inner = try TLV8(bytes: cipher.open(sealed, nonce: ChaChaPoly.nonce(label: "PS-Msg05")))
        } catch {
            throw PairingFailure(state: 6, code: .authentication, reason: "M5 does not decrypt: \(error)")
        }
        guard let identifier = inner[.identifier], !identifier.isEmpty, identifier.count <= 64,
              let name = String(validating: identifier, as: UTF8.self),
              let publicKey = inner[.publicKey], publicKey.count == 32, let signature = inner[.signature] else {
            throw PairingFailure(state: 6, code: .authentication, reason: "M5 lacks a usable identifier, key or signature")
        }
        let controllerX = try PairingLabel.key(sessionKey, PairingLabel.controllerSign)
        guard Ed25519.isValid(signature: signature, of: controllerX + identifier + publicKey, publicKey: publicKey) else {
            throw PairingFailure(state: 6, code: .authentication, reason: "M5's signature does not verify")
        }
        let ourID = Array(identity.identifier.utf8)
        let accessoryX = try PairingLabel.key(sessionKey, PairingLabel.accessorySign)
        let ourSignature = try identity.sign(accessoryX + ourID + identity.publicKey)
        let sub = TLV8.signedIdentity(identifier: ourID, publicKey: identity.publicKey, signature: ourSignature)
        let sealedReply = try cipher.seal(sub.bytes, nonce: ChaChaPoly.nonce(label: "PS-Msg06"))
        // A controller paired by pair-setup administers the pairings (HAP).
        return Step(reply: TLV8([(.state, [6]), (.encryptedData, sealedReply)]),
                    outcome: .paired(ControllerPairing(identifier: name, publicKey: publicKey, admin: true)))
    }
}
