import AirPlayCrypto
import Testing

/// The primitives of HAP pairing against their RFCs' published vectors (RFC 8439, 8032, 7748)
/// and an HKDF-SHA-512 output computed with Python's `cryptography`.
@Suite struct PairingPrimitivesTests {
    @Test func chaCha20Poly1305SealsTheRFC8439Example() throws {
        let cipher = try ChaChaPoly(key: Array(0x80...0x9F))
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let nonce = hex("070000004041424344454647"), aad = hex("50515253c0c1c2c3c4c5c6c7")
        let sealed = try cipher.seal(plaintext, nonce: nonce, aad: aad)
        #expect(Array(sealed.suffix(16)) == hex("1ae10b594f09e26a7e902ecbd0600691"))
        #expect(Array(sealed.prefix(16)) == hex("d31a8d34648e60db7b86afbc53ef7ec2"))
        #expect(try cipher.open(sealed, nonce: nonce, aad: aad) == plaintext)
    }

    @Test func aTamperedMessageOrWrongAADDoesNotOpen() throws {
        let cipher = try ChaChaPoly(key: [UInt8](repeating: 1, count: 32))
        let nonce = ChaChaPoly.nonce(counter: 0)
        var sealed = try cipher.seal([1, 2, 3], nonce: nonce, aad: [0, 3])
        #expect(throws: CryptoError.self) { try cipher.open(sealed, nonce: nonce, aad: [0, 4]) }
        sealed[0] ^= 1
        #expect(throws: CryptoError.self) { try cipher.open(sealed, nonce: nonce, aad: [0, 3]) }
        #expect(throws: CryptoError.self) { try cipher.open([1, 2], nonce: nonce) }
        // And the cipher still works afterwards.
        let again = try cipher.seal([9], nonce: nonce)
        #expect(try cipher.open(again, nonce: nonce) == [9])
    }

    @Test func hapNoncesAreFourZeroBytesThenCounterOrLabel() {
        #expect(ChaChaPoly.nonce(counter: 0x0102) == [0, 0, 0, 0, 0x02, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(ChaChaPoly.nonce(label: "PS-Msg05") == [0, 0, 0, 0] + Array("PS-Msg05".utf8))
    }

    @Test func ed25519SignsTheRFC8032FirstExample() throws {
        let key = try Ed25519SigningKey(seed: hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(key.publicKey == hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let signature = try key.sign([])
        #expect(signature == hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"))
        #expect(Ed25519.isValid(signature: signature, of: [], publicKey: key.publicKey))
        #expect(!Ed25519.isValid(signature: signature, of: [0], publicKey: key.publicKey))
        #expect(!Ed25519.isValid(signature: Array(signature.prefix(63)), of: [], publicKey: key.publicKey))
    }

    @Test func x25519AgreesOnTheRFC7748SharedSecret() throws {
        let alice = try X25519KeyAgreement(privateKey: hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        #expect(alice.publicKey == hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        let shared = try alice.sharedSecret(with: hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        #expect(shared == hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"))
        // A low-order point gives an all-zero secret, which must be refused.
        #expect(throws: CryptoError.self) { try alice.sharedSecret(with: [UInt8](repeating: 0, count: 32)) }
    }

    @Test func hkdfSHA512MatchesPythonCryptography() throws {
        let key = try HKDF.sha512(key: Array(0..<64), salt: "Control-Salt", info: "Control-Write-Encryption-Key")
        #expect(key == hex("5a6cb19bcbe7d4df2dd8279f39562f7fae2dbf73eb5a4f98849c245c82b2fe96"))
    }

    private func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
