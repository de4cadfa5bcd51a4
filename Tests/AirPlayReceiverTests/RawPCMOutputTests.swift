@testable import AirPlayReceiver
import AirPlayMedia
import Foundation
import Testing

/// The raw PCM output (`audio_output = "raw:PATH"`) never cuts a frame: a FIFO whose reader
/// falls behind takes part of a write, and what it did not take goes out first next time, or
/// is dropped in whole frames. A reader never sees its samples shifted by one (left heard as
/// right), however loaded the machine.
@Suite struct RawPCMOutputTests {
    /// Frame `k` of the test signal: left holds its low 15 bits (top bit clear), right the
    /// rest (top bit set), so a frame read a sample out of alignment, with its channels swapped
    /// or out of order shows.
    static func frames(_ range: Range<Int>) -> [Int32] {
        range.flatMap { frame -> [Int32] in
            [Int32(frame & 0x7FFF), Int32(Int16(bitPattern: UInt16(0x8000 | (frame >> 15) & 0x7FFF)))]
        }
    }

    /// Checks what a reader got (samples of `width` bytes, little-endian): whole frames only,
    /// each intact, in order; returns how many.
    static func checkFrames(_ bytes: [UInt8], width: Int) -> Int {
        let size = 2 * width
        #expect(bytes.count % size == 0, "\(bytes.count) bytes: a frame was cut")
        var previous = -1
        // A sample's low 16 bits (a 24-bit one's top byte is their sign extension).
        func sample(_ at: Int) -> Int { Int(UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8) }
        for index in stride(from: 0, to: bytes.count / size * size, by: size) {
            let left = sample(index), right = sample(index + width)
            let frame = left | (right & 0x7FFF) << 15
            guard left & 0x8000 == 0, right & 0x8000 != 0, frame > previous else {
                Issue.record("frame \(index / size) reads (\(left), \(right)) after frame \(previous): shifted, swapped or out of order")
                return index / size
            }
            previous = frame
        }
        return bytes.count / size
    }

    /// Reads everything the FIFO holds now.
    static func drain(_ descriptor: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return out }
            out += buffer[0..<count]
        }
    }

    /// A reader that stops reading, then reads odd amounts while the stream goes on: the pipe
    /// takes writes in pieces, and every frame that comes out is whole and in order.
    @Test(arguments: [16, 24])
    func aFIFOWhoseReaderFallsBehindGetsWholeFramesInOrder(bits: Int) throws {
        let directory = NSTemporaryDirectory() + "raw-output-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/out.fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        // 24-bit frames are 6 bytes: a pipe that takes whole pages cuts them.
        let output = RawPCMOutput(path: path, format: PCMFormat(sampleRate: 44100, channels: 2, bitsPerSample: bits))
        var received: [UInt8] = [], next = 0
        // Packets of 4096 frames (16 KiB, as iTunes sends ALAC): more than a pipe writes at once
        // (PIPE_BUF, 4 KiB), so a full pipe takes part of one.
        for round in 0..<40 {
            output.write(Self.frames(next..<next + 4096))
            next += 4096
            // Every fifth packet the reader takes an odd, growing number of bytes.
            if round % 5 == 4 {
                var buffer = [UInt8](repeating: 0, count: 1001 + 97 * round)
                let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count > 0 { received += buffer[0..<count] }
            }
        }
        for _ in 0..<4 {   // the pipe (64 KiB) and what waits (64 KiB) overflow: the oldest whole frames go
            output.write(Self.frames(next..<next + 4096))
            next += 4096
        }
        received += Self.drain(reader)
        output.write(Self.frames(next..<next + 4096))   // what waited goes out first
        for _ in 0..<8 {   // and the rest of it as the reader makes room
            received += Self.drain(reader)
            output.write([])
        }
        received += Self.drain(reader)
        let frames = Self.checkFrames(received, width: bits / 8)
        #expect(frames > 32768 * 4 / (bits / 4) && frames < next, "\(frames) of \(next) frames read")
    }

    /// Trimming keeps the rest of a frame begun and drops whole frames after it.
    @Test func trimmingKeepsTheFrameBegunAndDropsWholeFrames() {
        // 2 bytes of a 4-byte frame are out: the first 2 pending bytes finish it.
        var pending = Array(0..<18).map { UInt8($0) }
        RawPCMOutput.trim(&pending, partial: 2, frameSize: 4, limit: 10)
        #expect(pending == [0, 1, 10, 11, 12, 13, 14, 15, 16, 17])
        var aligned = Array(0..<16).map { UInt8($0) }
        RawPCMOutput.trim(&aligned, partial: 0, frameSize: 4, limit: 8)
        #expect(aligned == [8, 9, 10, 11, 12, 13, 14, 15])
    }
}
