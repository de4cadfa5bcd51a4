import AirPlayPlist
import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

/// The AirPlay 2 SETUP bodies and replies, both ways (Protocol/vectors/airplay2-setup.json, made
/// by tools/lib/make_airplay2_setup_vectors.py with Python's plistlib). A sender writes what
/// `AirPlay2Setup.plist` gives and reads `AirPlay2SetupReply`; a receiver the other way round;
/// every vector must read as expected and survive encode → binary plist → decode unchanged.
@Suite struct AirPlay2SetupCodecTests {
    struct File: Decodable {
        struct Session: Decodable {
            var kind: String
            var timingProtocol: String?, timingPort: Int?, sessionUUID: String?, deviceID: String?, name: String?, model: String?
            var timingPeers: [String]?, macAddress: String?, sourceVersion: String?, groupUUID: String?
            var osName: String?, osVersion: String?, osBuildVersion: String?, traits: [String: Bool]?
            var streams: [Stream]?
        }
        struct Stream: Decodable {
            var type: Int, compression: Int, audioFormat: UInt64, samplesPerFrame: Int, sampleRate: Int, bitsPerSample: Int
            var streamKey: String, controlPort: Int?, latencyMin: Int?, latencyMax: Int?, isMedia: Bool?, audioMode: String?
            var streamConnectionID: Int64?, supportsDynamicStreamID: Bool?, clientID: String?
        }
        struct Request: Decodable { var what: String, plist: String, expect: Session }
        struct ReplyExpectation: Decodable {
            struct Stream: Decodable { var type: Int, dataPort: Int, controlPort: Int?, audioBufferSize: Int? }
            var kind: String, eventPort: Int?, timingPort: Int?, timingPeers: [String]?, streams: [Stream]?
        }
        struct Reply: Decodable { var what: String, plist: String, expect: ReplyExpectation?, error: String? }
        var requests: [Request]
        var replies: [Reply]
    }

    static let file = try? ProtocolVectors.load(File.self, from: "airplay2-setup.json")

    static func plist(_ hex: String) throws -> PropertyList { try PropertyList(decoding: VectorDocument.bytes(hex: hex) ?? []) }

    static func expected(_ expect: File.Session) -> AirPlay2Setup {
        if expect.kind == "streams" {
            return .streams((expect.streams ?? []).map {
                AirPlay2Setup.Stream(type: $0.type, compression: $0.compression, audioFormat: $0.audioFormat,
                                     samplesPerFrame: $0.samplesPerFrame, sampleRate: $0.sampleRate, bitsPerSample: $0.bitsPerSample,
                                     streamKey: VectorDocument.bytes(hex: $0.streamKey) ?? [], controlPort: $0.controlPort,
                                     latencyMin: $0.latencyMin, latencyMax: $0.latencyMax, isMedia: $0.isMedia, audioMode: $0.audioMode,
                                     streamConnectionID: $0.streamConnectionID, supportsDynamicStreamID: $0.supportsDynamicStreamID,
                                     clientID: $0.clientID)
            })
        }
        let session = AirPlay2Setup.Session(
            timingProtocol: expect.timingProtocol ?? "", timingPort: expect.timingPort, sessionUUID: expect.sessionUUID,
            deviceID: expect.deviceID, name: expect.name, model: expect.model, timingPeers: expect.timingPeers ?? [],
            macAddress: expect.macAddress, sourceVersion: expect.sourceVersion, groupUUID: expect.groupUUID, osName: expect.osName,
            osVersion: expect.osVersion, osBuildVersion: expect.osBuildVersion, traits: expect.traits ?? [:])
        return expect.kind == "remoteControl" ? .remoteControl(session) : .session(session)
    }

    @Test func vectorsArePresent() {
        #expect(Self.file?.requests.count == 5 && Self.file?.replies.count == 4)
    }

    @Test(arguments: file?.requests ?? [])
    func requestsReadAsSendersMeantThemAndSurviveOurEncoder(vector: File.Request) throws {
        let setup = try AirPlay2Setup(plist: Self.plist(vector.plist), ptp: true)
        #expect(setup == Self.expected(vector.expect), "\(vector.what)")
        let again = try AirPlay2Setup(plist: PropertyList(decoding: setup.plist.encoded(as: .binary)), ptp: true)
        #expect(again == setup, "\(vector.what)")
    }

    @Test(arguments: file?.replies ?? [])
    func repliesReadAsReceiversWroteThemAndSurviveOurEncoder(vector: File.Reply) throws {
        let body = try Self.plist(vector.plist)
        guard let expect = vector.expect else {
            #expect(throws: PropertyListError.self) { try AirPlay2SetupReply(plist: body) }
            do { _ = try AirPlay2SetupReply(plist: body) } catch { #expect(error.description.contains(vector.error ?? "?")) }
            return
        }
        let reply = try AirPlay2SetupReply(plist: body)
        let wanted: AirPlay2SetupReply = expect.kind == "streams"
            ? .streams((expect.streams ?? []).map { .init(type: $0.type, dataPort: $0.dataPort, controlPort: $0.controlPort,
                                                          audioBufferSize: $0.audioBufferSize) })
            : .session(.init(eventPort: expect.eventPort ?? 0, timingPort: expect.timingPort, timingPeers: expect.timingPeers ?? []))
        #expect(reply == wanted, "\(vector.what)")
        #expect(try AirPlay2SetupReply(plist: PropertyList(decoding: reply.plist.encoded(as: .binary))) == reply)
    }

    /// What our sender writes is what the receiver's rules accept, key for key: phase 1 on PTP
    /// names our clock's addresses twice, as Apple's senders do.
    @Test func aPTPSessionNamesItsPeersInBothPlaces() {
        let setup = AirPlay2Setup.session(.init(timingProtocol: "PTP", timingPeers: ["10.0.0.2", "fe80::2"]))
        let peer = PropertyList.dictionary(["Addresses": .array([.string("10.0.0.2"), .string("fe80::2")]), "ID": .string("10.0.0.2"),
                                            "DeviceType": .integer(0)])
        #expect(setup.plist == .dictionary(["timingProtocol": .string("PTP"), "timingPeerInfo": peer, "timingPeerList": .array([peer])]))
    }
}
