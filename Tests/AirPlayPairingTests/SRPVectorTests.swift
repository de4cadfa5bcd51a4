import AirPlayCrypto
import AirPlayTesting
import Testing

/// SRP-6a on the HAP group against Protocol/vectors/pairing.json, whose values Python computed
/// and srptools (pyatv's SRP library) and pyatv's own client and receiver reproduced
/// (tools/lib/make_pairing_vectors.py).
@Suite struct SRPVectorTests {
    let vectors: VectorDocument
    init() throws { vectors = try VectorDocument("pairing.json") }

    @Test(arguments: ["srp_pin_1234", "srp_pin_3939_transient"])
    func theServerSendsBAndAcceptsTheRightProof(section: String) throws {
        let server = try SRPServer(password: try vectors.string(section, "pin"), salt: try vectors.bytes(section, "salt"),
                                   privateKey: try vectors.bytes(section, "b"))
        #expect(server.publicKey == (try vectors.bytes(section, "B")))
        let (proof, key) = try server.verify(clientPublicKey: try vectors.bytes(section, "A"), clientProof: try vectors.bytes(section, "M1"))
        #expect(key == (try vectors.bytes(section, "K")))
        #expect(proof == (try vectors.bytes(section, "M2")))
    }

    @Test(arguments: ["srp_pin_1234", "srp_pin_3939_transient"])
    func theClientMakesAAndItsProofAndChecksTheServers(section: String) throws {
        let client = try SRPClient(password: try vectors.string(section, "pin"), salt: try vectors.bytes(section, "salt"),
                                   serverPublicKey: try vectors.bytes(section, "B"), privateKey: try vectors.bytes(section, "a"))
        #expect(client.publicKey == (try vectors.bytes(section, "A")))
        #expect(client.proof == (try vectors.bytes(section, "M1")))
        #expect(client.sessionKey == (try vectors.bytes(section, "K")))
        #expect(client.isValid(serverProof: try vectors.bytes(section, "M2")))
        #expect(!client.isValid(serverProof: [UInt8](repeating: 0, count: 64)))
    }

    @Test func aWrongPINIsRefused() throws {
        let section = "srp_pin_1234"
        let server = try SRPServer(password: "1234", salt: try vectors.bytes(section, "salt"), privateKey: try vectors.bytes(section, "b"))
        let wrong = try SRPClient(password: "4321", salt: server.salt, serverPublicKey: server.publicKey)
        #expect(throws: CryptoError.self) { try server.verify(clientPublicKey: wrong.publicKey, clientProof: wrong.proof) }
    }

    @Test func aPublicKeyOfZeroModuloNIsRefused() throws {
        let server = try SRPServer(password: "1234", salt: [UInt8](repeating: 1, count: 16), privateKey: [UInt8](repeating: 2, count: 32))
        let n = try #require(VectorDocument.bytes(hex: try vectors.string("constants", "N")))
        // A = N (≡ 0) would let anyone in without the PIN.
        #expect(throws: CryptoError.self) { try server.verify(clientPublicKey: n, clientProof: [UInt8](repeating: 0, count: 64)) }
        #expect(throws: CryptoError.self) { try server.verify(clientPublicKey: [0], clientProof: [UInt8](repeating: 0, count: 64)) }
    }

    @Test func randomSessionsAgreeWithEachOther() throws {
        for _ in 0..<3 {
            let server = try SRPServer(password: "3939", salt: SecureRandom.bytes(16), privateKey: SecureRandom.bytes(32))
            let client = try SRPClient(password: "3939", salt: server.salt, serverPublicKey: server.publicKey)
            let (proof, key) = try server.verify(clientPublicKey: client.publicKey, clientProof: client.proof)
            #expect(key == client.sessionKey && client.isValid(serverProof: proof))
        }
    }
}
