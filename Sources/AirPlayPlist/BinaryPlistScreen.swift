/// Looks through a binary property list's object table before libplist reads it, for what
/// libplist 2.2 (Debian 12) cannot survive: a UTF-16 string holding U+0000 makes its
/// `plist_get_string_val` and `plist_get_key_val` abort the whole process on an assertion, so a
/// sender's SETUP or /play body could stop the daemon. Found by the `plist` fuzz target.
enum BinaryPlistScreen {
    /// Why the bytes are refused, or nil when libplist may read them.
    static func problem(in bytes: [UInt8]) -> String? {
        // Header "bplist0?" (8 bytes), objects, offset table, 32-byte trailer.
        guard bytes.count >= 8 + 32 else { return "binary property list shorter than its header and trailer" }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else { return "binary property list with bad integer sizes" }
        let objectCount = integer(bytes, at: trailer + 8, size: 8)
        let tableStart = integer(bytes, at: trailer + 24, size: 8)
        guard objectCount <= UInt64(trailer), tableStart <= UInt64(trailer),
              UInt64(trailer) - tableStart >= objectCount * UInt64(offsetSize) else {
            return "binary property list whose offset table does not fit"
        }
        for index in 0..<Int(objectCount) {
            let offset = integer(bytes, at: Int(tableStart) + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < UInt64(trailer) else { return "binary property list object outside the file" }
            if let problem = stringProblem(bytes, at: Int(offset), end: trailer) { return problem }
        }
        return nil
    }

    /// A string object at `offset` that holds NUL, or runs past `end`.
    private static func stringProblem(_ bytes: [UInt8], at offset: Int, end: Int) -> String? {
        let marker = bytes[offset]
        let kind = marker >> 4
        guard kind == 0x5 || kind == 0x6 else { return nil }
        var count = UInt64(marker & 0x0F)
        var start = offset + 1
        if count == 0x0F {
            // The length follows as an integer object: marker 0x1n, then 2^n bytes.
            guard start < end, bytes[start] >> 4 == 0x1, bytes[start] & 0x0F <= 3 else { return "binary property list string with a bad length" }
            let size = 1 << Int(bytes[start] & 0x0F)
            guard start + 1 + size <= end else { return "binary property list string with a bad length" }
            count = integer(bytes, at: start + 1, size: size)
            start += 1 + size
        }
        let unit = kind == 0x6 ? 2 : 1
        guard count <= UInt64(end - start) / UInt64(unit) else { return "binary property list string runs past its table" }
        let body = bytes[start..<(start + Int(count) * unit)]
        if unit == 1 {
            return body.contains(0) ? "binary property list string holds NUL" : nil
        }
        var index = body.startIndex
        while index < body.endIndex {
            if body[index] == 0, body[index + 1] == 0 { return "binary property list string holds NUL" }
            index += 2
        }
        return nil
    }

    /// The big-endian unsigned integer of `size` bytes at `offset` (which the caller checked).
    private static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        bytes[offset..<(offset + size)].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
