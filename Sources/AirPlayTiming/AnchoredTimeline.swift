import AirPlayWire
import Synchronization
import LinuxIO

/// A timeline on the sender's PTP clock: an anchor says which RTP time sounds at which time of
/// that clock, and the PTP follower says when our monotonic clock reaches that time.
///
/// Two kinds of stream use it. A buffered AirPlay 2 stream's anchors come from SETRATEANCHORTIME:
/// until one with rate 1 arrives, or after one with rate 0, nothing plays (`holdsWithoutTime`).
/// A realtime AirPlay 2 stream on PTP (type 96) is anchored by the 0xD7 packets on its control
/// port (`RAOPPTPAnchor`, about once a second): it waits for its time at most `holdLimit`, then
/// plays from arrival until its time is known.
package final class AnchoredTimeline: PlayoutTimeline {
    private struct State {
        var anchor: RateAnchor?
        /// When the playout first asked with no anchor known (the hold's start).
        var waitingSince: Double?
    }

    private let clock: any PTPClock
    private let sampleRate: Double
    /// How long a stream waits for its first anchor before playing from arrival; nil: forever.
    private let holdLimit: Double?
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    /// A timeline at `sampleRate` on the PTP clock `clock` follows; `holdLimit` as above
    /// (nil for buffered streams, which never play by arrival).
    package init(clock: any PTPClock, sampleRate: Int, holdLimit: Double? = nil, now: @escaping @Sendable () -> Double = { SystemClock().now() }) {
        self.clock = clock
        self.sampleRate = Double(sampleRate)
        self.holdLimit = holdLimit
        self.now = now
    }

    /// A buffered stream never plays by arrival; a realtime one holds while its time is unknown
    /// (no anchor yet, or no PTP clock to map it) for at most `holdLimit` from the first ask.
    package var holdsWithoutTime: Bool {
        guard let holdLimit else { return true }
        let time = now()
        return state.withLock { state in
            if state.waitingSince == nil { state.waitingSince = time }
            return time - (state.waitingSince ?? time) < holdLimit
        }
    }

    /// Takes an anchor: a play anchor replaces the schedule (and prefers its timeline's master
    /// when that changes); a pause keeps the last anchor's place but stops the clock.
    package func set(_ new: RateAnchor) {
        let newMaster = state.withLock { state -> Bool in
            defer {
                if new.playing { state.anchor = new } else { state.anchor?.playing = false }
            }
            return new.playing && state.anchor?.timeline != new.timeline
        }
        if newMaster, let timeline = new.timeline { clock.prefer(timeline: timeline) }
    }

    /// A realtime stream's anchor packet: the frame it names sounds at its PTP time.
    package func set(_ packet: RAOPPTPAnchor) {
        // A time beyond Int64 is no clock's: ignored, like the rest of a hostile packet.
        guard let networkTime = Int64(exactly: packet.networkTime) else { return }
        set(RateAnchor(playing: true, rtpTime: packet.heardRTPTime, networkTime: networkTime, timeline: packet.clockIdentity))
    }

    /// The sender flushed a realtime stream: its next anchor places what follows, and the
    /// stream waits for it again (at most `holdLimit`).
    package func forget() {
        state.withLock { state in
            state.anchor = nil
            state.waitingSince = nil
        }
    }

    /// The anchor in force (nil before the first).
    package var current: RateAnchor? { state.withLock { $0.anchor } }

    package func localTime(of rtp: UInt32) -> Double? {
        guard let anchor = state.withLock({ $0.anchor }), anchor.playing, let rtpTime = anchor.rtpTime, let networkTime = anchor.networkTime else {
            return nil
        }
        // The anchor's time is the sender's word: one near the end of Int64 plays nothing.
        let (master, overflow) = networkTime.addingReportingOverflow(Int64((Double(Int32(bitPattern: rtp &- rtpTime)) / sampleRate * 1e9).rounded()))
        return overflow ? nil : clock.localTime(ofMaster: master).map { Double($0) / 1e9 }
    }
}
