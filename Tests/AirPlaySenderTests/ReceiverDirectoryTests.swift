import AirPlaySender
import AirPlayWire
import Foundation
import Testing

/// `airplay list` merges a device's two services and puts video receivers first.
@Suite struct ReceiverDirectoryTests {
    private func service(_ type: String, _ name: String, _ txt: [String], address: String = "192.0.2.10",
                         port: UInt16 = 7000) -> DiscoveredReceiver.Service {
        let record = ReceiverRecord(serviceType: type, instanceName: name, txt: TXTRecord(strings: txt))!
        return DiscoveredReceiver.Service(kind: record.kind, instanceName: name, hostName: "host.local",
                                          addresses: [address], port: port, record: record)
    }

    // Records as real devices publish them (see Protocol/vectors/txt-records.json).
    var appleTV3: [DiscoveredReceiver.Service] {[
        service("_airplay._tcp", "Apple TV", ["deviceid=58:55:CA:1A:E2:88", "features=0x5A7FFFF7,0x1E", "flags=0x44",
                                              "model=AppleTV3,2", "srcvers=220.68", "vv=2"]),
        service("_raop._tcp", "5855CA1AE288@Apple TV", ["cn=0,1,2,3", "et=0,3,5", "ft=0x5A7FFFF7,0x1E", "sf=0x44",
                                                        "am=AppleTV3,2", "vs=220.68", "tp=UDP"], port: 49152),
    ]}
    var airportExpress: [DiscoveredReceiver.Service] {[
        service("_raop._tcp", "48A195E5039A@AirPort Express", ["am=AirPort10,115", "cn=0,1", "et=0,4",
                                                               "ft=0x445D0A00,0x1C340", "sf=0x4", "tp=UDP"],
                address: "192.0.2.20"),
    ]}
    var shairport: [DiscoveredReceiver.Service] {[
        service("_raop._tcp", "0A1B2C3D4E5F@Attic", ["txtvers=1", "ch=2", "cn=0,1", "et=0,1", "pw=true", "sf=0x4",
                                                     "am=ShairportSync", "vs=105.1"], address: "192.0.2.30", port: 5000),
    ]}

    @Test func servicesOfOneDeviceAreMerged() throws {
        let receivers = ReceiverDirectory.merge(appleTV3 + airportExpress)
        #expect(receivers.count == 2)
        let tv = try #require(receivers.first { $0.name == "Apple TV" })
        #expect(tv.services.map(\.kind) == [.airPlay, .raop])
        #expect(tv.deviceID?.colonForm == "58:55:CA:1A:E2:88")
        #expect(tv.port == 7000, "the AirPlay port addresses the device")
        #expect(tv.abilities == ["video", "audio", "photo"])
    }

    /// Two zones of one box that (wrongly) publish one device id stay two receivers: each has
    /// its own name, so merging them would hide one from the user.
    @Test func zonesSharingADeviceIDByMistakeStayTwoReceivers() throws {
        func zone(_ name: String, port: UInt16) -> [DiscoveredReceiver.Service] {[
            service("_airplay._tcp", name, ["deviceid=02:FC:00:00:00:01", "features=0x838219", "model=airplayd1,1"], port: port),
            service("_raop._tcp", "02FC00000001@\(name)", ["ft=0x838219", "cn=0,1", "et=0,1", "tp=UDP"], port: port),
        ]}
        let receivers = ReceiverDirectory.merge(zone("Kitchen", port: 7000) + zone("Hall", port: 7001))
        #expect(receivers.map(\.name) == ["Kitchen", "Hall"])
        #expect(receivers.map(\.port) == [7000, 7001])
        #expect(receivers.allSatisfy { $0.services.map(\.kind) == [.airPlay, .raop] })
    }

    @Test func videoReceiversComeFirstEvenWhenAnAudioOnlyNameSortsFirst() {
        let ranked = ReceiverDirectory.rank(ReceiverDirectory.merge(airportExpress + shairport + appleTV3))
        #expect(ranked.map(\.name) == ["Apple TV", "AirPort Express", "Attic"])
    }

    @Test func requirementsAreShown() throws {
        let attic = try #require(ReceiverDirectory.merge(shairport).first)
        #expect(attic.requirements == ["password required"])
        let paired = ReceiverDirectory.merge([service("_airplay._tcp", "Living Room",
            ["deviceid=CC:D2:81:7C:45:EA", "features=0x4A7FDFD5,0xBC157FDE", "flags=0x244", "model=AppleTV6,2"])])
        #expect(paired.first?.requirements == ["pairing required"])
        #expect(paired.first?.supportsVideo == true)
        // Once this sender holds credentials for it, the listing says so.
        #expect(ReceiverListing.text(paired).contains("pairing required"))
        #expect(ReceiverListing.text(paired, paired: ["CC:D2:81:7C:45:EA"]).hasSuffix("; paired\n"))
        #expect(ReceiverListing.json(paired, paired: ["CC:D2:81:7C:45:EA"]).contains("\"paired\" : true"))
    }

    @Test func textListingHasOneAlignedLinePerReceiver() {
        let text = ReceiverListing.text(ReceiverDirectory.rank(ReceiverDirectory.merge(appleTV3 + shairport)))
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("Apple TV  192.0.2.10:7000  AppleTV3,2     video, audio, photo"))
        #expect(lines[1].hasPrefix("Attic     192.0.2.30:5000  ShairportSync  audio; password required"))
    }

    @Test func jsonListingDecodesFeatures() throws {
        let json = ReceiverListing.json(ReceiverDirectory.rank(ReceiverDirectory.merge(appleTV3 + shairport)))
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(array.count == 2)
        #expect(array[0]["name"] as? String == "Apple TV")
        #expect(array[0]["video"] as? Bool == true)
        let features = try #require(array[0]["features"] as? [String: Any])
        #expect((features["names"] as? [String])?.contains("VideoHTTPLiveStreams") == true)
        #expect(array[1]["deviceId"] as? String == "0A:1B:2C:3D:4E:5F")
        #expect(array[1]["passwordRequired"] as? Bool == true)
    }
}
