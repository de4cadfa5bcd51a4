import AirPlayPlist
import AirPlayWire
@testable import AirPlayReceiver
import Testing

/// AirPlay 2 SETUP bodies as pyatv 0.18 sends them (its `airplayv2.py`), and the refusals.
@Suite struct AirPlay2SetupTests {
    /// Phase 1, key for key as pyatv sends it.
    let phase1: PropertyList = .dictionary([
        "deviceID": .string("AA:BB:CC:DD:EE:FF"), "sessionUUID": .string("6E8D2B8B-3B39-4C35-9E2B-1B7A9B0C0D0E"),
        "timingPort": .integer(50123), "timingProtocol": .string("NTP"), "isMultiSelectAirPlay": .bool(true),
        "groupContainsGroupLeader": .bool(false), "macAddress": .string("AA:BB:CC:DD:EE:FF"), "model": .string("iPhone14,3"),
        "name": .string("pyatv"), "osBuildVersion": .string("20F66"), "osName": .string("iPhone OS"), "osVersion": .string("16.5"),
        "senderSupportsRelay": .bool(false), "sourceVersion": .string("690.7.1"), "statsCollectionEnabled": .bool(false),
    ])

    /// Phase 2: one realtime PCM stream.
    func phase2(type: Int64 = 0x60, ct: Int64 = 1, shk: [UInt8] = [UInt8](repeating: 9, count: 32)) -> PropertyList {
        .dictionary(["streams": .array([.dictionary([
            "audioFormat": .integer(0x800), "audioMode": .string("default"), "controlPort": .integer(50124), "ct": .integer(ct),
            "isMedia": .bool(true), "latencyMax": .integer(88200), "latencyMin": .integer(11025), "shk": .data(shk),
            "spf": .integer(352), "sr": .integer(44100), "type": .integer(type), "supportsDynamicStreamID": .bool(false),
            "streamConnectionID": .integer(12345),
        ])])])
    }

    @Test func phaseOneNamesNTPTimingAndTheSender() throws {
        guard case .session(let session) = try AirPlay2Setup(plist: phase1) else { Issue.record("not phase 1"); return }
        #expect(session.timingProtocol == "NTP" && session.timingPort == 50123)
        #expect(session.name == "pyatv" && session.model == "iPhone14,3")
        let reply = AirPlay2SetupReply.session(.init(eventPort: 40000, timingPort: 40001)).plist
        #expect(reply["eventPort"]?.integerValue == 40000 && reply["timingPort"]?.integerValue == 40001)
    }

    @Test func phaseTwoListsARealtimePCMStreamWithItsKey() throws {
        guard case .streams(let streams) = try AirPlay2Setup(plist: phase2()) else { Issue.record("not phase 2"); return }
        #expect(streams.count == 1)
        #expect(streams[0].type == 96 && streams[0].compression == 1 && streams[0].audioFormat == 0x800)
        #expect(streams[0].samplesPerFrame == 352 && streams[0].sampleRate == 44100 && streams[0].controlPort == 50124)
        #expect(streams[0].streamKey == [UInt8](repeating: 9, count: 32))
        let reply = AirPlay2SetupReply.streams([.init(type: 96, dataPort: 41000, controlPort: 41001)]).plist
        #expect(reply["streams"] == .array([.dictionary(["type": .integer(96), "dataPort": .integer(41000), "controlPort": .integer(41001)])]))
    }

    @Test(arguments: [
        (PropertyList.dictionary(["timingProtocol": .string("PTP")]), 451, "PTP"),
        (.dictionary(["foo": .integer(1)]), 400, "neither"),
        (.array([]), 400, "dictionary"),
        (.dictionary(["timingProtocol": .string("NTP"), "timingPort": .integer(70000)]), 400, "port"),
        (.dictionary(["streams": .array([])]), 400, "1 to 4"),
        (.dictionary(["timingProtocol": .string("None")]), 451, "None"),
        (.dictionary(["timingProtocol": .string("None"), "isRemoteControlOnly": .bool(false)]), 451, "None"),
    ])
    func badBodiesAreRefusedWithAReason(body: PropertyList, status: Int, hint: String) {
        #expect(throws: AirPlay2Setup.Refusal.self) { try AirPlay2Setup(plist: body) }
        do {
            _ = try AirPlay2Setup(plist: body)
        } catch {
            #expect(error.status == status && error.description.contains(hint), "\(error)")
        }
    }

    /// An iPhone that only wants to remote-control the box sets up a session without timing:
    /// it gets an event port and nothing else (shairport-sync 5 answers it so).
    @Test func aRemoteControlOnlySessionIsItsOwnKind() throws {
        let body: PropertyList = .dictionary([
            "timingProtocol": .string("None"), "isRemoteControlOnly": .bool(true), "name": .string("iPhone"),
            "model": .string("iPhone16,2"), "sessionUUID": .string("A"),
        ])
        guard case .remoteControl(let session) = try AirPlay2Setup(plist: body) else { Issue.record("not remote control"); return }
        #expect(session.name == "iPhone" && session.model == "iPhone16,2" && session.timingPort == nil)
        #expect(AirPlay2SetupReply.session(.init(eventPort: 40000)).plist == .dictionary(["eventPort": .integer(40000)]))
    }

    /// Keys nobody here reads (iOS 26's `mc2ucDetectionSSMGroupInfo`, shairport-sync #2203) are
    /// passed over.
    @Test func unknownPhaseOneKeysAreTolerated() throws {
        guard case .dictionary(var entries) = phase1 else { return }
        entries["mc2ucDetectionSSMGroupInfo"] = .dictionary(["groupID": .string("G"), "addresses": .array([.data([1, 2, 3])])])
        entries["someFutureKey"] = .array([.integer(1)])
        guard case .session(let session) = try AirPlay2Setup(plist: .dictionary(entries)) else { Issue.record("not phase 1"); return }
        #expect(session.timingProtocol == "NTP")
    }

    @Test func unsupportedStreamsAreNamed() {
        for (body, hint) in [(phase2(type: 103), "buffered"), (phase2(ct: 64), "ct=64"), (phase2(shk: [1, 2]), "shk")] {
            do {
                _ = try AirPlay2Setup(plist: body)
                Issue.record("accepted")
            } catch {
                #expect(error.description.contains(hint), "\(error)")
            }
        }
    }
}
