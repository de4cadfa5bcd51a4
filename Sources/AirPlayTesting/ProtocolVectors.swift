import AirPlayMedia
import Foundation

/// The test vectors under `Protocol/vectors/`: one loader for every suite.
public enum ProtocolVectors {
    /// The URL of a vector file by name (`raop-alac-frames.json`).
    public static func url(_ name: String) -> URL {
        URL(fileURLWithPath: Products.repositoryRoot).appendingPathComponent("Protocol/vectors").appendingPathComponent(name)
    }

    /// A JSON vector file decoded as `T`.
    public static func load<T: Decodable>(_ type: T.Type, from name: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: url(name)))
    }

    /// Interleaved S16LE bytes as samples.
    public static func samples(littleEndian bytes: [UInt8]) -> [Int32] { PCMFormat.cd.samples(littleEndian: bytes) }
}

/// The packets of a Core Audio Format file (what `ffmpeg -c:a alac x.caf` writes): the codec's
/// magic cookie and each packet's bytes, from the `kuki`, `pakt` and `data` chunks.
public struct CAFPackets: Sendable {
    /// The `kuki` chunk (for ALAC, possibly `frma` and `alac` atoms around the 24-byte config).
    public var cookie: [UInt8] = []
    /// Each packet's bytes, in order.
    public var packets: [[UInt8]] = []
    /// Frames per packet from the `desc` chunk (0 when it varies).
    public var framesPerPacket = 0

    /// Reads a CAF file; throws when a chunk it needs is missing or malformed.
    public init(path: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count >= 8, Array(bytes[0..<4]) == Array("caff".utf8) else { throw TestHostError("\(path) is not a CAF file") }
        func be(_ at: Int, _ count: Int) -> UInt64 { (0..<count).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[at + $1]) } }
        var at = 8
        var data: ArraySlice<UInt8> = []
        var sizes: [Int] = []
        var bytesPerPacket = 0
        while at + 12 <= bytes.count {
            let type = String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
            let declared = Int64(bitPattern: be(at + 4, 8))
            let start = at + 12
            let end = declared < 0 ? bytes.count : min(bytes.count, start + Int(declared))
            switch type {
            case "desc":
                // sample rate (8), format id, format flags, bytes per packet, frames per packet…
                bytesPerPacket = Int(be(start + 16, 4))
                framesPerPacket = Int(be(start + 20, 4))
            case "kuki":
                cookie = Array(bytes[start..<end])
            case "data":
                data = bytes[(start + 4)..<end]   // after the edit count
            case "pakt":
                let count = Int(be(start, 8))
                var position = start + 24
                func varint() -> Int {
                    var value = 0
                    while position < end {
                        let byte = bytes[position]
                        position += 1
                        value = value << 7 | Int(byte & 0x7F)
                        if byte & 0x80 == 0 { break }
                    }
                    return value
                }
                for _ in 0..<count {
                    sizes.append(bytesPerPacket == 0 ? varint() : bytesPerPacket)
                    if framesPerPacket == 0 { _ = varint() }
                }
            default:
                break
            }
            at = end
        }
        guard !sizes.isEmpty, !data.isEmpty else { throw TestHostError("\(path): no pakt or data chunk") }
        var offset = data.startIndex
        for size in sizes {
            guard offset + size <= data.endIndex else { throw TestHostError("\(path): packet past the data chunk") }
            packets.append(Array(data[offset..<(offset + size)]))
            offset += size
        }
    }

    /// The 24-byte ALACSpecificConfig inside the cookie, as the 11 fmtp values.
    public var alacFmtp: [Int]? {
        var config = cookie
        if let range = findALACAtom() { config = Array(cookie[range]) }
        guard config.count >= 24 else { return nil }
        func be(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 << 8 | Int(config[at + $1]) } }
        return [be(0, 4), be(4, 1), be(5, 1), be(6, 1), be(7, 1), be(8, 1), be(9, 1), be(10, 2), be(12, 4), be(16, 4), be(20, 4)]
    }

    private func findALACAtom() -> Range<Int>? {
        var at = 0
        while at + 8 <= cookie.count {
            let size = cookie[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            if Array(cookie[(at + 4)..<(at + 8)]) == Array("alac".utf8), size >= 36, at + 36 <= cookie.count {
                return (at + 12)..<(at + 36)
            }
            guard size >= 8 else { return nil }
            at += size
        }
        return nil
    }
}
