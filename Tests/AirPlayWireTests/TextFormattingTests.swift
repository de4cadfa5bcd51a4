import AirPlayWire
import Testing

/// The text the protocol writes by hand: printf-style decimals, hex, trimmed lines and JSON.
@Suite struct TextFormattingTests {
    @Test(arguments: [
        (-20.0, "-20.000000"), (0.0, "0.000000"), (12.3456785, "12.345679"), (-0.0000004, "0.000000"),
        (1e-6, "0.000001"), (3600.5, "3600.500000"), (-144.0, "-144.000000"),
    ])
    func fixedDecimalsReadLikePrintf(value: Double, text: String) {
        #expect(TextFormatting.fixed(value) == text)
    }

    @Test func hexIsLowerCaseAndPadded() {
        #expect(TextFormatting.hex([0x00, 0x0A, 0xFF]) == "000aff")
        #expect(TextFormatting.hex(0xBEEF, width: 8) == "0000beef")
    }

    @Test func trimmingRemovesSpacesTabsAndLineEnds() {
        #expect(" \tvolume: -20 \r\n".trimmingWhitespace() == "volume: -20")
        #expect("   ".trimmingWhitespace() == "")
    }

    @Test func jsonSortsKeysEscapesAndWritesNullForWhatIsMissing() {
        let document: JSONValue = ["b": 1, "a": .string("say \"hi\"\n"), "c": .number(nil), "d": [true, 1.5, .number(.infinity)] as JSONValue]
        #expect(String(decoding: document.bytes, as: UTF8.self) == #"{"a":"say \"hi\"\n","b":1,"c":null,"d":[true,1.5,null]}"#)
    }
}
