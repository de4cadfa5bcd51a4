import AirPlayWire
import Foundation
import Testing

/// The values AirPlay devices publish in mDNS: features, flags, device ids and TXT records.
@Suite struct DiscoveryValueTests {
    @Test func featuresUseTheLowCommaHighForm() {
        let appleTV3 = FeatureSet(txtValue: "0x5A7FFFF7,0x1E")
        #expect(appleTV3?.rawValue == 0x1E_5A7F_FFF7)
        #expect(appleTV3?.txtValue == "0x5A7FFFF7,0x1E")
        #expect(FeatureSet(bits: [0, 4, 9]).txtValue == "0x211")
        // With a high word the low one keeps its 8 digits (pyatv joins the words as text).
        #expect(FeatureSet(bits: [0, 48]).txtValue == "0x00000001,0x10000")
        #expect(FeatureSet(txtValue: "0x00000001,0x10000") == FeatureSet(bits: [0, 48]))
        #expect(FeatureSet(txtValue: "0x77")?.rawValue == 0x77)
        #expect(FeatureSet(txtValue: "1518338039")?.rawValue == 0x5A7F_FFF7)
        #expect(FeatureSet(txtValue: "0xZZ") == nil)
        #expect(FeatureSet(txtValue: "0x1,0x2,0x3") == nil)
    }

    @Test func featureBitNamesAreDecoded() {
        let features = FeatureSet(bits: [0, 9, 49, 63])
        #expect(features.bitNumbers == [0, 9, 49, 63])
        #expect(features.names == ["Video", "Audio", "AirPlayVideoV2", "Bit63"])
    }

    @Test func statusFlagsParseHexAndDecimal() {
        #expect(StatusFlags(txtValue: "0x244")?.contains(.pairingRequired) == true)
        #expect(StatusFlags(txtValue: "68")?.rawValue == 0x44)
        #expect(StatusFlags(rawValue: 0x84).txtValue == "0x84")
        #expect(StatusFlags(txtValue: "nope") == nil)
    }

    @Test func deviceIDForms() throws {
        let id = try #require(DeviceID("58:55:ca:1a:e2:88"))
        #expect(id.colonForm == "58:55:CA:1A:E2:88")
        #expect(id.compactForm == "5855CA1AE288")
        #expect(id.raopInstanceName(deviceName: "Apple TV") == "5855CA1AE288@Apple TV")
        #expect(DeviceID("5855CA1AE288") == id)
        #expect(DeviceID("58:55:CA:1A:E2") == nil)
        #expect(DeviceID("58:55:CA:1A:E2:GG") == nil)
        let split = try #require(DeviceID.splitRAOPInstanceName("5855CA1AE288@Kitchen @ Home"))
        #expect(split.id == id)
        #expect(split.deviceName == "Kitchen @ Home")
        #expect(DeviceID.splitRAOPInstanceName("Speaker") == nil)
    }

    @Test func txtRecordKeepsOrderAndLooksUpCaseInsensitively() {
        var txt = TXTRecord(strings: ["deviceid=AA:BB:CC:DD:EE:FF", "Features=0x1", "flag", "", "a=b=c"])
        #expect(txt["features"] == "0x1")
        #expect(txt["flag"] == "")
        #expect(txt["a"] == "b=c")
        txt["model"] = "X1,1"
        txt["flag"] = nil
        #expect(txt.strings == ["deviceid=AA:BB:CC:DD:EE:FF", "Features=0x1", "a=b=c", "model=X1,1"])
    }
}

/// Records taken from real devices (Protocol/vectors/txt-records.json) decode to what a picker must show.
@Suite struct RealDeviceRecordTests {
    struct Vector: Decodable {
        struct Expectation: Decodable {
            var deviceId: String?
            var deviceName: String
            var video: Bool
            var audio: Bool
            var photo: Bool
            var passwordRequired: Bool
            var pairingRequired: Bool
            var model: String?
        }
        var source: String
        var serviceType: String
        var instanceName: String
        var txt: [String]
        var expect: Expectation
    }

    static let vectors: [Vector] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/txt-records.json")
        guard let data = try? Data(contentsOf: url) else { return [] }
        return (try? JSONDecoder().decode([Vector].self, from: data)) ?? []
    }()

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 10)
    }

    @Test(arguments: vectors.indices)
    func decodes(index: Int) throws {
        let vector = Self.vectors[index]
        let record = try #require(ReceiverRecord(serviceType: vector.serviceType, instanceName: vector.instanceName,
                                                 txt: TXTRecord(strings: vector.txt)), "\(vector.source)")
        #expect(record.deviceID?.colonForm == vector.expect.deviceId, "\(vector.source)")
        #expect(record.deviceName == vector.expect.deviceName, "\(vector.source)")
        #expect(record.supportsVideo == vector.expect.video, "\(vector.source)")
        #expect(record.supportsAudio == vector.expect.audio, "\(vector.source)")
        #expect(record.supportsPhoto == vector.expect.photo, "\(vector.source)")
        #expect(record.passwordRequired == vector.expect.passwordRequired, "\(vector.source)")
        #expect(record.pairingRequired == vector.expect.pairingRequired, "\(vector.source)")
        #expect(record.model == vector.expect.model, "\(vector.source)")
    }

    @Test func malformedValuesAreTreatedAsAbsent() throws {
        let record = try #require(ReceiverRecord(serviceType: "_raop._tcp", instanceName: "NOTHEX@Speaker",
                                                 txt: TXTRecord(strings: ["ft=bogus", "sf=0xZZ"])))
        #expect(record.deviceID == nil)
        #expect(record.deviceName == "NOTHEX@Speaker")
        #expect(record.features == [])
        #expect(record.supportsAudio)
        #expect(ReceiverRecord(serviceType: "_http._tcp", instanceName: "x", txt: TXTRecord()) == nil)
    }
}
