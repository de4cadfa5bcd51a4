import AirPlayMedia
import AirPlayTesting
import Foundation
import GStreamerMedia
import Testing

/// The GStreamer sink path of received audio: the app source carries the stream's own format, so
/// a sink that takes it gets every bit (here a `filesink`, which takes anything: a 16-bit step
/// anywhere on the way would zero the low byte of each 24-bit sample).
@Suite struct GStreamerPCMOutputTests {
    @Test(arguments: [PCMFormat.cd, PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24)])
    func theSinkGetsTheStreamsOwnSamples(format: PCMFormat) throws {
        let path = Products.scratchDirectory("gst-output") + "/out-\(format.bitsPerSample).raw"
        let output = try GStreamerPCMOutput(sink: "filesink location=\(path) sync=false buffer-mode=unbuffered", format: format)
        let top = Int(format.maximumSample)
        var generator = SystemRandomNumberGenerator()
        let written = (0..<(format.sampleRate / 10 * 2)).map { _ in Int32(Int.random(in: -top - 1...top, using: &generator)) }
        for packet in stride(from: 0, to: written.count, by: 704) { output.write(Array(written[packet..<min(packet + 704, written.count)])) }
        // The pipeline is live: give its queue a moment to reach the file before stopping it.
        var bytes: [UInt8] = []
        for _ in 0..<100 {
            bytes = (try? Array(Data(contentsOf: URL(fileURLWithPath: path)))) ?? []
            if bytes.count >= written.count * format.bytesPerSample { break }
            usleep(20_000)
        }
        output.close()
        #expect(bytes.count == written.count * format.bytesPerSample)
        let read = format.samples(littleEndian: bytes)
        #expect(read == written, "\(format): first difference at \(Array(zip(read, written)).firstIndex { $0 != $1 } ?? -1) of \(read.count)")
    }
}
