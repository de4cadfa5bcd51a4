import AirPlaySender
import ArgumentParser
import Foundation
import GStreamerMedia

/// `airplay stream FILE`: plays a local audio file on an AirPlay (RAOP) speaker.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stream",
        abstract: "Stream an audio file (any format GStreamer decodes) to an AirPlay speaker, as 44.1 kHz stereo L16.")

    @Argument(help: "An audio file: WAV, FLAC, MP3, M4A/AAC, Ogg…")
    var file: String

    @Option(name: .long, help: "Volume 0-100 (default 100: the stream plays at full scale).")
    var volume: Double = 100

    @OptionGroup var options: ReceiverOptions

    func validate() throws {
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be 0 to 100") }
    }

    func run() async throws {
        let source: GStreamerPCMSource
        do {
            source = try GStreamerPCMSource(path: file)
        } catch {
            FileHandle.standardError.write(Data("airplay: \(file): \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.badInput)
        }
        try await withReceiver(options, needVideo: false) { address, connection, _ throws(SenderError) in
            let streamer = RAOPStreamer(connection: connection)
            // AirPlay volume: -30 dB (1 %) … 0 dB (100 %), -144 mutes.
            let decibels = volume == 0 ? -144 : -30 + 30 * volume / 100
            try await streamer.start(volumeDecibels: decibels)
            if !options.json { print("streaming \(file) to \(address.name)") }
            fflush(nil)
            let frames: Int
            do throws(SenderError) {
                frames = try streamer.stream { source.read(frames: RAOPStreamer.framesPerPacket) }
            } catch {
                await streamer.stop()
                throw error
            }
            // Let the receiver play out its latency before it is told to stop.
            try? await Task.sleep(for: .seconds(Double(RAOPStreamer.latencyFrames) / 44100 + 0.5))
            await streamer.stop()
            let seconds = Double(frames) / 44100
            done(options, String(format: "streamed %.1f s (%d packets resent)", seconds, streamer.resent.withLockedValue { $0 }),
                 ["seconds": seconds, "resent": streamer.resent.withLockedValue { $0 }, "receiver": address.name])
        }
    }
}
