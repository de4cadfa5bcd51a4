import AirPlayMedia
import Foundation
import GStreamerMedia
import Testing

/// Files that are not FLAC reach `airplay stream` through GStreamer: a CD-quality WAV comes
/// back sample for sample, read in packets, across the points where the source drops what it
/// has handed out (every 64 Ki samples).
@Suite struct GStreamerPCMSourceTests {
    @Test func aWAVFileIsReadBackExactlyPacketByPacket() throws {
        let frames = 3 * 44100
        var state: UInt32 = 12345
        let samples: [Int16] = (0..<(2 * frames)).map { _ in
            state = state &* 1_103_515_245 &+ 12345
            return Int16(truncatingIfNeeded: state >> 16)
        }
        var wav = Data("RIFF".utf8)
        func le32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { wav.append(contentsOf: $0) } }
        func le16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { wav.append(contentsOf: $0) } }
        le32(36 + samples.count * 2)
        wav.append(contentsOf: Array("WAVEfmt ".utf8))
        le32(16); le16(1); le16(2); le32(44100); le32(44100 * 4); le16(4); le16(16)
        wav.append(contentsOf: Array("data".utf8))
        le32(samples.count * 2)
        samples.withUnsafeBytes { wav.append(contentsOf: $0) }
        let path = NSTemporaryDirectory() + "gst-source-\(getpid()).wav"
        try wav.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        let source = try GStreamerPCMSource(path: path)
        var read: [Int32] = []
        for _ in 0..<(frames / 352 + 10) {
            let packet = source.read(frames: 352)
            if packet.isEmpty { break }
            #expect(packet.count <= 704)
            read += packet
        }
        #expect(read.count == samples.count, "\(read.count / 2) of \(frames) frames")
        #expect(read == samples.map(Int32.init), "the samples came back changed")
    }
}
