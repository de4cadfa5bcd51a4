import AirPlayPlist
import Foundation
import Testing

/// Property lists go through libplist in both encodings AirPlay uses.
@Suite struct PropertyListTests {
    let sample: PropertyList = .dictionary([
        "deviceid": .string("AA:BB:CC:DD:EE:FF"),
        "features": .integer(0x1E_5A7F_FFF7),
        "negative": .integer(-5),
        "rate": .real(0.5),
        "readyToPlay": .bool(true),
        "loadedTimeRanges": .array([.dictionary(["start": .real(0), "duration": .real(12.5)])]),
        "pk": .data([0, 1, 2, 255]),
        "when": .date(Date(timeIntervalSinceReferenceDate: 1000)),
        "name": .string("Wohnzimmer – Küche"),
    ])

    @Test(arguments: [PropertyListFormat.xml, .binary])
    func roundTrips(format: PropertyListFormat) throws {
        let bytes = sample.encoded(as: format)
        #expect(PropertyList.detectFormat(of: bytes) == format)
        #expect(try PropertyList(decoding: bytes) == sample)
    }

    @Test func xmlIsReadableText() {
        let text = String(decoding: PropertyList.dictionary(["name": .string("Box")]).encoded(as: .xml), as: UTF8.self)
        #expect(text.contains("<key>name</key>"))
        #expect(text.contains("<string>Box</string>"))
    }

    @Test func binaryStartsWithMagic() {
        #expect(PropertyList.string("x").encoded(as: .binary).starts(with: Array("bplist00".utf8)))
    }

    @Test func garbageIsAnError() {
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: Array("not a plist".utf8)) }
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: []) }
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: Array("bplist00\u{0}\u{1}".utf8)) }
    }

    @Test func hostileNestingIsRefused() {
        let deep = String(repeating: "<array>", count: 200) + String(repeating: "</array>", count: 200)
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\">\(deep)</plist>"
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: Array(xml.utf8)) }
    }

    @Test func accessors() {
        #expect(sample["features"]?.integerValue == 0x1E_5A7F_FFF7)
        #expect(sample["rate"]?.doubleValue == 0.5)
        #expect(sample["readyToPlay"]?.boolValue == true)
        #expect(sample["name"]?.stringValue == "Wohnzimmer – Küche")
        #expect(sample["missing"] == nil)
    }
}
