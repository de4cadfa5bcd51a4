import AirPlayPlist
import AirPlayWire
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

    /// libplist 2.2 aborts the process (an assertion) when it hands out a string or key that
    /// holds NUL: such lists are refused before it reads them. Found by the `plist` fuzz target.
    @Test func stringsHoldingNULAreRefusedBeforeLibplistAbortsOnThem() throws {
        // {"a": "x\0yé"}: a UTF-16 string with U+0000, as Python's plistlib writes it.
        let binary = try #require(TextHex.bytes("62706c6973743030d1010251616400780000007900e9080b0d0000000000000101000000000000000300000000000000000000000000000016"))
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: binary) }
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a\u{0}b</key><true/></dict></plist>"
        #expect(throws: PropertyListError.self) { try PropertyList(decoding: Array(xml.utf8)) }
        // The same shapes without NUL still read.
        let fine = try #require(TextHex.bytes("62706c6973743030d1010251616400780020007900e9080b0d0000000000000101000000000000000300000000000000000000000000000016"))
        #expect(try PropertyList(decoding: fine) == .dictionary(["a": .string("x yé")]))
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

/// Hex test data.
enum TextHex {
    static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16) }
    }
}
