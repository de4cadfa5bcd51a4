import AirPlayPlist
import AirPlayWire

/// The `/server-info` and `/info` property list: who this receiver is and what it can do.
public struct ServerInfo: Hashable, Sendable {
    /// The device id.
    public var deviceID: DeviceID
    /// The device name as currently published.
    public var name: String
    /// The capabilities behind `features` and `statusFlags`.
    public var capabilities: ReceiverCapabilities

    /// Server info from its parts.
    public init(deviceID: DeviceID, name: String, capabilities: ReceiverCapabilities) {
        self.deviceID = deviceID
        self.name = name
        self.capabilities = capabilities
    }

    /// The property list senders read.
    public var propertyList: PropertyList {
        var info: [String: PropertyList] = [
            "deviceid": .string(deviceID.colonForm),
            "macAddress": .string(deviceID.colonForm),
            "features": .integer(Int64(bitPattern: capabilities.features.rawValue)),
            "statusFlags": .integer(Int64(capabilities.statusFlags.rawValue)),
            "model": .string(ReceiverIdentity.model),
            "name": .string(name),
            "protovers": .string(capabilities.protocolVersion),
            "srcvers": .string(capabilities.sourceVersion),
            "pw": .bool(capabilities.passwordRequired),
            // The spellings AirPlay 2 readers use (shairport-sync, an Apple TV): `deviceID`,
            // `sourceVersion`, `protocolVersion`, and the volume a new session starts at as a
            // real in dB (pyatv raises on an integer; with it, it sends no volume of its own).
            "deviceID": .string(deviceID.colonForm),
            "sourceVersion": .string(capabilities.sourceVersion),
            "protocolVersion": .string(capabilities.protocolVersion),
            "initialVolume": .real(ReceiverIdentity.initialVolume),
        ]
        if let pairing = capabilities.pairingIdentity {
            info["pi"] = .string(pairing.identifier)
            // The Ed25519 key as 32 bytes of data (the TXT record carries it in hex).
            info["pk"] = TextFormatting.bytes(hex: pairing.publicKey).map(PropertyList.data) ?? .string(pairing.publicKey)
        }
        if capabilities.appleProfile {
            info["psi"] = info["pi"]
            info["featuresEx"] = .string(capabilities.features.featuresExValue)
            info["vv"] = .integer(2)
            if capabilities.audio {
                // The `audioFormat` bits a SETUP may name, per stream type, as decoded here
                // (iOS picks AAC for buffered audio when it is listed: a 461 would follow).
                let formats = PropertyList.integer(Int64(capabilities.supportedAudioFormats))
                var supported: [String: PropertyList] = ["audioStream": formats]
                if capabilities.bufferedAudio { supported["bufferStream"] = formats }
                info["supportedFormats"] = .dictionary(supported)
            }
        }
        if capabilities.airPlay2Pairing {
            // iOS asks for the `_airplay._tcp` record itself (`qualifier: [txtAirPlay]`): its
            // strings, each behind its length byte, as in DNS.
            let txt = ReceiverAdvertisement(deviceID: deviceID, port: 0, capabilities: capabilities).airPlayTXT
            info["txtAirPlay"] = .data(txt.strings.flatMap { string -> [UInt8] in
                let bytes = Array(string.utf8.prefix(255))
                return [UInt8(bytes.count)] + bytes
            })
        }
        return .dictionary(info)
    }
}
