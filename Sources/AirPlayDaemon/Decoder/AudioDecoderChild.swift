import AirPlayMedia
import Glibc
import GStreamerMedia

/// The audio decoder process (`airplayd --audio-decoder`, one per AAC stream, started by
/// `ChildAudioDecoder`): GStreamer's `avdec_aac` and the sender's untrusted packets live here,
/// so that a crash or a hang in them costs that stream a moment of audio, not the daemon with
/// its other sessions. It takes the stream's configuration, then answers each packet with its
/// samples in order, and exits when the daemon's end of the socket closes.
enum AudioDecoderChild {
    /// Serves the daemon until it goes away.
    static func run() -> Never {
        let socket = PlayerSocket(fd: ChildProcess.helperSocket)
        guard case .datagram(let first) = socket.receive(maximumBytes: DecoderMessage.maximumBytes, timeout: 10),
              case .configure(let config, let sampleRate, let channels)? = DecoderMessage(bytes: first) else { _exit(2) }
        let decoder: GStreamerAudioDecoder
        do {
            decoder = try GStreamerAudioDecoder(aacConfig: config, sampleRate: sampleRate, channels: channels)
        } catch {
            _ = socket.send(bytes: DecoderMessage.ready(error: error.message).bytes)
            _exit(0)
        }
        _ = socket.send(bytes: DecoderMessage.ready(error: nil).bytes)
        while case .datagram(let bytes) = socket.receive(maximumBytes: DecoderMessage.maximumBytes, timeout: nil) {
            guard case .packet(let sequence, let packet)? = DecoderMessage(bytes: bytes) else { continue }
            let answer: DecoderMessage
            do {
                answer = .samples(sequence: sequence, try decoder.decode(packet))
            } catch {
                answer = .failed(sequence: sequence, reason: "\(error)")
            }
            guard socket.send(bytes: answer.bytes) else { break }
        }
        // The daemon is done with this stream.
        _exit(0)
    }
}
