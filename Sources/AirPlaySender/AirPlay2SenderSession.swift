import AirPlayMedia
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation

/// The sender's side of an AirPlay 2 session, on a control connection a pairing encrypted:
/// SETUP phase 1 (NTP timing) and the event channel it names. Audio adds phase 2
/// (`ReceiverLink.setUpAirPlay2`); video goes on with RECORD and `/play` (`VideoPlaySession`).
public final class AirPlay2SenderSession: Sendable {
    /// The event channel (kept open for the session's life).
    public let events: AirPlay2EventConnection

    private init(events: AirPlay2EventConnection) { self.events = events }

    /// Phase 1 over `client`; `timingPort` is our UDP port for the receiver's timing requests
    /// (audio), nil when nothing is timed (video); `ptpPeers` makes it a PTP session whose
    /// timing peers (our grandmaster's addresses first) are these.
    public static func start(client: RAOPClient, timingPort: Int?, ptpPeers: [String]? = nil) async throws(SenderError) -> AirPlay2SenderSession {
        guard client.connection.pairingSecret != nil else { throw notEncrypted }
        let reply = try await setUp(client, .session(describe(timingPort: timingPort, ptpPeers: ptpPeers)))
        guard let eventPort = reply.session?.eventPort else {
            throw SenderError(.refused(status: 0), "SETUP phase 1 was answered with streams, not an eventPort")
        }
        return try await connect(client: client, eventPort: eventPort)
    }

    /// Connects the event channel phase 1 named, keyed by the connection's pairing.
    static func connect(client: RAOPClient, eventPort: Int, inbox: RemoteCommandInbox = RemoteCommandInbox()) async throws(SenderError) -> AirPlay2SenderSession {
        guard let secret = client.connection.pairingSecret else { throw notEncrypted }
        let keys: EventChannelKeys
        do { keys = try EventChannelKeys(sharedSecret: secret) } catch { throw SenderError(.badInput, "event keys: \(error)") }
        let events = try await AirPlay2EventConnection.connect(host: client.connection.connectableHost, port: eventPort, keys: keys, inbox: inbox)
        return AirPlay2SenderSession(events: events)
    }

    static let notEncrypted = SenderError(.refused(status: 0), "AirPlay 2 needs an encrypted connection (pair, or a receiver offering transient pairing)")

    /// Closes the event channel.
    public func close() async { await events.close() }

    /// Phase 1 as this sender writes it: NTP with our timing port, or PTP with our clock's
    /// addresses (our grandmaster's first) as the timing peers.
    package static func describe(timingPort: Int?, ptpPeers: [String]?) -> AirPlay2Setup.Session {
        AirPlay2Setup.Session(
            timingProtocol: ptpPeers?.isEmpty == false ? "PTP" : "NTP", timingPort: timingPort, sessionUUID: UUID().uuidString,
            deviceID: senderDeviceID, name: "airplay", model: "airplay1,1", timingPeers: ptpPeers ?? [], macAddress: senderDeviceID,
            sourceVersion: sourceVersion,
            traits: ["isMultiSelectAirPlay": true, "groupContainsGroupLeader": false, "senderSupportsRelay": false,
                     "statsCollectionEnabled": false])
    }

    /// A realtime stream (type 96) as this sender sets it up: ALAC or PCM at 44.1 kHz/16-bit,
    /// 352 frames a packet, its SSRC as the stream's connection id.
    package static func realtimeStream(alac: Bool, key: [UInt8], controlPort: Int, ssrc: UInt32) -> AirPlay2Setup.Stream {
        AirPlay2Setup.Stream(type: AirPlay2Setup.realtime, compression: alac ? 2 : 1, audioFormat: alac ? 0x40000 : 0x800,
                             samplesPerFrame: 352, sampleRate: 44100, streamKey: key, controlPort: controlPort,
                             latencyMin: 11025, latencyMax: 88200, isMedia: true, audioMode: "default",
                             streamConnectionID: Int64(ssrc), supportsDynamicStreamID: false)
    }

    /// A buffered stream (type 103) as this sender sets it up.
    package static func bufferedStream(compression: Int, audioFormat: UInt64, samplesPerFrame: Int, format: PCMFormat, key: [UInt8],
                               ssrc: UInt32) -> AirPlay2Setup.Stream {
        AirPlay2Setup.Stream(type: AirPlay2Setup.buffered, compression: compression, audioFormat: audioFormat,
                             samplesPerFrame: samplesPerFrame, sampleRate: format.sampleRate, bitsPerSample: format.bitsPerSample,
                             streamKey: key, audioMode: "default", streamConnectionID: Int64(ssrc), supportsDynamicStreamID: false,
                             clientID: "airplay")
    }

    /// A SETUP with `setup`'s body; its answer, read, or an error saying what came back instead.
    package static func setUp(_ client: RAOPClient, _ setup: AirPlay2Setup) async throws(SenderError) -> AirPlay2SetupReply {
        // Read as the setup machine reads it: an empty 200 (shairport-sync 5 to what it does not
        // serve) and a reply without the keys wanted are each named, with the keys that came.
        return try SenderSetupMachine.setupReply(try await client.exchange(.plist("SETUP", setup.plist))).get()
    }

    /// A request with a binary plist body; its answer's plist (an empty dictionary for none).
    static func plistRequest(_ client: RAOPClient, _ method: String, _ body: PropertyList) async throws(SenderError) -> PropertyList {
        let response = try await client.request(.plist(method, body))
        let bytes = Array(response.body.readableBytesView)
        guard !bytes.isEmpty else { return .dictionary([:]) }
        do {
            return try PropertyList(decoding: bytes)
        } catch {
            throw SenderError(.refused(status: response.status), "\(method) answered something that is not a property list")
        }
    }

    /// The AirPlay version this sender gives (`sourceVersion`, and its `User-Agent`).
    static let sourceVersion = "220.68"

    /// The device id this sender gives AirPlay 2 receivers (locally administered, fixed per
    /// process: receivers only log it).
    package static let senderDeviceID: String = {
        let bytes = [0x02] + (0..<5).map { _ in UInt8.random(in: 0...255) }
        return bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }()
}
