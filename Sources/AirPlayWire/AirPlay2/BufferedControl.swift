
/// `SETRATEANCHORTIME`: from now on the frame with RTP time `rtpTime` sounds at `networkTime`
/// on the PTP master's clock, and the stream plays (`rate` 1) or pauses (0). A pause may come
/// as `{rate: 0}` alone.
public struct RateAnchor: Hashable, Sendable {
    /// True to play, false to pause (the low bit of `rate`).
    public var playing: Bool
    /// The anchored frame's RTP time, when the anchor has one.
    public var rtpTime: UInt32?
    /// The PTP time (nanoseconds on the master's timescale) the anchored frame sounds at.
    public var networkTime: Int64?
    /// The clock identity of the PTP master the time is on (`networkTimeTimelineID`).
    public var timeline: UInt64?

    /// Rate 0 alone: a pause, the frame sounding then held.
    public static let pause = RateAnchor(playing: false, rtpTime: nil, networkTime: nil, timeline: nil)

    /// Rate 1: the frame at `rtpTime` sounds at `networkTime` (nanoseconds on `timeline`'s PTP clock).
    public static func play(rtpTime: UInt32, networkTime: Int64, timeline: UInt64) -> RateAnchor {
        RateAnchor(playing: true, rtpTime: rtpTime, networkTime: networkTime, timeline: timeline)
    }

    /// An anchor from its parts.
    public init(playing: Bool, rtpTime: UInt32?, networkTime: Int64?, timeline: UInt64?) {
        self.playing = playing
        self.rtpTime = rtpTime
        self.networkTime = networkTime
        self.timeline = timeline
    }

    /// Reads the plist body; a play anchor without a time is refused (it cannot be placed).
    public init(plist: PropertyList) throws(AirPlay2Setup.Refusal) {
        // A rate sent as a real is read only when it is a whole number in range (NaN or 1e300 would trap).
        guard case .dictionary = plist, let rate = plist["rate"]?.integerValue ?? plist["rate"]?.doubleValue.flatMap({ Int64(exactly: $0.rounded()) }) else {
            throw AirPlay2Setup.Refusal(status: 400, description: "SETRATEANCHORTIME needs a plist with rate")
        }
        playing = rate & 1 == 1
        rtpTime = plist["rtpTime"]?.integerValue.map { UInt32(truncatingIfNeeded: $0) }
        if let seconds = plist["networkTimeSecs"]?.integerValue {
            // Nanoseconds since the clock's epoch must fit 64 bits (found by the airplay2-setup fuzz target).
            guard (0...(Int64.max / 1_000_000_000 - 1)).contains(seconds) else {
                throw AirPlay2Setup.Refusal(status: 400, description: "SETRATEANCHORTIME networkTimeSecs \(seconds) is out of range")
            }
            // networkTimeFrac is a 64-bit binary fraction of a second (sent as a signed integer).
            let fraction = UInt64(bitPattern: plist["networkTimeFrac"]?.integerValue ?? 0)
            let nanoseconds = Int64(((fraction >> 32) * 1_000_000_000) >> 32)
            networkTime = seconds * 1_000_000_000 + nanoseconds
        } else {
            networkTime = nil
        }
        timeline = plist["networkTimeTimelineID"]?.integerValue.map { UInt64(bitPattern: $0) }
        if playing, rtpTime == nil || networkTime == nil {
            throw AirPlay2Setup.Refusal(status: 400, description: "SETRATEANCHORTIME with rate 1 needs rtpTime, networkTimeSecs and networkTimeFrac")
        }
    }

    /// The plist a sender sends.
    public var plist: PropertyList {
        var entries: [String: PropertyList] = ["rate": .integer(playing ? 1 : 0)]
        if let rtpTime { entries["rtpTime"] = .integer(Int64(rtpTime)) }
        if let networkTime {
            entries["networkTimeSecs"] = .integer(networkTime / 1_000_000_000)
            // Rounded up, so a reader that truncates (as this one does) gets the same nanosecond back.
            let nanoseconds = UInt64(networkTime % 1_000_000_000)
            entries["networkTimeFrac"] = .integer(Int64(bitPattern: (((nanoseconds << 32) + 999_999_999) / 1_000_000_000) << 32))
            entries["networkTimeFlags"] = .integer(0)
        }
        if let timeline { entries["networkTimeTimelineID"] = .integer(Int64(bitPattern: timeline)) }
        return .dictionary(entries)
    }
}

/// `FLUSHBUFFERED`: drop buffered audio. With `from`, the frames from there until `until` are
/// dropped when they come and playing goes on; without, everything before `until` is dropped
/// now and playing stops until the next anchor.
public struct BufferedFlush: Hashable, Sendable {
    /// A place in the stream: the 24-bit sequence field and the RTP time.
    public struct Mark: Hashable, Sendable {
        /// The packet sequence number (the header's 24-bit field).
        public var sequence: UInt32
        /// Its RTP time.
        public var timestamp: UInt32
        /// A mark from its parts.
        public init(sequence: UInt32, timestamp: UInt32) {
            self.sequence = sequence
            self.timestamp = timestamp
        }
    }
    /// Where a deferred flush starts; nil for an immediate flush.
    public var from: Mark?
    /// The first packet kept.
    public var until: Mark

    /// A flush from its parts.
    public init(from: Mark?, until: Mark) {
        self.from = from
        self.until = until
    }

    /// Reads the plist body: `flushUntilSeq` and `flushUntilTS` are required, the `flushFrom`
    /// pair optional.
    public init(plist: PropertyList) throws(AirPlay2Setup.Refusal) {
        func mark(_ prefix: String) -> Mark? {
            guard let sequence = plist["\(prefix)Seq"]?.integerValue, let timestamp = plist["\(prefix)TS"]?.integerValue else { return nil }
            return Mark(sequence: UInt32(truncatingIfNeeded: sequence) & 0xFF_FFFF, timestamp: UInt32(truncatingIfNeeded: timestamp))
        }
        guard case .dictionary = plist, let until = mark("flushUntil") else {
            throw AirPlay2Setup.Refusal(status: 400, description: "FLUSHBUFFERED needs flushUntilSeq and flushUntilTS")
        }
        self.until = until
        from = mark("flushFrom")
    }

    /// The plist a sender sends.
    public var plist: PropertyList {
        var entries: [String: PropertyList] = ["flushUntilSeq": .integer(Int64(until.sequence)), "flushUntilTS": .integer(Int64(until.timestamp))]
        if let from {
            entries["flushFromSeq"] = .integer(Int64(from.sequence))
            entries["flushFromTS"] = .integer(Int64(from.timestamp))
        }
        return .dictionary(entries)
    }
}

/// The timing peers a sender names: `timingPeerInfo`/`timingPeerList` in SETUP phase 1, a
/// `SETPEERS` body (an array of address strings) or a `SETPEERSX` body (an array of
/// dictionaries with `Addresses`).
public enum TimingPeers {
    /// Every address named, in order, without repeats.
    public static func addresses(in plist: PropertyList) -> [String] {
        var found: [String] = []
        func collect(_ value: PropertyList) {
            switch value {
            case .string(let address):
                if !found.contains(address) { found.append(address) }
            case .array(let items):
                items.forEach(collect)
            case .dictionary:
                if let addresses = value["Addresses"] { collect(addresses) }
            default:
                break
            }
        }
        collect(plist)
        return found
    }

    /// SETPEERS' `Content-Type`, as Apple's senders write it.
    public static let contentType = "/peer-list-changed"

    /// SETPEERS' body as a sender writes it (encoded as a binary plist): an array of the
    /// addresses, the sender's own first, then each receiver's.
    public static func plist(addresses: [String]) -> PropertyList {
        .array(addresses.map { .string($0) })
    }
}
