/// One parser under fuzzing: a name (its folder under `Fuzz/` and its executable), what it reads,
/// and a body that takes any bytes. A body returns normally for every input; it traps (through
/// `precondition` or a sanitizer) only on a bug: a crash, a leak, an overflow, or a broken
/// round trip that the parser promises.
public struct FuzzTarget: Sendable {
    /// The target's name, as `tools/fuzz NAME` and the executable `fuzz-NAME` know it.
    public let name: String
    /// What it reads, in a line.
    public let summary: String
    /// Runs one input through the parser.
    public let body: @Sendable ([UInt8]) -> Void

    /// A target named `name` that reads `summary` with `body`.
    public init(_ name: String, _ summary: String, body: @escaping @Sendable ([UInt8]) -> Void) {
        self.name = name
        self.summary = summary
        self.body = body
    }
}

/// Every fuzz target, by name.
public enum FuzzTargets {
    /// All targets, in the order `tools/fuzz --list` prints them.
    public static let all: [FuzzTarget] = WireTargets.all + SessionTargets.all + PairingTargets.all + MediaTargets.all

    /// The target called `name`, if any.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Reads a fuzz input as several values: a leading control byte, then the rest split in parts,
/// so one input can reach a parser's state after earlier reads (a request split across reads,
/// a second pairing message after the first).
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    /// The next byte, or 0 when none is left.
    mutating func byte() -> UInt8 {
        bytes.popFirst() ?? 0
    }

    /// The next big-endian 16-bit value, or 0 when too few bytes are left.
    mutating func uint16() -> UInt16 {
        UInt16(byte()) << 8 | UInt16(byte())
    }

    /// The rest of the input.
    mutating func rest() -> [UInt8] {
        defer { bytes = bytes[bytes.endIndex...] }
        return Array(bytes)
    }

    /// The rest cut in exactly `count` pieces (some may be empty), at lengths the input's next
    /// big-endian 16-bit values choose.
    mutating func pieces(_ count: Int) -> [[UInt8]] {
        let cuts = (1..<max(count, 1)).map { _ in Int(uint16()) }
        var rest = self.rest()[...]
        var result: [[UInt8]] = []
        for cut in cuts {
            let length = cut % (rest.count + 1)
            result.append(Array(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        result.append(Array(rest))
        return result
    }

    /// The rest as text (invalid UTF-8 becomes U+FFFD, as a peer's bytes do everywhere we read text).
    mutating func text() -> String { String(decoding: rest(), as: UTF8.self) }
}
