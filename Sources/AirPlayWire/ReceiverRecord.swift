/// What one mDNS record says about a receiver, decoded from its service type, instance name and TXT.
///
/// `_airplay._tcp` carries `deviceid`, `features`, `flags`, `model`; `_raop._tcp` carries the
/// device id as the `AABBCCDDEEFF@` name prefix and `ft`, `sf`, `am`, `pw`. Decoding is
/// tolerant: a malformed value is treated as absent, never as a reason to drop the receiver.
public struct ReceiverRecord: Hashable, Sendable {
    /// The kinds of service an AirPlay device announces.
    public enum Kind: String, Hashable, Sendable {
        /// `_airplay._tcp`: video, photos, and the AirPlay 2 control channel.
        case airPlay = "_airplay._tcp"
        /// `_raop._tcp`: AirPlay 1 audio.
        case raop = "_raop._tcp"
    }

    /// Which service this record is.
    public var kind: Kind
    /// The device name (for RAOP, the part after `@`).
    public var deviceName: String
    /// The device id (`deviceid`, or the RAOP name prefix).
    public var deviceID: DeviceID?
    /// The feature bits (`features` or `ft`); empty when absent or malformed.
    public var features: FeatureSet
    /// The status flags (`flags` or `sf`); empty when absent or malformed.
    public var statusFlags: StatusFlags
    /// The model (`model` or `am`).
    public var model: String?
    /// True when `pw=true` or the password flag is set.
    public var passwordRequired: Bool
    /// True when the device asks for a PIN or one-time pairing before use.
    public var pairingRequired: Bool
    /// The TXT record as received.
    public var txt: TXTRecord

    /// Decodes a record; nil for service types that are not AirPlay's.
    public init?(serviceType: String, instanceName: String, txt: TXTRecord) {
        guard let kind = Kind(rawValue: serviceType) else { return nil }
        self.kind = kind
        self.txt = txt
        switch kind {
        case .airPlay:
            deviceName = instanceName
            deviceID = txt["deviceid"].flatMap { DeviceID($0) }
            features = txt["features"].flatMap { FeatureSet(txtValue: $0) } ?? []
            statusFlags = txt["flags"].flatMap { StatusFlags(txtValue: $0) } ?? []
            model = txt["model"]
        case .raop:
            if let split = DeviceID.splitRAOPInstanceName(instanceName) {
                deviceID = split.id
                deviceName = split.deviceName
            } else {
                deviceID = nil
                deviceName = instanceName
            }
            features = txt["ft"].flatMap { FeatureSet(txtValue: $0) } ?? []
            statusFlags = txt["sf"].flatMap { StatusFlags(txtValue: $0) } ?? []
            model = txt["am"]
        }
        passwordRequired = txt["pw"]?.lowercased() == "true" || statusFlags.contains(.passwordRequired)
        pairingRequired = !statusFlags.isDisjoint(with: [.pinRequired, .pairingRequired])
    }

    /// Plays video URLs: features bit 0 (AirPlay 1 video) or bit 49 (AirPlay video v2).
    public var supportsVideo: Bool { !features.isDisjoint(with: [.video, .airPlayVideoV2]) }

    /// Shows photos: features bit 1.
    public var supportsPhoto: Bool { features.contains(.photo) }

    /// Plays audio: any RAOP record, or features bit 9.
    public var supportsAudio: Bool { kind == .raop || features.contains(.audio) }
}
