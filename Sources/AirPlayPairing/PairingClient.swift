import AirPlayCrypto

/// The sender's side of pair-setup (PIN or transient) and pair-verify, as steps: each call takes
/// the receiver's reply and returns the next request body, so the caller owns the transport.
public enum PairingClient {
    /// What a PIN pair-setup leaves: the receiver's identity, to verify against later.
    public struct ReceiverCredentials: Codable, Equatable, Sendable {
        /// The receiver's pairing identifier (its `pi`).
        public var identifier: String
        /// The receiver's Ed25519 public key (its `pk`).
        public var publicKey: [UInt8]

        /// Credentials from their parts.
        public init(identifier: String, publicKey: [UInt8]) {
            self.identifier = identifier
            self.publicKey = publicKey
        }
    }

    /// Why pairing failed, with HAP's error when the receiver sent one.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The receiver's error code, if it sent one.
        public let code: TLV8.ErrorCode?
        /// What went wrong.
        public let description: String

        init(_ description: String, code: TLV8.ErrorCode? = nil) {
            self.description = description
            self.code = code
        }

        static func check(_ reply: TLV8, expectedState: UInt8) throws(Failure) {
            if let raw = reply.byte(.error) {
                let code = TLV8.ErrorCode(rawValue: raw)
                let text: String = switch code {
                case .authentication: "the receiver refused the PIN or signature"
                case .maxTries, .backoff: "the receiver refuses pairing for now after too many failures" +
                    (reply.integer(.retryDelay).map { " (retry in \($0) s)" } ?? "")
                case .busy: "the receiver is pairing with another sender"
                case .unavailable: "the receiver does not offer this kind of pairing"
                case .maxPeers: "the receiver holds no more pairings"
                default: "the receiver answered error \(raw)"
                }
                throw Failure(text, code: code)
            }
            guard reply.byte(.state) == expectedState else {
                throw Failure("the receiver answered state \(reply.byte(.state).map(String.init) ?? "none"), not \(expectedState)")
            }
        }
    }

    /// M1 of a pair-setup; transient asks for flags 0x10 (PIN 3939).
    public static func setupStart(transient: Bool) -> TLV8 {
        var message = TLV8([(.method, [0]), (.state, [1])])
        if transient { message.append(.flags, byte: UInt8(PairSetupServer.transientFlag)) }
        return message
    }

    /// A pair-setup after M1: M3 from M2, then (PIN setups) M5 from M4, then the receiver's
    /// identity from M6.
    public struct Setup: Sendable {
        private let identity: PairingIdentity
        private let pin: String
        private var srp: SRPClient?

        /// A setup as `identity` with `pin` (3939 for transient).
        public init(identity: PairingIdentity, pin: String) {
            self.identity = identity
            self.pin = pin
        }

        /// M2 (salt, B) → M3 (A, proof).
        public mutating func proof(answering m2: TLV8, privateKey: [UInt8] = SecureRandom.bytes(32)) throws(Failure) -> TLV8 {
            try Failure.check(m2, expectedState: 2)
            guard let salt = m2[.salt], let serverKey = m2[.publicKey] else { throw Failure("M2 lacks the salt or B") }
            do {
                let client = try SRPClient(password: pin, salt: salt, serverPublicKey: serverKey, privateKey: privateKey)
                srp = client
                return TLV8([(.state, [3]), (.publicKey, client.publicKey), (.proof, client.proof)])
            } catch {
                throw Failure("SRP: \(error)")
            }
        }

        /// M4 → the 64-byte session key (transient setups encrypt with it from here on).
        public func sessionKey(answering m4: TLV8) throws(Failure) -> [UInt8] {
            try Failure.check(m4, expectedState: 4)
            guard let srp, let proof = m4[.proof], srp.isValid(serverProof: proof) else {
                throw Failure("the receiver's SRP proof is wrong: it does not know the PIN")
            }
            return srp.sessionKey
        }

        /// M4 → M5: our signed identity, sealed.
        public func exchange(answering m4: TLV8) throws(Failure) -> TLV8 {
            let key = try sessionKey(answering: m4)
            do {
                let controllerX = try PairingLabel.key(key, PairingLabel.controllerSign)
                let ourID = Array(identity.identifier.utf8)
                let signature = try identity.sign(controllerX + ourID + identity.publicKey)
                let sub = TLV8.signedIdentity(identifier: ourID, publicKey: identity.publicKey, signature: signature)
                let cipher = try ChaChaPoly(key: PairingLabel.key(key, PairingLabel.setupEncrypt))
                return TLV8([(.state, [5]), (.encryptedData, try cipher.seal(sub.bytes, nonce: ChaChaPoly.nonce(label: "PS-Msg05")))])
            } catch {
                throw Failure("M5: \(error)")
            }
        }

        /// M6 → the receiver's identity, its signature checked.
        public func receiver(answering m6: TLV8, m4: TLV8) throws(Failure) -> ReceiverCredentials {
            try Failure.check(m6, expectedState: 6)
            let key = try sessionKey(answering: m4)
            guard let sealed = m6[.encryptedData] else { throw Failure("M6 lacks encrypted data") }
            do {
                let cipher = try ChaChaPoly(key: PairingLabel.key(key, PairingLabel.setupEncrypt))
                let inner = try TLV8(bytes: cipher.open(sealed, nonce: ChaChaPoly.nonce(label: "PS-Msg06")))
                guard let identifier = inner[.identifier], let name = String(validating: identifier, as: UTF8.self),
                      let publicKey = inner[.publicKey], publicKey.count == 32, let signature = inner[.signature] else {
                    throw Failure("M6 lacks the receiver's identifier, key or signature")
                }
                let accessoryX = try PairingLabel.key(key, PairingLabel.accessorySign)
                guard Ed25519.isValid(signature: signature, of: accessoryX + identifier + publicKey, publicKey: publicKey) else {
                    throw Failure("M6's signature does not verify")
                }
                return ReceiverCredentials(identifier: name, publicKey: publicKey)
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure("M6: \(error)")
            }
        }
    }

    /// A pair-verify: M1, then M3 from M2, then the channel keys from M4.
    public struct Verify: Sendable {
        private let identity: PairingIdentity
        private let receiver: ReceiverCredentials
        private let ephemeral: X25519KeyAgreement
        private var sharedSecret: [UInt8]?

        /// A verify as `identity` against a receiver paired earlier.
        public init(identity: PairingIdentity, receiver: ReceiverCredentials, privateKey: [UInt8] = SecureRandom.bytes(32)) throws(Failure) {
            self.identity = identity
            self.receiver = receiver
            do {
                ephemeral = try X25519KeyAgreement(privateKey: privateKey)
            } catch {
                throw Failure("X25519: \(error)")
            }
        }

        /// M1: our ephemeral key.
        public var start: TLV8 { TLV8([(.state, [1]), (.publicKey, ephemeral.publicKey)]) }

        /// M2 → M3: the receiver's signature checked, ours sealed.
        public mutating func proof(answering m2: TLV8) throws(Failure) -> TLV8 {
            try Failure.check(m2, expectedState: 2)
            guard let theirs = m2[.publicKey], theirs.count == 32, let sealed = m2[.encryptedData] else {
                throw Failure("M2 lacks the receiver's key or encrypted data")
            }
            do {
                let secret = try ephemeral.sharedSecret(with: theirs)
                let cipher = try ChaChaPoly(key: PairingLabel.key(secret, PairingLabel.verifyEncrypt))
                let inner = try TLV8(bytes: cipher.open(sealed, nonce: ChaChaPoly.nonce(label: "PV-Msg02")))
                guard let identifier = inner[.identifier], String(decoding: identifier, as: UTF8.self) == receiver.identifier,
                      let signature = inner[.signature],
                      Ed25519.isValid(signature: signature, of: theirs + identifier + ephemeral.publicKey, publicKey: receiver.publicKey) else {
                    throw Failure("the receiver is not the one paired with (identifier or signature differs)")
                }
                let ourID = Array(identity.identifier.utf8)
                let ourSignature = try identity.sign(ephemeral.publicKey + ourID + theirs)
                let sub = TLV8.signedIdentity(identifier: ourID, signature: ourSignature)
                sharedSecret = secret
                return TLV8([(.state, [3]), (.encryptedData, try cipher.seal(sub.bytes, nonce: ChaChaPoly.nonce(label: "PV-Msg03")))])
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure("pair-verify: \(error)")
            }
        }

        /// M4 → the control channel's keys.
        public func keys(answering m4: TLV8) throws(Failure) -> ControlChannelKeys {
            try Failure.check(m4, expectedState: 4)
            guard let sharedSecret else { throw Failure("M4 before M2") }
            do {
                return try ControlChannelKeys(sharedSecret: sharedSecret)
            } catch {
                throw Failure("\(error)")
            }
        }
    }
}
