/// The UDP packets of a RAOP stream (RTP-like, payload types after masking the marker bit).
///
/// Audio goes to the server port; sync, resend requests and retransmissions use the control
/// port; timing requests and replies use the timing port.
public enum RAOPPacket: Hashable, Sendable {
    /// Payload type 0x60: one packet of encoded audio.
    case audio(RAOPAudioPacket)
    /// Payload type 0x54: sync (the RTP time now playing at the sender, its NTP time, the next RTP time).
    case sync(RAOPSync)
    /// Payload type 0x53: a reply to our timing request.
    case timingReply(RAOPTiming)
    /// Payload type 0x52: a timing request (senders answer ours; we answer theirs).
    case timingRequest(RAOPTiming)
    /// Payload type 0x56: an audio packet we asked to be resent.
    case retransmitted(RAOPAudioPacket)
    /// Payload type 0x55: the receiver asks for packets again.
    case resendRequest(RAOPResendRequest)
    /// Payload type 0x57: an AirPlay 2 realtime stream's anchor on the sender's PTP clock.
    case ptpAnchor(RAOPPTPAnchor)

    /// Parses a datagram; nil for anything that is not a well-formed RAOP packet.
    public static func parse(_ bytes: [UInt8]) -> RAOPPacket? {
        guard bytes.count >= 4, bytes[0] & 0xC0 == 0x80 else { return nil }
        let type = bytes[1] & 0x7F
        switch type {
        case 0x60:
            return RAOPAudioPacket(bytes).map(RAOPPacket.audio)
        case 0x56:
            guard bytes.count > 4 else { return nil }
            return RAOPAudioPacket(Array(bytes[4...])).map(RAOPPacket.retransmitted)
        case 0x54:
            guard bytes.count >= 20 else { return nil }
            return .sync(RAOPSync(rtpTimeNowMinusLatency: be32(bytes, 4), ntpTime: be64(bytes, 8), rtpTimeNext: be32(bytes, 16),
                                  isFirst: bytes[0] & 0x10 != 0, flags: be16(bytes, 2)))
        case 0x57:
            guard bytes.count >= 28 else { return nil }
            return .ptpAnchor(RAOPPTPAnchor(rtpTime: be32(bytes, 4), networkTime: be64(bytes, 8), nextRTPTime: be32(bytes, 16),
                                            clockIdentity: be64(bytes, 20), isFirst: bytes[0] & 0x10 != 0))
        case 0x55:
            guard bytes.count >= 8 else { return nil }
            return .resendRequest(RAOPResendRequest(first: be16(bytes, 4), count: be16(bytes, 6)))
        case 0x52, 0x53:
            guard bytes.count >= 32 else { return nil }
            let timing = RAOPTiming(origin: be64(bytes, 8), receive: be64(bytes, 16), transmit: be64(bytes, 24))
            return type == 0x53 ? .timingReply(timing) : .timingRequest(timing)
        default:
            return nil
        }
    }

    /// A retransmission's wire form (payload type 0x56, marker set: 0xD6), sent on the control
    /// port in answer to a resend request: a header of its own, carrying the resent packet's
    /// sequence number, then that audio packet whole. `parse` reads it back as `.retransmitted`.
    public static func retransmission(of packet: [UInt8], sequence: UInt16) -> [UInt8] {
        [0x80, 0xD6, UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + packet
    }

    static func be16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
    static func be32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[at + $1]) }
    }
    static func be64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[at + $1]) }
    }
}

/// One audio packet: RTP header fields and the (possibly encrypted) payload.
public struct RAOPAudioPacket: Hashable, Sendable {
    /// The RTP sequence number (wraps at 65536).
    public var sequence: UInt16
    /// The RTP timestamp of the first frame (wraps at 2^32).
    public var timestamp: UInt32
    /// True on the first packet after RECORD or FLUSH.
    public var marker: Bool
    /// The synchronisation source (0 from RAOP senders; AirPlay 2 senders put their stream's id
    /// here, and it is part of what the packet's tag authenticates).
    public var ssrc: UInt32
    /// The payload after the 12-byte header.
    public var payload: [UInt8]

    /// A packet from its parts.
    public init(sequence: UInt16, timestamp: UInt32, marker: Bool, ssrc: UInt32 = 0, payload: [UInt8]) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.marker = marker
        self.ssrc = ssrc
        self.payload = payload
    }

    /// The header fields of an audio datagram (payload type 0x60) read in place, and where its
    /// payload starts; nil for anything else. The receiver's audio port reads datagrams this way,
    /// without copying them first.
    public static func header(of datagram: UnsafeRawBufferPointer) -> (sequence: UInt16, timestamp: UInt32, marker: Bool, ssrc: UInt32)? {
        guard datagram.count >= 12, datagram[0] & 0xC0 == 0x80, datagram[1] & 0x7F == 0x60 else { return nil }
        let sequence = UInt16(datagram[2]) << 8 | UInt16(datagram[3])
        let timestamp = UInt32(datagram[4]) << 24 | UInt32(datagram[5]) << 16 | UInt32(datagram[6]) << 8 | UInt32(datagram[7])
        let ssrc = UInt32(datagram[8]) << 24 | UInt32(datagram[9]) << 16 | UInt32(datagram[10]) << 8 | UInt32(datagram[11])
        return (sequence, timestamp, datagram[1] & 0x80 != 0, ssrc)
    }

    /// Bytes before the payload of an audio packet.
    public static let headerSize = 12

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 12, bytes[0] & 0xC0 == 0x80, bytes[1] & 0x7F == 0x60 else { return nil }
        sequence = RAOPPacket.be16(bytes, 2)
        timestamp = RAOPPacket.be32(bytes, 4)
        marker = bytes[1] & 0x80 != 0
        ssrc = RAOPPacket.be32(bytes, 8)
        payload = Array(bytes[12...])
    }

    /// The wire form (payload type 0x60, marker and SSRC as given).
    public var bytes: [UInt8] {
        var out: [UInt8] = [0x80, marker ? 0xE0 : 0x60, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        out += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
        out += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        return out + payload
    }
}

/// A sync packet: the sender plays `rtpTimeNowMinusLatency` at `ntpTime` (plus `fixedLatencyFrames`
/// when its flags are 7); `rtpTimeNext` is the next frame it sends.
public struct RAOPSync: Hashable, Sendable {
    /// The flags iTunes, AirPort-era senders, OwnTone, libraop, pyatv and `airplay` send: the
    /// frame they name is heard `fixedLatencyFrames` after their time.
    public static let appleFlags: UInt16 = 7
    /// What flags 7 add between a sync's time and the frame it names being heard: 11025 frames
    /// (250 ms at 44.1 kHz), as AirPort Express and shairport-sync read it.
    public static let fixedLatencyFrames: UInt32 = 11025

    /// RTP time being played now at the sender (already minus the latency).
    public var rtpTimeNowMinusLatency: UInt32
    /// The sender's clock, NTP format (32.32 fixed point).
    public var ntpTime: UInt64
    /// RTP time of the next packet.
    public var rtpTimeNext: UInt32
    /// Set on the first sync after RECORD or FLUSH.
    public var isFirst: Bool
    /// Bytes 2-3: 7 from every sender known (`appleFlags`); anything else names the frame heard
    /// at `ntpTime` itself.
    public var flags: UInt16

    /// A sync from its parts.
    public init(rtpTimeNowMinusLatency: UInt32, ntpTime: UInt64, rtpTimeNext: UInt32, isFirst: Bool, flags: UInt16 = appleFlags) {
        self.rtpTimeNowMinusLatency = rtpTimeNowMinusLatency
        self.ntpTime = ntpTime
        self.rtpTimeNext = rtpTimeNext
        self.isFirst = isFirst
        self.flags = flags
    }

    /// Frames between the sync's time and the named frame being heard: 11025 with flags 7, else 0.
    public var heardAfterFrames: UInt32 { flags == Self.appleFlags ? Self.fixedLatencyFrames : 0 }

    /// The wire form (payload type 0x54 with the marker bit; 0x90 first byte on the first sync).
    public var bytes: [UInt8] {
        var out: [UInt8] = [isFirst ? 0x90 : 0x80, 0xD4, UInt8(flags >> 8), UInt8(flags & 0xFF)]
        out += withUnsafeBytes(of: rtpTimeNowMinusLatency.bigEndian, Array.init)
        out += withUnsafeBytes(of: ntpTime.bigEndian, Array.init)
        out += withUnsafeBytes(of: rtpTimeNext.bigEndian, Array.init)
        return out
    }
}

/// The timing packet of an AirPlay 2 realtime stream on PTP (payload type 0x57, 28 bytes, on
/// the control port, about once a second): frame `rtpTime` minus `heardBeforeFrames` is heard
/// at `networkTime` on the PTP clock `clockIdentity`. OwnTone and Music Assistant send it where
/// RAOP sends 0x54 syncs; shairport-sync 5 reads it this way.
public struct RAOPPTPAnchor: Hashable, Sendable {
    /// How many frames before `rtpTime` the frame heard at `networkTime` is.
    public static let heardBeforeFrames: UInt32 = 11035
    /// What senders put in `nextRTPTime`: `rtpTime` plus this.
    public static let nextOffsetFrames: UInt32 = 77175

    /// Bytes 4-7: an RTP time (frame₁).
    public var rtpTime: UInt32
    /// Bytes 8-15: the PTP time in nanoseconds.
    public var networkTime: UInt64
    /// Bytes 16-19: frame₂, `rtpTime` + 77175 from every sender known.
    public var nextRTPTime: UInt32
    /// Bytes 20-27: the PTP grandmaster's clock identity.
    public var clockIdentity: UInt64
    /// The extension bit of byte 0 (0x90): set by every sender known.
    public var isFirst: Bool

    /// An anchor from its parts.
    public init(rtpTime: UInt32, networkTime: UInt64, nextRTPTime: UInt32, clockIdentity: UInt64, isFirst: Bool = true) {
        self.rtpTime = rtpTime
        self.networkTime = networkTime
        self.nextRTPTime = nextRTPTime
        self.clockIdentity = clockIdentity
        self.isFirst = isFirst
    }

    /// An anchor saying frame `heard` sounds at `networkTime` on `clockIdentity`, as senders write it.
    public init(heard: UInt32, at networkTime: UInt64, clockIdentity: UInt64) {
        let rtpTime = heard &+ Self.heardBeforeFrames
        self.init(rtpTime: rtpTime, networkTime: networkTime, nextRTPTime: rtpTime &+ Self.nextOffsetFrames, clockIdentity: clockIdentity)
    }

    /// The frame heard at `networkTime`.
    public var heardRTPTime: UInt32 { rtpTime &- Self.heardBeforeFrames }

    /// The wire form: `0x90 0xD7 0x00 0x06`, then the fields, big-endian.
    public var bytes: [UInt8] {
        var out: [UInt8] = [isFirst ? 0x90 : 0x80, 0xD7, 0x00, 0x06]
        out += withUnsafeBytes(of: rtpTime.bigEndian, Array.init)
        out += withUnsafeBytes(of: networkTime.bigEndian, Array.init)
        out += withUnsafeBytes(of: nextRTPTime.bigEndian, Array.init)
        out += withUnsafeBytes(of: clockIdentity.bigEndian, Array.init)
        return out
    }
}

/// The three NTP timestamps of a timing exchange.
public struct RAOPTiming: Hashable, Sendable {
    /// When the request left its sender (copied back in replies).
    public var origin: UInt64
    /// When the request arrived.
    public var receive: UInt64
    /// When the reply (or request) left.
    public var transmit: UInt64

    /// A timing triple.
    public init(origin: UInt64, receive: UInt64, transmit: UInt64) {
        self.origin = origin
        self.receive = receive
        self.transmit = transmit
    }

    /// The one timing responder of both sides: the reply to a request, its transmit time echoed
    /// as origin, our clock (`clock`, NTP 32.32) read at once for its arrival and again as it leaves.
    public static func reply(to request: RAOPTiming, clock: () -> UInt64) -> RAOPTiming {
        let arrival = clock()
        return RAOPTiming(origin: request.transmit, receive: arrival, transmit: clock())
    }

    /// For a reply to our request: the round trip in seconds (from our sending, read in its
    /// `origin`, to `arrival`, both NTP 32.32 on our clock, less the time the peer held it) and
    /// the peer's clock minus ours. Nil for a reply that answers nothing plausible (a negative
    /// trip, or one older than a minute).
    public func exchange(arrival: UInt64) -> (roundTrip: Double, offset: Double)? {
        func seconds(_ value: UInt64) -> Double { Double(value >> 32) + Double(value & 0xFFFF_FFFF) / 4_294_967_296 }
        let sent = seconds(origin), arrived = seconds(arrival)
        let received = seconds(receive), transmitted = seconds(transmit)
        let roundTrip = (arrived - sent) - (transmitted - received)
        guard sent <= arrived, arrived - sent < 60, roundTrip >= -0.001 else { return nil }
        return (max(0, roundTrip), ((received - sent) + (transmitted - arrived)) / 2)
    }

    /// A timing packet (0x52 request or 0x53 reply) in wire form.
    public func bytes(reply: Bool) -> [UInt8] {
        var out: [UInt8] = [0x80, reply ? 0xD3 : 0xD2, 0x00, 0x07, 0, 0, 0, 0]
        for value in [origin, receive, transmit] { out += withUnsafeBytes(of: value.bigEndian, Array.init) }
        return out
    }
}

/// A resend request: the receiver asks for `count` audio packets from sequence `first` again,
/// on the sender's control port; they come back as 0x56 retransmissions.
public struct RAOPResendRequest: Hashable, Sendable {
    /// The first missing sequence number.
    public var first: UInt16
    /// How many packets from it.
    public var count: UInt16

    /// A request from its parts.
    public init(first: UInt16, count: UInt16) {
        self.first = first
        self.count = count
    }

    /// The wire form: marker and payload type 0x55 (0xD5), sequence 1, then first and count.
    public var bytes: [UInt8] {
        [0x80, 0xD5, 0x00, 0x01, UInt8(first >> 8), UInt8(first & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)]
    }
}
