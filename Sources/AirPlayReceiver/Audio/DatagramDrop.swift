/// Why an audio datagram never reached the playout, in the kinds a diagnosis tells apart
/// (`airplay doctor` names a cause and a fix for each).
public enum DatagramDrop: String, CaseIterable, Hashable, Sendable {
    /// From a host other than the session's sender (a stale sender, a NAT, a stray).
    case strayHost
    /// Not a RAOP packet, too large, or a kind this port never carries.
    case malformed
    /// An AirPlay 2 packet whose ChaCha20-Poly1305 tag did not verify: the keys disagree.
    case unauthenticated
    /// The decoder refused the payload: AES with the wrong key, or a format other than announced.
    case undecodable
    /// The decoder's queue was full: the box cannot decode as fast as the sender sends.
    case decoderBacklog
    /// Audio before SETUP finished (harmless at a session's start).
    case beforeSetup
}
