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
            "protovers": .string(ReceiverIdentity.protocolVersion),
            "srcvers": .string(ReceiverIdentity.sourceVersion),
            "pw": .bool(capabilities.passwordRequired),
            // The spellings AirPlay 2 readers use (shairport-sync, an Apple TV): `deviceID`,
            // `sourceVersion`, `protocolVersion`, and the volume a new session starts at as a
            // real in dB (pyatv raises on an integer; with it, it sends no volume of its own).
            "deviceID": .string(deviceID.colonForm),
            "sourceVersion": .string(ReceiverIdentity.sourceVersion),
            "protocolVersion": .string(ReceiverIdentity.protocolVersion),
            "initialVolume": .real(ReceiverIdentity.initialVolume),
        ]
        if let pairing = capabilities.pairingIdentity {
            info["pi"] = .string(pairing.identifier)
            // The Ed25519 key as 32 bytes of data (the TXT record carries it in hex).
            info["pk"] = TextFormatting.bytes(hex: pairing.publicKey).map(PropertyList.data) ?? .string(pairing.publicKey)
        }
        if capabilities.features.contains(.bufferedAudio) {
            // The `audioFormat` bits a SETUP may name, per stream type (AirPlay 2 senders pick
            // the stream's format from these).
            let formats = Int64(AirPlay2Setup.playedFormatMask)
            info["supportedFormats"] = .dictionary(["audioStream": .integer(formats), "bufferStream": .integer(formats)])
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
