import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation

/// The sender's side of an AirPlay 2 session, on a control connection a pairing encrypted:
/// SETUP phase 1 (NTP timing) and the event channel it names. Audio adds phase 2
/// (`RAOPLink.setUpAirPlay2`); video goes on with RECORD and `/play` (`VideoPlaySession`).
public final class AirPlay2SenderSession: Sendable {
    /// The event channel (kept open for the session's life).
    public let events: AirPlay2EventConnection

    private init(events: AirPlay2EventConnection) { self.events = events }

    /// Phase 1 over `client`; `timingPort` is our UDP port for the receiver's timing requests
    /// (audio), nil when nothing is timed (video); `ptpPeers` makes it a PTP session whose
    /// timing peers (our grandmaster's addresses first) are these.
    public static func start(client: RAOPClient, timingPort: Int?, ptpPeers: [String]? = nil) async throws(SenderError) -> AirPlay2SenderSession {
        guard let secret = client.connection.pairingSecret else {
            throw SenderError(.refused(status: 0), "AirPlay 2 needs an encrypted connection (pair, or a receiver offering transient pairing)")
        }
        var body: [String: PropertyList] = [
            "timingProtocol": .string("NTP"), "sessionUUID": .string(UUID().uuidString),
            "deviceID": .string(senderDeviceID), "macAddress": .string(senderDeviceID), "name": .string("airplay"),
            "model": .string("airplay1,1"), "sourceVersion": .string("220.68"), "isMultiSelectAirPlay": .bool(true),
            "groupContainsGroupLeader": .bool(false), "senderSupportsRelay": .bool(false), "statsCollectionEnabled": .bool(false),
        ]
        if let timingPort { body["timingPort"] = .integer(Int64(timingPort)) }
        if let ptpPeers, let first = ptpPeers.first {
            body["timingProtocol"] = .string("PTP")
            let peer = PropertyList.dictionary(["Addresses": .array(ptpPeers.map { .string($0) }), "ID": .string(first), "DeviceType": .integer(0)])
            body["timingPeerInfo"] = peer
            body["timingPeerList"] = .array([peer])
        }
        let reply = try await plistRequest(client, "SETUP", body)
        guard let eventPort = reply["eventPort"]?.integerValue, (1...65535).contains(eventPort) else {
            throw SenderError(.refused(status: 0), "SETUP phase 1 gave no eventPort")
        }
        let keys: EventChannelKeys
        do { keys = try EventChannelKeys(sharedSecret: secret) } catch { throw SenderError(.badInput, "event keys: \(error)") }
        let events = try await AirPlay2EventConnection.connect(host: client.connection.connectableHost,
                                                               port: Int(eventPort), keys: keys)
        return AirPlay2SenderSession(events: events)
    }

    /// Closes the event channel.
    public func close() async { await events.close() }

    /// A request with a binary plist body; its answer's plist (an empty dictionary for none).
    static func plistRequest(_ client: RAOPClient, _ method: String, _ body: [String: PropertyList]) async throws(SenderError) -> PropertyList {
        let response = try await client.request(method, body: PropertyList.dictionary(body).encoded(as: .binary),
                                                contentType: PropertyListFormat.binary.contentType)
        let bytes = Array(response.body.readableBytesView)
        guard !bytes.isEmpty else { return .dictionary([:]) }
        do {
            return try PropertyList(decoding: bytes)
        } catch {
            throw SenderError(.refused(status: response.status), "\(method) answered something that is not a property list")
        }
    }

    /// The device id this sender gives AirPlay 2 receivers (locally administered, fixed per
    /// process: receivers only log it).
    static let senderDeviceID: String = {
        let bytes = [0x02] + (0..<5).map { _ in UInt8.random(in: 0...255) }
        return bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }()
}
