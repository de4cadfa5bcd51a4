import AirPlayCrypto
import Testing

/// RAOP's cryptography through OpenSSL: the AirPort key, Apple-Response, per-packet AES.
@Suite struct RAOPCryptoTests {
    @Test func base64RoundTripsWithAndWithoutPadding() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 11) & 0xFF) }
            let text = Base64.encode(bytes)
            #expect(Base64.decode(text) == bytes)
            #expect(Base64.decode(String(text.filter { $0 != "=" })) == bytes, "Apple drops the padding")
        }
        #expect(Base64.decode("not*base64") == nil)
    }

    @Test func appleResponseIsA2048BitSignature() throws {
        let identity = try RAOPIdentity()
        let response = try identity.appleResponse(challengeBase64: "AAECAwQFBgcICQoLDA0ODw", localAddress: [127, 0, 0, 1],
                                                  deviceID: [2, 0xFC, 0, 0, 0, 1])
        #expect(!response.contains("="), "sent without base64 padding")
        #expect(Base64.decode(response)?.count == 256)
        // PKCS#1 v1.5 type 1 is deterministic: the same input signs the same way.
        #expect(try identity.appleResponse(challengeBase64: "AAECAwQFBgcICQoLDA0ODw", localAddress: [127, 0, 0, 1],
                                           deviceID: [2, 0xFC, 0, 0, 0, 1]) == response)
        #expect(throws: CryptoError.self) {
            try identity.appleResponse(challengeBase64: "???", localAddress: [], deviceID: [])
        }
    }

    @Test func wrappedKeysThatAreNotOursAreRefused() throws {
        let identity = try RAOPIdentity()
        #expect(throws: CryptoError.self) { try identity.unwrapStreamKey([UInt8](repeating: 7, count: 256)) }
        #expect(throws: CryptoError.self) { try identity.unwrapStreamKey([1, 2, 3]) }
    }

    @Test func onlyWholeBlocksAreDecryptedTheTailStaysClear() throws {
        let decryptor = try RAOPPacketDecryptor(key: [UInt8](repeating: 1, count: 16), iv: [UInt8](repeating: 2, count: 16))
        let short: [UInt8] = [1, 2, 3, 4, 5]
        #expect(decryptor.decrypt(short) == short, "less than a block: all clear")
        let payload = (0..<44).map { UInt8($0) }
        let clear = decryptor.decrypt(payload)
        #expect(clear.count == 44)
        #expect(Array(clear[32...]) == Array(payload[32...]), "the 12-byte tail passes untouched")
        #expect(Array(clear[..<32]) != Array(payload[..<32]))
        #expect(decryptor.decrypt(payload) == clear, "the IV is reset for every packet")
        #expect(throws: CryptoError.self) { try RAOPPacketDecryptor(key: [1], iv: [2]) }
    }
}
