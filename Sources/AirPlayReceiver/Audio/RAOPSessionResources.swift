import AirPlayCrypto
import AirPlayTiming
import AirPlayWire
import FoundationEssentials
import Glibc
import AirPlayMedia
import NIOConcurrencyHelpers
import NIOCore
import LinuxIO

/// What one RAOP session holds besides its protocol state (which lives in
/// `AudioSessionStateMachine`): the sender's key, the decoder queue, the sender's clock, the
/// playout and the UDP channels. `AudioSessions` builds it on `beginSession` and tears it down
/// on `endSession`.
final class RAOPSessionResources: Sendable {
    /// The session number.
    let number: Int
    /// The control connection it belongs to.
    let connection: ConnectionContext
    /// What ANNOUNCE described.
    let stream: RAOPStreamDescription
    /// Set for encrypted streams (RAOP `et=1`, every AirPlay 2 stream).
    let cipher: AudioPacketCipher?
    /// How packets become PCM: inline (L16, ALAC) or on the session's queue (AAC).
    let decoding: RAOPPacketDecoding
    /// The sender's clock, from its sync packets and its answers to our timing requests.
    let timeline: SenderTimeline
    /// When the session began, on the session clock.
    let began: Double
    /// The sender's address: UDP datagrams from any other host are dropped.
    let senderHost: [UInt8]?
    /// A timeline on the PTP clock: a buffered stream's (its rate anchors) or a realtime PTP
    /// stream's (its 0xD7 anchors); nil for NTP-timed streams.
    let anchored: AnchoredTimeline?
    /// AirPlay 2 buffered (type 103): TCP data, played only on rate anchors.
    let buffered: Bool

    /// The timeline the playout follows.
    var playoutTimeline: any PlayoutTimeline { anchored ?? timeline }

    /// Set up by SETUP, read by the UDP channels' loops.
    struct Mutable {
        var playout: AudioPlayout?
        var senderControl: SocketAddress?
        var senderTiming: SocketAddress?
        var channels: [RAOPPortRole: any Channel] = [:]
        /// The sockets under `channels`, which requests are sent on directly (`RAOPPorts.send`).
        var descriptors: [RAOPPortRole: Int32] = [:]
        /// A buffered stream's TCP data connection.
        var dataReceiver: BufferedDataReceiver?
        /// Since when a playing buffered stream has had no PTP clock to play on.
        var clockMissingSince: Double?
        var ended = false
        /// Datagrams dropped before the playout, by reason: never silent.
        var dropped: [String: Int] = [:]
        /// The same by kind (every datagram, however many reasons there were).
        var drops: [DatagramDrop: Int] = [:]
    }
    let state = NIOLockedValueBox(Mutable())
    /// The stream's packets as they arrive: under a lock of their own, never the control
    /// connection's (every audio packet takes it).
    let packets: NIOLockedValueBox<AudioPacketPipeline>

    init(number: Int, connection: ConnectionContext, stream: RAOPStreamDescription, cipher: AudioPacketCipher?,
         decoding: RAOPPacketDecoding, anchored: AnchoredTimeline? = nil, buffered: Bool = false, began: Double = 0) {
        self.began = began
        packets = NIOLockedValueBox(AudioPacketPipeline(now: began))
        self.anchored = anchored
        self.buffered = buffered
        self.number = number
        self.connection = connection
        self.stream = stream
        self.cipher = cipher
        self.decoding = decoding
        // The playout's own buffer (RECORD's Audio-Latency) is the least latency a sender gets.
        timeline = SenderTimeline(sampleRate: stream.sampleRate, minimumLatency: 0.5)
        senderHost = connection.remote.map(RAOPPorts.hostBytes)
    }

    /// Which clock timed most of the frames played: `ptp`, `sender` (its NTP syncs) or `arrival`.
    func timedMostlyBy(_ statistics: AudioPlayout.Statistics) -> String {
        guard statistics.framesOnSenderClock * 2 >= max(1, statistics.framesPlayed) else { return "arrival" }
        return anchored != nil ? "ptp" : "sender"
    }

    /// Which clock places frames now, in the same terms.
    var clockSource: String {
        if let anchored { return buffered || anchored.current != nil ? "ptp" : "arrival" }
        return timeline.figures.senderClock ? "sender" : "arrival"
    }

    /// The playout, once SETUP made it.
    var playout: AudioPlayout? { state.withLockedValue { $0.playout } }

    /// Counts a datagram dropped before the playout; says whether to log it (the first ten of
    /// each reason, then every thousandth).
    func drop(_ kind: DatagramDrop, _ reason: String) -> Bool {
        state.withLockedValue { state in
            state.drops[kind, default: 0] += 1
            // The first reasons of each kind are kept word for word; a decoder's errors vary.
            guard state.dropped[reason] != nil || state.dropped.count < 32 else { return false }
            let count = (state.dropped[reason] ?? 0) + 1
            state.dropped[reason] = count
            return count <= 10 || count % 1000 == 0
        }
    }

    /// Keeps a bound channel unless the session already ended (then it is closed at once).
    func adopt(_ channel: any Channel, as role: RAOPPortRole, descriptor: Int32) -> Bool {
        let keep = state.withLockedValue { value -> Bool in
            if value.ended { return false }
            value.channels[role] = channel
            value.descriptors[role] = descriptor
            return true
        }
        if !keep { channel.close(promise: nil) }
        return keep
    }

    /// Closes the ports and stops the playout once it has written what it holds (for `tail`
    /// seconds at most), then calls `stopped`; stopping joins the playout thread and may stop a
    /// GStreamer pipeline, so it runs on its own thread, not on an event loop.
    func tearDown(tail: Double = 0, stopped: @escaping @Sendable () -> Void = {}) {
        let (channels, playout, receiver) = state.withLockedValue { value -> ([any Channel], AudioPlayout?, BufferedDataReceiver?) in
            defer { value.channels = [:]; value.ended = true; value.dataReceiver = nil }
            return (Array(value.channels.values), value.playout, value.dataReceiver)
        }
        receiver?.stop()
        for channel in channels { channel.close(promise: nil) }
        guard let playout else { return stopped() }
        DedicatedThread.start(name: "raop-stop") {
            if tail > 0 {
                let deadline = SenderTimeline.now() + tail + 0.15
                while playout.bufferedPackets > 0, SenderTimeline.now() < deadline { usleep(10_000) }
                // What the output holds is heard too.
                usleep(UInt32(min(1, playout.presentationDelay) * 1_000_000))
            }
            playout.stop()
            stopped()
        }
    }

    /// What the session measured, with its packets' resend counters.
    func figures() -> AudioSessions.StreamFigures {
        let statistics = playout?.statistics ?? AudioPlayout.Statistics()
        let resends = packets.withLockedValue { $0.resends }
        return AudioSessions.StreamFigures(session: number, codec: AudioSessions.codecName(stream.codec), playout: statistics,
                                           clock: timeline.figures, clockSource: clockSource, timedMostlyBy: timedMostlyBy(statistics),
                                           requested: resends.requested, requestedAgain: resends.requestedAgain,
                                           retransmitted: resends.retransmitted, dropped: state.withLockedValue { $0.dropped },
                                           drops: state.withLockedValue { $0.drops })
    }
}
