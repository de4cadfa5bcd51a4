import AirPlayPairing
import Testing

/// TLV8 as HAP writes it: type, length, value; values over 255 bytes in 255-byte fragments.
@Suite struct TLV8Tests {
    @Test func shortItemsAreTypeLengthValue() throws {
        var tlv = TLV8()
        tlv.append(.state, byte: 1)
        tlv.append(.method, byte: 0)
        #expect(tlv.bytes == [0x06, 0x01, 0x01, 0x00, 0x01, 0x00])
        let parsed = try TLV8(bytes: tlv.bytes)
        #expect(parsed.byte(.state) == 1 && parsed.byte(.method) == 0)
    }

    @Test func aLongValueIsFragmentedAndJoinedAgain() throws {
        let key = (0..<384).map { UInt8(truncatingIfNeeded: $0) }
        let tlv = TLV8([(.publicKey, key), (.state, [2])])
        let bytes = tlv.bytes
        // 384 bytes: one item of 255, one of 129, then the state.
        #expect(bytes.count == 2 + 255 + 2 + 129 + 3)
        #expect(bytes[0] == 0x03 && bytes[1] == 255 && bytes[257] == 0x03 && bytes[258] == 129)
        let parsed = try TLV8(bytes: bytes)
        #expect(parsed[.publicKey] == key && parsed.byte(.state) == 2)
    }

    @Test func aValueOfExactly255BytesThenAnotherItemOfTheSameTypeAfterASeparator() throws {
        let first = [UInt8](repeating: 7, count: 255)
        let tlv = TLV8([(.identifier, first), (.separator, []), (.identifier, [1])])
        let parsed = try TLV8(bytes: tlv.bytes)
        #expect(parsed.items.count == 3)
        #expect(parsed.items[0].value == first && parsed.items[2].value == [1])
    }

    @Test func aValueOfExactly255BytesRightBeforeAnotherOfItsTypeEndsWithAnEmptyFragment() throws {
        let first = [UInt8](repeating: 7, count: 255)
        let tlv = TLV8([(.identifier, first), (.identifier, [1])])
        #expect(tlv.bytes.count == 2 + 255 + 2 + 3, "the 255-byte value is closed by (type, 0)")
        let parsed = try TLV8(bytes: tlv.bytes)
        #expect(parsed == tlv)
    }

    @Test func truncatedOrOversizedInputIsRefusedWithAReason() {
        #expect(throws: TLV8.DecodingError.self) { try TLV8(bytes: [0x06]) }
        #expect(throws: TLV8.DecodingError.self) { try TLV8(bytes: [0x06, 0x05, 0x01]) }
        #expect(throws: TLV8.DecodingError.self) { try TLV8(bytes: [UInt8](repeating: 0, count: 20_000)) }
    }

    @Test func integersAreLittleEndian() throws {
        let parsed = try TLV8(bytes: [0x13, 0x01, 0x10, 0x08, 0x02, 0x2C, 0x01])
        #expect(parsed.integer(.flags) == 0x10)
        #expect(parsed.integer(.retryDelay) == 300)
    }
}
