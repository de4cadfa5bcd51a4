import AirPlayCrypto
import AirPlayWire

/// How `airplay` reaches a receiver, in one place: which pairing secures the connection, whether
/// to speak AirPlay 2, what the receiver says it takes, and the link made of all that. The
/// commands only choose the receivers and the options.
public enum ReceiverLinks {
    /// The features a receiver's `_raop._tcp` record states (`ft`), else what its `GET /info`
    /// said (`info`, for a HOST:PORT receiver), else none.
    public static func features(of address: ReceiverAddress, info: ReceiverInfo? = nil) -> FeatureSet {
        address.raopTXT?["ft"].flatMap(FeatureSet.init(txtValue:)) ?? info?.features ?? []
    }

    /// What a discovered receiver's records say it takes for video: `_airplay._tcp`'s
    /// `features`, else `_raop._tcp`'s `ft`; nil for a receiver given as HOST:PORT.
    public static func videoFeatures(of address: ReceiverAddress) -> FeatureSet? {
        address.airPlayTXT?["features"].flatMap(FeatureSet.init(txtValue:)) ?? address.raopTXT?["ft"].flatMap(FeatureSet.init(txtValue:))
    }

    /// Pair-verifies a fresh connection when this sender paired with the receiver, or pairs
    /// transiently when the receiver offers that (features bit 43 or 48 in its `_raop._tcp`
    /// record). `transient` pairs transiently even when the record does not offer it
    /// (`--protocol 2`, buffered mode). A damaged credentials file is an error, not a reason to
    /// go on in clear.
    public static func secure(_ connection: ReceiverConnection, to address: ReceiverAddress, transient: Bool = false,
                              info: ReceiverInfo? = nil) async throws(SenderError) {
        let credentials = try SenderCredentials()
        let offered = transient || !features(of: address, info: info).intersection([.systemPairing, .coreUtilsPairing]).isEmpty
        try await connection.secure(for: address.key, offersTransientPairing: offered, credentials: credentials)
    }

    /// Whether to speak AirPlay 2: as `protocolVersion` says, or else where the receiver
    /// advertises it and the connection was paired (transiently or with stored credentials).
    public static func speaksAirPlay2(_ protocolVersion: Int?, address: ReceiverAddress, connection: ReceiverConnection,
                                      info: ReceiverInfo? = nil) -> Bool {
        protocolVersion.map { $0 == 2 } ?? (ReceiverLink.speaksAirPlay2(features(of: address, info: info)) && connection.pairingSecret != nil)
    }

    /// What the receiver's `_raop._tcp` record says it takes (or what every AirPlay 1 speaker
    /// takes, for a HOST:PORT receiver).
    public static func traits(of address: ReceiverAddress) -> RAOPReceiverTraits {
        address.raopTXT.map { RAOPReceiverTraits(txt: $0, deviceID: address.deviceID?.bytes) } ?? RAOPReceiverTraits()
    }

    /// How a link is to stream: realtime (type 96), buffered (type 103, AirPlay 2 on PTP), or
    /// `auto`: buffered where the receiver takes it (bit 40), else realtime, as Apple's senders
    /// play to a group of AirPlay 2 and older speakers.
    public enum Mode: Sendable {
        case realtime, buffered, auto
    }

    /// A link for streaming audio to `address`: connected, secured as above, AirPlay 2 when
    /// buffered or when `protocolVersion` or the receiver says so. Not yet set up. A receiver
    /// given as HOST:PORT is asked `GET /info` first (as Apple's senders ask every receiver), so
    /// that one without a record is still known for what it is: in a mixed group the AirPlay 2
    /// rooms take PTP and the AirPlay 1 ones NTP. So is every receiver of a buffered stream: its
    /// answer says which formats it decodes (`BufferedFormatChoice`). `--protocol 1` skips it.
    public static func open(_ address: ReceiverAddress, protocolVersion: Int?, mode: Mode, identity: RAOPClientIdentity,
                            password: String?, crypto: RAOPSenderCrypto?) async throws(SenderError) -> ReceiverLink {
        var connection = try await ReceiverConnection.connect(host: address.host, port: address.port)
        var info: ReceiverInfo?
        if address.raopTXT == nil || mode != .realtime, protocolVersion != 1 {
            switch await connection.info() {
            case .said(let said): info = said
            case .nothing: break
            case .silent:
                // A late answer would be read as the pairing's: start on a fresh connection.
                await connection.close()
                connection = try await ReceiverConnection.connect(host: address.host, port: address.port)
            }
        }
        let features = features(of: address, info: info)
        let wantsBuffered = mode == .buffered || (mode == .auto && protocolVersion != 1 && features.contains(.bufferedAudio))
        do {
            try await secure(connection, to: address, transient: protocolVersion == 2 || wantsBuffered, info: info)
        } catch {
            await connection.close()
            throw error
        }
        // `auto` plays buffered only over a paired (encrypted) connection, as buffered audio needs.
        let buffered = mode == .buffered || (wantsBuffered && connection.pairingSecret != nil)
        let airPlay2 = buffered || speaksAirPlay2(protocolVersion, address: address, connection: connection, info: info)
        let link = ReceiverLink(name: address.name, connection: connection, traits: traits(of: address), identity: identity,
                            password: password, crypto: crypto, airPlay2: airPlay2, buffered: buffered, features: features, info: info)
        link.followsReceiverClock = airPlay2 && ReceiverClockRule.role(airPlayTXT: address.airPlayTXT) == .receiver
        return link
    }
}
