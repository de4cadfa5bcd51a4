import AirPlayCrypto
import AirPlayTesting
import Testing

/// AirPlay 2 realtime audio packets against Protocol/vectors/airplay2-audio.json (made by
/// tools/lib/make_airplay2_vectors.py with Python's `cryptography`, in pyatv's layout).
@Suite struct AirPlay2AudioTests {
    let vectors: VectorDocument
    init() throws { vectors = try VectorDocument("airplay2-audio.json") }

    private func packets() throws -> [[String: Any]] {
        try #require(try vectors.value(["packets"]) as? [[String: Any]])
    }

    private func hex(_ object: [String: Any], _ key: String) throws -> [UInt8] {
        try #require(VectorDocument.bytes(hex: object[key] as? String ?? "x"))
    }

    @Test func packetsOpenToTheirAudioAndSealBackByteForByte() throws {
        let cipher = try AirPlay2AudioCipher(streamKey: try vectors.bytes("shk"))
        for packet in try packets() {
            let wire = try hex(packet, "packet")
            #expect(try cipher.open(wire) == (try hex(packet, "payload")))
            let counter = UInt64(try #require(packet["counter"] as? Int))
            #expect(try cipher.seal(header: try hex(packet, "header"), audio: try hex(packet, "payload"), counter: counter) == wire)
        }
    }

    @Test func aChangedTimestampOrTamperedAudioDoesNotOpen() throws {
        let cipher = try AirPlay2AudioCipher(streamKey: try vectors.bytes("shk"))
        var wire = try hex(try packets()[0], "packet")
        wire[7] ^= 1  // the RTP timestamp is authenticated
        #expect(throws: CryptoError.self) { try cipher.open(wire) }
        wire[7] ^= 1
        wire[20] ^= 1
        #expect(throws: CryptoError.self) { try cipher.open(wire) }
        #expect(throws: CryptoError.self) { try cipher.open(Array(wire.prefix(30))) }
        // A refused packet leaves the cipher as it was: the next good one opens.
        wire[20] ^= 1
        #expect(try cipher.open(wire) == (try hex(try packets()[0], "payload")))
    }
}
