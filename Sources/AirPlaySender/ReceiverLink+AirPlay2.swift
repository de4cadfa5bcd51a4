import AirPlayCrypto
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation

/// Setting a stream up the AirPlay 2 way, on a control connection a pairing (stored
/// credentials or transient) has encrypted: SETUP phase 1 (NTP timing, our UDP port for the
/// receiver's timing requests) opens the event channel, phase 2 describes one realtime stream
/// (ALAC where the receiver lists it, else big-endian PCM) with a fresh 32-byte `shk`; packets
/// are then sealed with ChaCha20-Poly1305 (`sendAudio`). Sync, resends and timing stay RAOP's.
/// `Protocol/airplay2.md` is the receiver's side of the same exchanges.
extension ReceiverLink {
    /// Whether a receiver's features say it takes AirPlay 2 sessions (bit 38, unified media
    /// control, or 48, CoreUtils pairing and encryption: pyatv's rule too).
    public static func speaksAirPlay2(_ features: FeatureSet) -> Bool {
        !features.intersection([.unifiedMediaControl, .coreUtilsPairing]).isEmpty
    }

    /// A fresh 32-byte `shk` for phase 2, the cipher sealing packets with it, and a random SSRC.
    func makeStreamKey() throws(SenderError) -> [UInt8] {
        let key = SecureRandom.bytes(32)
        do {
            streamCipher = try AirPlay2AudioCipher(streamKey: key)
        } catch {
            throw SenderError(.badInput, "cannot make a stream key: \(error)")
        }
        streamSSRC = UInt32.random(in: 1...UInt32.max)
        return key
    }

    /// Frames in one realtime packet.
    static let framesPerPacket = 352
}
