import AirPlayMedia
import Dispatch
import Glibc
import Logging
import Synchronization
import LinuxIO

/// An AAC decoder in a process of its own (`AudioDecoderChild`, `airplayd --audio-decoder`):
/// GStreamer's decoding of a sender's packets is untrusted media, and a crash or a hang there
/// must cost one stream a moment of audio, never the daemon. Each packet goes over and its
/// samples come back (numbered, so a late answer is never taken for the next packet's). When
/// the child dies or does not answer within `answerTimeout` it is ended, that packet is
/// dropped with the reason, and a new child starts with the next packet (at most once a
/// second, so a packet that kills every decoder costs little).
///
/// Calls come one at a time from the session's decode queue (`RAOPDecodeQueue`), which may wait.
final class ChildAudioDecoder: AudioDecoder, Sendable {
    /// What the child decodes.
    struct Stream: Hashable, Sendable {
        var config: [UInt8]
        var sampleRate: Int
        var channels: Int
    }

    private struct Child: Sendable {
        var socket: PlayerSocket
        var pid: pid_t
    }

    private struct State: Sendable {
        var child: Child?
        var sequence: UInt32 = 0
        var lastStart = -Double.infinity
    }

    /// How long a packet's answer may take (the decoder's own limit is 200 ms).
    static let answerTimeout = 1.0
    /// The shortest time between two starts of a child.
    static let restartInterval = 1.0

    private let stream: Stream
    private let executable: String
    private let logger: Logger
    private let state = Mutex(State())

    /// A decoder whose child is running and configured; throws why not (no AAC decoder there,
    /// the child would not start).
    init(stream: Stream, executable: String = "/proc/self/exe", logger: Logger) throws(MediaError) {
        self.stream = stream
        self.executable = executable
        self.logger = logger
        let child = try start()
        state.withLock { $0 = State(child: child, lastStart: Self.now()) }
    }

    deinit {
        guard let child = state.withLock({ $0.child }) else { return }
        // The child exits when its socket closes; reaped off this thread.
        child.socket.close()
        DispatchQueue.global().async { _ = ChildProcess.reap(child.pid) }
    }

    /// The packet's samples from the child.
    func decode(_ packet: [UInt8]) throws(AudioDecodeError) -> [Int32] {
        try state.withLock { state throws(AudioDecodeError) -> [Int32] in
            let child = try running(&state)
            state.sequence &+= 1
            let sequence = state.sequence
            guard child.socket.send(bytes: DecoderMessage.packet(sequence: sequence, bytes: packet).bytes) else {
                state.child = nil
                throw .unsupported("the audio decoder process ended (\(stop(child, killing: false)))")
            }
            let deadline = Self.now() + Self.answerTimeout
            while true {
                switch child.socket.receive(maximumBytes: DecoderMessage.maximumBytes, timeout: max(0, deadline - Self.now())) {
                case .datagram(let bytes):
                    switch DecoderMessage(bytes: bytes) {
                    case .samples(sequence, let samples)?: return samples
                    case .failed(sequence, let reason)?:
                        throw reason == AudioDecodeError.noOutput.description ? .noOutput : .malformed(reason)
                    default: continue   // an earlier packet's late answer
                    }
                case .closed:
                    state.child = nil
                    throw .unsupported("the audio decoder process ended (\(stop(child, killing: false)))")
                case .timedOut:
                    state.child = nil
                    _ = stop(child, killing: true)
                    throw .unsupported("the audio decoder process did not answer within \(Int(Self.answerTimeout)) s")
                }
            }
        }
    }

    /// The child, started again when the last one ended (and a second has passed).
    private func running(_ state: inout State) throws(AudioDecodeError) -> Child {
        if let child = state.child { return child }
        guard Self.now() - state.lastStart >= Self.restartInterval else { throw .unsupported("the audio decoder process is restarting") }
        state.lastStart = Self.now()
        do {
            let child = try start()
            state.child = child
            return child
        } catch {
            throw .unsupported(error.message)
        }
    }

    /// Starts a child and configures it; throws its refusal.
    private func start() throws(MediaError) -> Child {
        let (ours, pid) = try ChildProcess.helper(executable, "--audio-decoder")
        let child = Child(socket: ours, pid: pid)
        let configure = DecoderMessage.configure(config: stream.config, sampleRate: stream.sampleRate, channels: stream.channels)
        // Building the pipeline loads GStreamer's registry: seconds on a cold box.
        let answer = ours.send(bytes: configure.bytes) ? ours.receive(maximumBytes: DecoderMessage.maximumBytes, timeout: 10) : .closed
        if case .datagram(let bytes) = answer, case .ready(nil)? = DecoderMessage(bytes: bytes) {
            logger.info("audio decoder process started", metadata: ["pid": "\(pid)"])
            return child
        }
        let reason = stop(child, killing: true)
        if case .datagram(let bytes) = answer, case .ready(let error?)? = DecoderMessage(bytes: bytes) {
            throw MediaError(code: -7, domain: "airplayd.decoder", message: error)
        }
        throw MediaError(code: -1, domain: "airplayd.decoder", message: "the audio decoder process did not start (\(reason))")
    }

    /// Ends `child` (killing it first when it hangs) and says so; how it ended.
    private func stop(_ child: Child, killing: Bool) -> String {
        if killing { kill(child.pid, SIGKILL) }
        child.socket.close()
        let reason = ChildProcess.reap(child.pid)
        logger.warning("audio decoder process ended", metadata: ["pid": "\(child.pid)", "reason": "\(reason)"])
        return reason
    }

    private static func now() -> Double { SystemClock().now() }
}
