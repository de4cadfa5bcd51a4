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
        let streams = try await AirPlay2SenderSession.plistRequest(client, "SETUP", ["streams": .array([.dictionary([
            "type": .integer(96), "ct": .integer(codec == .alac ? 2 : 1), "audioFormat": .integer(codec == .alac ? 0x40000 : 0x800),
            "spf": .integer(Int64(Self.framesPerPacket)), "sr": .integer(44100), "shk": .data(key), "controlPort": .integer(Int64(port)),
            "latencyMin": .integer(11025), "latencyMax": .integer(88200), "isMedia": .bool(true), "audioMode": .string("default"),
            "streamConnectionID": .integer(Int64(streamSSRC)), "supportsDynamicStreamID": .bool(false),
        ])])])
        guard case .array(let described)? = streams["streams"], let stream = described.first,
              let dataPort = stream["dataPort"]?.integerValue, let controlPort = stream["controlPort"]?.integerValue,
              (1...65535).contains(dataPort), (1...65535).contains(controlPort) else {
            throw SenderError(.refused(status: 0), "\(name): SETUP phase 2 gave no dataPort and controlPort")
        }
        // No timing port: with NTP the receiver asks us for our time, on our UDP port.
        aim(audioPort: Int(dataPort), controlPort: Int(controlPort), timingPort: nil)
        try await record(sequence: sequence, rtpTime: rtpTime)
        try await setVolume(decibels: volumeDecibels)
    }
}
