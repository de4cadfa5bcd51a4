import AirPlayCrypto
import AirPlayTesting
import Foundation
import Testing

// RAOP's RSA and AES checked against Protocol/vectors/raop-apple-response.json and
// raop-aes-packets.json (made by tools/lib/make_raop_vectors.py, signatures and key wraps checked
// there with the `cryptography` package and openssl).

/// A vector file from Protocol/vectors/ through the one shared loader, or nil when it is missing.
private func loadCryptoVectors<T: Decodable>(_ name: String, as type: T.Type) -> T? {
    try? ProtocolVectors.load(T.self, from: name)
}

/// Bytes from hex text (the vectors' form).
private func cryptoBytes(hex: String) -> [UInt8]? { VectorDocument.bytes(hex: hex) }

/// `Apple-Challenge` → `Apple-Response` for fixed challenges (Protocol/vectors/raop-apple-response.json).
@Suite struct AppleResponseVectorTests {
    struct File: Decodable {
        struct Vector: Decodable {
            var what: String
            var challenge: String
            var localAddressText: String
            var localAddress: String
            var deviceId: String
            var signedMessage: String
            var appleResponse: String
        }
        struct Refused: Decodable {
            var what: String
            var challenge: String
            var localAddress: String
            var deviceId: String
        }
        var vectors: [Vector]
        var refused: [Refused]
    }

    static let file: File? = loadCryptoVectors("raop-apple-response.json", as: File.self)
    static let vectors: [File.Vector] = file?.vectors ?? []

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 5)
        #expect(Self.file?.refused.isEmpty == false)
    }

    /// The response signs challenge + our address on the connection (4 bytes for IPv4, also when
    /// reached as ::ffff:a.b.c.d; 16 for IPv6) + our device id, zero-padded to 32 bytes, with the
    /// AirPort key (PKCS#1 v1.5 type 1, no digest), and is sent in base64 without padding. The
    /// signature is deterministic, so a sender holding the public key can check it byte for byte.
    @Test(arguments: vectors.indices)
    func signsChallenge(index: Int) throws {
        let vector = Self.vectors[index]
        let identity = try RAOPIdentity()
        let address = try #require(cryptoBytes(hex: vector.localAddress))
        let deviceID = try #require(cryptoBytes(hex: vector.deviceId))
        let response = try identity.appleResponse(challengeBase64: vector.challenge, localAddress: address, deviceID: deviceID)
        #expect(response == vector.appleResponse, "\(vector.what)")
        #expect(!response.contains("="), "sent without base64 padding")
        #expect(Base64.decode(response)?.count == 256, "one 2048-bit RSA block")

        // The message that is signed, as the vector spells it out.
        let challenge = try #require(Base64.decode(vector.challenge))
        var message = challenge + address + deviceID
        if message.count < 32 { message += [UInt8](repeating: 0, count: 32 - message.count) }
        #expect(message == cryptoBytes(hex: vector.signedMessage), "\(vector.what)")
    }

    /// Challenges that are not base64, empty, or longer than 32 bytes get no response.
    @Test func refusesBadChallenges() throws {
        let identity = try RAOPIdentity()
        for refused in Self.file?.refused ?? [] {
            let address = try #require(cryptoBytes(hex: refused.localAddress))
            let deviceID = try #require(cryptoBytes(hex: refused.deviceId))
            #expect(throws: CryptoError.self, "\(refused.what)") {
                try identity.appleResponse(challengeBase64: refused.challenge, localAddress: address, deviceID: deviceID)
            }
        }
    }
}

/// Encrypted RAOP streams (et=1): the RSA-OAEP-wrapped stream key of `a=rsaaeskey` and AES-128-CBC
/// per packet (Protocol/vectors/raop-aes-packets.json).
@Suite struct RAOPEncryptionVectorTests {
    struct File: Decodable {
        struct Packet: Decodable {
            var what: String
            var length: Int
            var plaintext: String
            var ciphertext: String
        }
        struct KeyWrap: Decodable {
            var rsaaeskey: String
            var aesiv: String
            var key: String
            var iv: String
        }
        struct BadWrap: Decodable {
            var what: String
            var rsaaeskey: String
        }
        var key: String
        var iv: String
        var packets: [Packet]
        var keyWrap: KeyWrap
        var badWraps: [BadWrap]
    }

    static let file: File? = loadCryptoVectors("raop-aes-packets.json", as: File.self)

    @Test func vectorsArePresent() throws {
        let file = try #require(Self.file)
        #expect(file.packets.count >= 5)
        #expect(file.packets.contains { $0.length % 16 != 0 && $0.length > 16 }, "a packet with a clear tail")
    }

    /// Each payload's whole 16-byte blocks are AES-128-CBC with the stream IV, restarted for every
    /// packet; the tail after the last whole block (and a payload shorter than a block) is in clear.
    /// One decryptor serves the whole stream, packet after packet.
    @Test func decryptsPacketsWholeBlocksOnly() throws {
        let file = try #require(Self.file)
        let key = try #require(cryptoBytes(hex: file.key))
        let iv = try #require(cryptoBytes(hex: file.iv))
        let decryptor = try RAOPPacketDecryptor(key: key, iv: iv)
        for packet in file.packets {
            let cipher = try #require(cryptoBytes(hex: packet.ciphertext))
            let plain = try #require(cryptoBytes(hex: packet.plaintext))
            #expect(cipher.count == packet.length && plain.count == packet.length, "AES keeps the length: \(packet.what)")
            #expect(decryptor.decrypt(cipher) == plain, "\(packet.what)")
            let whole = packet.length / 16 * 16
            #expect(Array(cipher[whole...]) == Array(plain[whole...]), "the tail is in clear: \(packet.what)")
        }
    }

    /// Because the IV restarts with every packet, equal leading blocks encrypt equally in two packets.
    @Test func ivIsResetForEveryPacket() throws {
        let file = try #require(Self.file)
        let full = try #require(file.packets.first { $0.length == 1408 })
        let withTail = try #require(file.packets.first { $0.length == 1411 })
        #expect(withTail.ciphertext.hasPrefix(full.ciphertext))
        #expect(withTail.plaintext.hasPrefix(full.plaintext))
    }

    /// `a=rsaaeskey` unwraps (RSA-OAEP, SHA-1, AirPort key) to the 16-byte AES key; `a=aesiv` is the
    /// IV in base64 without padding. Together they decrypt the stream's packets.
    @Test func unwrapsStreamKeyFromANNOUNCE() throws {
        let file = try #require(Self.file)
        let identity = try RAOPIdentity()
        let wrapped = try #require(Base64.decode(file.keyWrap.rsaaeskey))
        #expect(wrapped.count == 256)
        let key = try identity.unwrapStreamKey(wrapped)
        #expect(key == cryptoBytes(hex: file.keyWrap.key))
        let iv = try #require(Base64.decode(file.keyWrap.aesiv))
        #expect(iv == cryptoBytes(hex: file.keyWrap.iv))

        let decryptor = try RAOPPacketDecryptor(key: key, iv: iv)
        for packet in file.packets {
            let cipher = try #require(cryptoBytes(hex: packet.ciphertext))
            #expect(decryptor.decrypt(cipher) == cryptoBytes(hex: packet.plaintext), "\(packet.what)")
        }
    }

    /// A wrap of a key that is not 16 bytes, a corrupted wrap and a short blob are all refused.
    @Test func refusesBadWraps() throws {
        let file = try #require(Self.file)
        let identity = try RAOPIdentity()
        #expect(!file.badWraps.isEmpty)
        for bad in file.badWraps {
            let wrapped = try #require(Base64.decode(bad.rsaaeskey), "\(bad.what)")
            #expect(throws: CryptoError.self, "\(bad.what)") { try identity.unwrapStreamKey(wrapped) }
        }
    }
}

/// The sender's side of the same vectors: our packets encrypt to exactly the ciphertexts a
/// receiver expects, our wrapped keys unwrap, and receivers' Apple-Responses verify.
@Suite struct RAOPSenderCryptoVectorTests {
    @Test func encryptsPacketsLikeTheVectors() throws {
        let file = try #require(RAOPEncryptionVectorTests.file)
        let encryptor = try RAOPPacketEncryptor(key: try #require(cryptoBytes(hex: file.key)), iv: try #require(cryptoBytes(hex: file.iv)))
        for packet in file.packets {
            #expect(encryptor.encrypt(try #require(cryptoBytes(hex: packet.plaintext))) == cryptoBytes(hex: packet.ciphertext),
                    "\(packet.what)")
        }
    }

    @Test func aWrappedKeyUnwrapsOnTheReceiverSide() throws {
        let encryptor = try RAOPPacketEncryptor()
        let wrapped = try RAOPSenderCrypto().wrap(streamKey: encryptor.key)
        #expect(wrapped.count == 256)
        #expect(try RAOPIdentity().unwrapStreamKey(wrapped) == encryptor.key)
    }

    /// What the sender checks of an Apple-Response: our challenge, the address we reached the
    /// receiver on and its device id; another address or a forged signature fails.
    @Test func appleResponsesVerify() throws {
        let crypto = try RAOPSenderCrypto()
        for vector in AppleResponseVectorTests.vectors {
            let challenge = try #require(Base64.decode(vector.challenge))
            let address = try #require(cryptoBytes(hex: vector.localAddress))
            let deviceID = try #require(cryptoBytes(hex: vector.deviceId))
            #expect(crypto.verify(appleResponse: vector.appleResponse, challenge: challenge, receiverAddress: address, deviceID: deviceID),
                    "\(vector.what)")
            #expect(crypto.verify(appleResponse: vector.appleResponse, challenge: challenge, receiverAddress: address, deviceID: nil))
            #expect(!crypto.verify(appleResponse: vector.appleResponse, challenge: challenge, receiverAddress: [10, 0, 0, 9], deviceID: nil))
            var forged = Array(vector.appleResponse)
            forged[10] = forged[10] == "A" ? "B" : "A"
            #expect(!crypto.verify(appleResponse: String(forged), challenge: challenge, receiverAddress: address, deviceID: deviceID))
        }
    }
}
