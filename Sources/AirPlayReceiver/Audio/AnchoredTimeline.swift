import AirPlayTiming
import Synchronization

/// A buffered AirPlay 2 stream's timeline: the sender's rate anchor (SETRATEANCHORTIME) says
/// which RTP time sounds at which time of its PTP clock, and the PTP follower says when our
/// monotonic clock reaches that time. Until an anchor with rate 1 arrives, or after one with
/// rate 0, nothing plays (`holdsWithoutTime`).
final class AnchoredTimeline: PlayoutTimeline {
    private let clock: any PTPClock
    private let sampleRate: Double
    private let anchor = Mutex<RateAnchor?>(nil)

    /// A timeline at `sampleRate` on the PTP clock `clock` follows.
    init(clock: any PTPClock, sampleRate: Int) {
        self.clock = clock
        self.sampleRate = Double(sampleRate)
    }

    /// Buffered audio never plays by arrival.
    var holdsWithoutTime: Bool { true }

    /// Takes an anchor: a play anchor replaces the schedule (and prefers its timeline's master);
    /// a pause keeps the last anchor's place but stops the clock.
    func set(_ new: RateAnchor) {
        anchor.withLock { current in
            if new.playing {
                current = new
            } else {
                current?.playing = false
            }
        }
        if new.playing, let timeline = new.timeline { clock.prefer(timeline: timeline) }
    }

    /// The anchor in force (nil before the first).
    var current: RateAnchor? { anchor.withLock { $0 } }

    func localTime(of rtp: UInt32) -> Double? {
        guard let anchor = anchor.withLock({ $0 }), anchor.playing, let rtpTime = anchor.rtpTime, let networkTime = anchor.networkTime else {
            return nil
        }
        // The anchor's time is the sender's word: one near the end of Int64 plays nothing.
        let (master, overflow) = networkTime.addingReportingOverflow(Int64((Double(Int32(bitPattern: rtp &- rtpTime)) / sampleRate * 1e9).rounded()))
        return overflow ? nil : clock.localTime(ofMaster: master).map { Double($0) / 1e9 }
    }
}
