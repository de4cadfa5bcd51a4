import AirPlayCrypto
import AirPlayPairing
import AirPlayTesting
import Testing

/// The AirPlay 2 event channel against Protocol/vectors/airplay2-audio.json (`events`, made by
/// tools/lib/make_airplay2_vectors.py with Python's `cryptography`): its keys come from the
/// pairing's secret with salt `Events-Salt`, and its frames are HAP's, each direction counting
/// its own nonces from 0.
@Suite struct EventChannelVectorTests {
    let events: [String: Any]
    init() throws { events = try #require(try VectorDocument("airplay2-audio.json").value(["events"]) as? [String: Any]) }

    private func bytes(_ key: String, in object: [String: Any]? = nil) throws -> [UInt8] {
        try #require(VectorDocument.bytes(hex: (object ?? events)[key] as? String ?? "x"), "\(key)")
    }

    private func frames(_ key: String) throws -> [[String: Any]] { try #require(events[key] as? [[String: Any]]) }

    @Test func keysDeriveFromThePairingSecret() throws {
        let keys = try EventChannelKeys(sharedSecret: try bytes("sharedSecret"))
        #expect(keys.receiverToSender == (try bytes("receiverWrites")))
        #expect(keys.senderToReceiver == (try bytes("senderWrites")))
    }

    /// What the receiver writes seals to the vector frames, counter after counter; what the
    /// sender writes opens to its text.
    @Test func framesSealAndOpenByteForByte() throws {
        var sealer = try EncryptedFrames.Sealer(key: try bytes("receiverWrites"))
        for frame in try frames("receiverFrames") {
            let text = Array((frame["text"] as? String ?? "").utf8)
            #expect(try sealer.seal(text) == (try bytes("frame", in: frame)))
        }
        var opener = try EncryptedFrames.Opener(key: try bytes("senderWrites"))
        for frame in try frames("senderFrames") {
            #expect(try opener.open(try bytes("frame", in: frame)) == Array((frame["text"] as? String ?? "").utf8))
        }
        var wrongWay = try EncryptedFrames.Opener(key: try bytes("receiverWrites"))
        #expect(throws: CryptoError.self) { try wrongWay.open(try bytes("frame", in: try frames("senderFrames")[0])) }
    }
}
