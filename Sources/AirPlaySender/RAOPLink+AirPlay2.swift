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
extension RAOPLink {
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

    func setUpAirPlay2(sequence: UInt16, rtpTime: UInt32, volumeDecibels: Double) async throws(SenderError) {
        try await openUDPPort()
        let port = channel?.localAddress?.port ?? 0
        session = try await AirPlay2SenderSession.start(client: client, timingPort: port)
        codec = traits.codecs.contains(1) || !traits.advertised ? .alac : .pcm
        let key = try makeStreamKey()
        let stream = AirPlay2SenderSession.realtimeStream(alac: codec == .alac, key: key, controlPort: port, ssrc: streamSSRC)
        let reply = try await AirPlay2SenderSession.setUp(client, .streams([stream]))
        guard let described = reply.streams?.first, let controlPort = described.controlPort else {
            throw SenderError(.refused(status: 0), "\(name): SETUP phase 2 gave no dataPort and controlPort")
        }
        let dataPort = described.dataPort
        // No timing port: with NTP the receiver asks us for our time, on our UDP port.
        aim(audioPort: Int(dataPort), controlPort: Int(controlPort), timingPort: nil)
        try await record(sequence: sequence, rtpTime: rtpTime)
        try await setVolume(decibels: volumeDecibels)
    }
}
