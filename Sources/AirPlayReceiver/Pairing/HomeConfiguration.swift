import AirPlayPlist
import AirPlayWire

/// `POST /configure`: the Home app, adding the box as a speaker, sends what it wants set
/// (`ConfigurationDictionary`: `Device_Name`, `Access_Control_Level`, `Enable_HK_Access_Control`,
/// `Password`) and reads back who the box is.
///
/// The answer is the box as configured: `Identifier` (the pairing identifier, `pi`),
/// `PublicKey` (its Ed25519 key, 32 bytes), `Device_Name`, `Access_Control_Level` (0 anyone on
/// the network, 1 paired controllers only) and `Enable_HK_Access_Control`. Nothing asked is
/// applied: the name and who may play are the box owner's, set in `airplayd.toml`; a sender on
/// the network may not change them. (shairport-sync 5 applies only `Enable_HK_Access_Control`;
/// airplay2-receiver applies all four.) The Home app asks for a PIN only for a receiver whose
/// status flags say "PIN required" (0x8), which airplayd never sets: adding it needs none.
public enum HomeConfiguration {
    /// The keys of a request's `ConfigurationDictionary` that are read (for the log).
    static let requestKeys = ["Device_Name", "Access_Control_Level", "Enable_HK_Access_Control", "Password"]

    /// What the request asked for, as text for the log (the password never).
    public static func describeRequest(_ body: [UInt8]) throws(RequestError) -> String {
        guard !body.isEmpty else { return "nothing" }
        let plist: PropertyList
        do {
            plist = try PropertyList(decoding: body)
        } catch {
            throw RequestError(reason: "the /configure body is not a property list: \(error)")
        }
        guard case .dictionary(let top) = plist else { throw RequestError(reason: "the /configure body is not a dictionary") }
        guard let asked = top["ConfigurationDictionary"] else { return "nothing" }
        guard case .dictionary(let entries) = asked else { throw RequestError(reason: "ConfigurationDictionary is not a dictionary") }
        return requestKeys.compactMap { key in
            guard let value = entries[key] else { return nil }
            if key == "Password" { return "Password=(\(value.stringValue?.isEmpty == false ? "set" : "none"))" }
            return "\(key)=\(value.stringValue ?? value.integerValue.map(String.init) ?? value.boolValue.map(String.init) ?? "?")"
        }.joined(separator: " ")
    }

    /// A body that cannot be read.
    public struct RequestError: Error, Equatable {
        /// Why.
        public var reason: String
    }

    /// The answer: the box as it is configured.
    public static func reply(identifier: String, publicKey: [UInt8], name: String, access: AccessControl) -> PropertyList {
        .dictionary([
            "Identifier": .string(identifier),
            "PublicKey": .data(publicKey),
            "Device_Name": .string(name),
            "Access_Control_Level": .integer(access == .paired ? 1 : 0),
            "Enable_HK_Access_Control": .bool(access == .paired),
        ])
    }
}

extension ReceiverPairing {
    /// `POST /configure`, answered with the box as configured (`HomeConfiguration`); a body
    /// that is not a property list gets 400.
    func configure(_ request: AirPlayRequest, name: String) -> AirPlayResponse {
        let asked: String
        do {
            asked = try HomeConfiguration.describeRequest(Array(request.body.readableBytesView))
        } catch {
            return .text(status: 400, error.reason)
        }
        logger.info("Home configuration asked, nothing changed (airplayd.toml decides)", metadata: ["asked": "\(asked)"])
        let identity = store.identity
        return ControlRouter.plistResponse(HomeConfiguration.reply(identifier: identity.identifier, publicKey: identity.publicKey,
                                                                   name: name, access: access), format: .binary)
    }
}
