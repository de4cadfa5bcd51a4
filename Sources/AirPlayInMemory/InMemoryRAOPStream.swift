import AirPlayReceiver
import AirPlaySender
import AirPlayTiming
import AirPlayWire

/// A RAOP stream played in memory on a clock the test moves: the sender's real pacer
/// (`RAOPPacer`), its sync packets and timing answers written and read by the wire codecs, and
/// the receiver's real `SenderTimeline` placing every packet's first frame as it arrives. A
/// minute of audio runs in milliseconds.
///
/// Quirk switches (`SenderConvention`) make the sender time its syncs the way a known sender
/// does, so each convention's rule is checked end to end, the sender's side included.
package struct InMemoryRAOPStream {
    /// How a sender times its sync packets.
    package enum SenderConvention: Hashable, Sendable {
        /// This project's `airplay`: flags 7, the named frame one latency less 11025 frames
        /// before the one sent, stamped with its due time: every frame is heard one latency
        /// (`RAOPStreamer.latencySeconds`) after it is due.
        case ours
        /// libraop (and iTunes): flags 7 naming "next minus latency", and a start back-dated by the
        /// whole latency with the backlog burst at once: the first frame is heard 250 ms after it.
        case libraop(latencyFrames: UInt32)
        /// PipeWire 0.3.65: flags 0 naming the frame being sent as the one playing (no latency),
        /// stamped as it leaves.
        case zeroLatencySyncs
    }

    /// One packet's fate: its first frame, when it left and arrived, and when the receiver will
    /// play it (nil when no clock placed it), all on the receiver's clock.
    package struct Placement: Hashable, Sendable {
        package var rtp: UInt32
        package var sentAt: Double
        package var arrivedAt: Double
        package var heardAt: Double?
    }

    /// The convention the sender follows.
    package let convention: SenderConvention
    /// The sender's clock reads `local * (1 + ppm / 1e6) + offset` when the receiver's reads `local`.
    package let senderOffset: Double, senderPPM: Double
    /// One-way network delay, each way.
    package let oneWay: Double
    /// The receiver's timeline for this sender (its real code).
    package let timeline: SenderTimeline
    /// How often the receiver asks the sender for its time.
    package let timingInterval = 2.0
    private var pacer: RAOPPacer

    /// A stream from a sender following `convention`; `minimumLatency` is the receiver's floor.
    package init(convention: SenderConvention = .ours, senderOffset: Double = 0, senderPPM: Double = 0, oneWay: Double = 0.001,
                 minimumLatency: Double = 0.5) {
        self.convention = convention
        self.senderOffset = senderOffset
        self.senderPPM = senderPPM
        self.oneWay = oneWay
        timeline = SenderTimeline(sampleRate: 44100, minimumLatency: minimumLatency)
        let latency: UInt32 = if case .libraop(let frames) = convention { frames } else { RAOPStreamer.latencyFrames }
        pacer = RAOPPacer(sequence: 1000, timestamp: 5_000_000, latencyFrames: latency)
    }

    /// The sender's clock at the receiver's `local`.
    package func senderClock(_ local: Double) -> Double { local * (1 + senderPPM / 1e6) + senderOffset }

    /// The receiver's clock at the sender's `sender`.
    package func localClock(_ sender: Double) -> Double { (sender - senderOffset) / (1 + senderPPM / 1e6) }

    /// Plays `seconds` of silence starting at the receiver's `start`, and where each packet landed.
    package mutating func play(seconds: Double, from start: Double) -> [Placement] {
        var now = start
        var nextTiming = start
        var placements: [Placement] = []
        if case .libraop(let frames) = convention {
            pacer.start(now: senderClock(start) - Double(frames) / 44100)
        } else {
            pacer.start(now: senderClock(start))
        }
        let packets = Int(seconds * 44100) / 352
        let silence = [Int32](repeating: 0, count: 2 * 352)
        for _ in 0..<packets {
            // Packets leave when due on the sender's clock; an overdue one (a burst) leaves now.
            now = max(now, localClock(pacer.nextDue))
            while nextTiming <= now {
                askForTime(at: nextTiming)
                nextTiming += timingInterval
            }
            let senderNow = senderClock(now)
            for action in pacer.packet(silence) {
                switch action {
                case .sync(let named, let next, let first, let due):
                    deliver(sync(named: named, next: next, first: first, due: due, senderNow: senderNow), sentAt: now)
                case .timingRequest:
                    break   // the sender's own round-trip measurement: nothing the receiver's timeline reads
                case .audio(_, let timestamp, _, _):
                    timeline.audioArrived(rtp: timestamp, arrival: now + oneWay)
                    placements.append(Placement(rtp: timestamp, sentAt: now, arrivedAt: now + oneWay, heardAt: timeline.localTime(of: timestamp)))
                }
            }
        }
        return placements
    }

    /// The sync as this convention writes it.
    private func sync(named: UInt32, next: UInt32, first: Bool, due: Double, senderNow: Double) -> RAOPSync {
        switch convention {
        case .ours:
            return RAOPSync(rtpTimeNowMinusLatency: named, ntpTime: NTPTime.timestamp(due), rtpTimeNext: next, isFirst: first)
        case .libraop(let latency):
            return RAOPSync(rtpTimeNowMinusLatency: next &- latency, ntpTime: NTPTime.timestamp(due), rtpTimeNext: next, isFirst: first)
        case .zeroLatencySyncs:
            return RAOPSync(rtpTimeNowMinusLatency: next, ntpTime: NTPTime.timestamp(senderNow), rtpTimeNext: next, isFirst: first, flags: 0)
        }
    }

    /// A sync goes out on the wire and is read by the receiver on arrival.
    private func deliver(_ sync: RAOPSync, sentAt: Double) {
        guard case .sync(let read)? = RAOPPacket.parse(sync.bytes) else { return }
        timeline.addSync(read, arrival: sentAt + oneWay)
    }

    /// The receiver asks the sender for its time at `local`; the sender answers at once.
    private func askForTime(at local: Double) {
        guard case .timingRequest(let request)? = RAOPPacket.parse(SenderTimeline.request(at: local)) else { return }
        let answer = RAOPTiming.reply(to: request) { NTPTime.timestamp(senderClock(local + oneWay)) }
        guard case .timingReply(let read)? = RAOPPacket.parse(answer.bytes(reply: true)) else { return }
        timeline.addTimingReply(read, arrival: local + 2 * oneWay)
    }
}
