/// IEEE 1588-2008 (PTPv2) messages over UDP, as AirPlay 2 senders and linuxptp's ptp4l send
/// them: event messages (Sync, Delay_Req) on port 319, general ones (Follow_Up, Delay_Resp,
/// Announce, Signaling) on port 320, to the multicast group 224.0.1.129 or unicast.
///
/// Every message starts with the same 34-byte header; a two-step clock (Apple's, ptp4l's) sends
/// a Sync whose origin time is zero and then a Follow_Up carrying the precise one. Decoding is
/// bounds-checked: a datagram that is too short for its type, not version 2, or longer than it
/// says is a `PTPDecodeError`, never a crash.
public struct PTPMessage: Hashable, Sendable {
    /// The common header.
    public var header: PTPHeader
    /// What follows the header.
    public var body: PTPBody

    /// A message from its parts.
    public init(header: PTPHeader, body: PTPBody) {
        self.header = header
        self.body = body
    }

    /// The multicast group of PTP's primary domain messages.
    public static let multicastGroup = "224.0.1.129"
    /// The port of event messages (Sync, Delay_Req): their times are stamped on the wire.
    public static let eventPort: UInt16 = 319
    /// The port of general messages (Follow_Up, Delay_Resp, Announce).
    public static let generalPort: UInt16 = 320
    /// The length of the common header.
    static let headerLength = 34

    /// Decodes one UDP payload.
    public static func decode(_ bytes: [UInt8]) throws(PTPDecodeError) -> PTPMessage {
        guard bytes.count >= headerLength else { throw .tooShort(bytes.count) }
        var reader = PTPReader(bytes)
        let first = reader.byte()
        guard let type = PTPMessageType(rawValue: first & 0x0F) else { throw .unknownType(first & 0x0F) }
        let version = reader.byte() & 0x0F
        guard version == 2 else { throw .unsupportedVersion(version) }
        let length = Int(reader.uint16())
        guard length >= headerLength, length <= bytes.count else { throw .badLength(declared: length, actual: bytes.count) }
        let domain = reader.byte()
        _ = reader.byte()  // minorSdoId (reserved in 2008)
        let flags = reader.uint16()
        let correction = Int64(bitPattern: reader.uint64())
        _ = reader.uint32()  // messageTypeSpecific
        let source = PTPPortIdentity(clockIdentity: reader.uint64(), port: reader.uint16())
        let sequence = reader.uint16()
        _ = reader.byte()  // controlField (obsolete)
        let interval = Int8(bitPattern: reader.byte())
        let header = PTPHeader(type: type, domain: domain, flags: flags, correction: correction, source: source,
                               sequence: sequence, logInterval: interval, transportSpecific: first >> 4)
        let body = try PTPBody.decode(type: type, reader: &reader, length: length)
        return PTPMessage(header: header, body: body)
    }

    /// The message as it goes on the wire.
    public func encoded() -> [UInt8] {
        var body: [UInt8] = []
        switch self.body {
        case .sync(let origin), .delayRequest(let origin), .followUp(let origin):
            origin.append(to: &body)
        case .delayResponse(let received, let requester):
            received.append(to: &body)
            requester.append(to: &body)
        case .announce(let announce):
            announce.append(to: &body)
        case .other(let bytes):
            body = bytes
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerLength + body.count)
        bytes.append((header.transportSpecific << 4) | header.type.rawValue)
        bytes.append(2)
        PTPWriter.append(UInt16(Self.headerLength + body.count), to: &bytes)
        bytes += [header.domain, 0]
        PTPWriter.append(header.flags, to: &bytes)
        PTPWriter.append(UInt64(bitPattern: header.correction), to: &bytes)
        bytes += [0, 0, 0, 0]
        header.source.append(to: &bytes)
        PTPWriter.append(header.sequence, to: &bytes)
        bytes.append(header.type.controlField)
        bytes.append(UInt8(bitPattern: header.logInterval))
        return bytes + body
    }
}

/// The message types of PTPv2 (the low four bits of the first byte).
public enum PTPMessageType: UInt8, Hashable, Sendable {
    /// A master's time, stamped as it leaves (event).
    case sync = 0x0
    /// A follower asks when its message reached the master (event).
    case delayRequest = 0x1
    /// Peer delay request (event; peer-to-peer mode, unused by AirPlay).
    case peerDelayRequest = 0x2
    /// Peer delay response (event).
    case peerDelayResponse = 0x3
    /// The precise send time of the preceding two-step Sync (general).
    case followUp = 0x8
    /// When a Delay_Req reached the master (general).
    case delayResponse = 0x9
    /// Peer delay response follow-up (general).
    case peerDelayResponseFollowUp = 0xA
    /// A master's claim to be the best clock (general).
    case announce = 0xB
    /// Negotiation and vendor messages (general; Apple sends some).
    case signaling = 0xC
    /// Management (general).
    case management = 0xD

    /// The obsolete controlField PTPv1 devices still read.
    var controlField: UInt8 {
        switch self {
        case .sync: 0
        case .delayRequest: 1
        case .followUp: 2
        case .delayResponse: 3
        case .management: 4
        default: 5
        }
    }
}

/// The header every PTP message starts with.
public struct PTPHeader: Hashable, Sendable {
    /// The message type.
    public var type: PTPMessageType
    /// The PTP domain (0 for AirPlay and ptp4l's default).
    public var domain: UInt8
    /// The flag field; `twoStep` is bit 9 (0x0200).
    public var flags: UInt16
    /// The correction field: nanoseconds times 2^16.
    public var correction: Int64
    /// Who sent it.
    public var source: PTPPortIdentity
    /// The sequence number, per message type and sender.
    public var sequence: UInt16
    /// The log2 of the message interval in seconds (-3 = every 125 ms).
    public var logInterval: Int8
    /// The high four bits of the first byte (0 for UDP).
    public var transportSpecific: UInt8

    /// A header from its parts.
    public init(type: PTPMessageType, domain: UInt8 = 0, flags: UInt16 = 0, correction: Int64 = 0, source: PTPPortIdentity,
                sequence: UInt16, logInterval: Int8 = 0x7F, transportSpecific: UInt8 = 0) {
        self.type = type
        self.domain = domain
        self.flags = flags
        self.correction = correction
        self.source = source
        self.sequence = sequence
        self.logInterval = logInterval
        self.transportSpecific = transportSpecific
    }

    /// Set on a Sync whose precise send time follows in a Follow_Up.
    public var isTwoStep: Bool { flags & 0x0200 != 0 }
    /// The correction field in nanoseconds (sub-nanosecond parts dropped).
    public var correctionNanoseconds: Int64 { correction >> 16 }
}

/// A clock's identity (EUI-64, often derived from a MAC) and the number of its port.
public struct PTPPortIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The clock identity.
    public var clockIdentity: UInt64
    /// The port number (1 for a one-port clock).
    public var port: UInt16

    /// A port identity from its parts.
    public init(clockIdentity: UInt64, port: UInt16) {
        self.clockIdentity = clockIdentity
        self.port = port
    }

    /// `aabbcc.fffe.ddeeff-1`, as ptp4l prints it.
    public var description: String {
        let hex = TextFormatting.hex(withUnsafeBytes(of: clockIdentity.bigEndian) { Array($0) })
        return "\(hex.prefix(6)).\(hex.dropFirst(6).prefix(4)).\(hex.suffix(6))-\(port)"
    }

    func append(to bytes: inout [UInt8]) {
        PTPWriter.append(clockIdentity, to: &bytes)
        PTPWriter.append(port, to: &bytes)
    }
}

/// A PTP time: 48-bit seconds and nanoseconds since the PTP epoch (1970, TAI for a true PTP
/// grandmaster; ptp4l with software time stamps sends the system clock as it is).
public struct PTPTimestamp: Hashable, Sendable {
    /// Seconds (48 bits on the wire).
    public var seconds: UInt64
    /// Nanoseconds, below 10^9.
    public var nanoseconds: UInt32

    /// A timestamp from its parts.
    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds & 0xFFFF_FFFF_FFFF
        self.nanoseconds = nanoseconds
    }

    /// A timestamp from nanoseconds since the epoch.
    public init(totalNanoseconds: Int64) {
        self.init(seconds: UInt64(max(0, totalNanoseconds) / 1_000_000_000), nanoseconds: UInt32(max(0, totalNanoseconds) % 1_000_000_000))
    }

    /// Nanoseconds since the epoch (until the year 2262).
    public var totalNanoseconds: Int64 { Int64(truncatingIfNeeded: seconds) &* 1_000_000_000 &+ Int64(nanoseconds) }

    func append(to bytes: inout [UInt8]) {
        PTPWriter.append(UInt16(truncatingIfNeeded: seconds >> 32), to: &bytes)
        PTPWriter.append(UInt32(truncatingIfNeeded: seconds), to: &bytes)
        PTPWriter.append(nanoseconds, to: &bytes)
    }

    static func read(_ reader: inout PTPReader) -> PTPTimestamp {
        let high = UInt64(reader.uint16())
        let low = UInt64(reader.uint32())
        return PTPTimestamp(seconds: high << 32 | low, nanoseconds: reader.uint32())
    }
}

/// What a master says of its clock in an Announce: what the best master clock algorithm compares.
public struct PTPAnnounce: Hashable, Sendable {
    /// TAI minus UTC, in seconds (37 since 2017).
    public var currentUTCOffset: Int16
    /// The first priority (lower wins; ptp4l's default 128).
    public var priority1: UInt8
    /// The clock class (6 = locked to GPS, 248 = default, 255 = follower only).
    public var clockClass: UInt8
    /// The clock accuracy (0xFE = unknown).
    public var clockAccuracy: UInt8
    /// The scaled log variance of the clock.
    public var offsetScaledLogVariance: UInt16
    /// The second priority.
    public var priority2: UInt8
    /// The grandmaster's clock identity.
    public var grandmasterIdentity: UInt64
    /// How many boundary clocks lie between the grandmaster and the sender.
    public var stepsRemoved: UInt16
    /// Where the time comes from (0xA0 = internal oscillator).
    public var timeSource: UInt8

    /// An announcement from its parts.
    public init(currentUTCOffset: Int16 = 37, priority1: UInt8 = 128, clockClass: UInt8 = 248, clockAccuracy: UInt8 = 0xFE,
                offsetScaledLogVariance: UInt16 = 0xFFFF, priority2: UInt8 = 128, grandmasterIdentity: UInt64,
                stepsRemoved: UInt16 = 0, timeSource: UInt8 = 0xA0) {
        self.currentUTCOffset = currentUTCOffset
        self.priority1 = priority1
        self.clockClass = clockClass
        self.clockAccuracy = clockAccuracy
        self.offsetScaledLogVariance = offsetScaledLogVariance
        self.priority2 = priority2
        self.grandmasterIdentity = grandmasterIdentity
        self.stepsRemoved = stepsRemoved
        self.timeSource = timeSource
    }

    /// True when this clock beats `other` in IEEE 1588's dataset comparison: priority1, class,
    /// accuracy, variance, priority2, then the identity (each lower is better), then fewer steps.
    public func isBetter(than other: PTPAnnounce) -> Bool {
        let mine = (priority1, clockClass, clockAccuracy, offsetScaledLogVariance, priority2)
        let theirs = (other.priority1, other.clockClass, other.clockAccuracy, other.offsetScaledLogVariance, other.priority2)
        if mine != theirs { return mine < theirs }
        if grandmasterIdentity != other.grandmasterIdentity { return grandmasterIdentity < other.grandmasterIdentity }
        return stepsRemoved < other.stepsRemoved
    }

    func append(to bytes: inout [UInt8]) {
        PTPTimestamp(seconds: 0, nanoseconds: 0).append(to: &bytes)
        PTPWriter.append(UInt16(bitPattern: currentUTCOffset), to: &bytes)
        bytes += [0, priority1, clockClass, clockAccuracy]
        PTPWriter.append(offsetScaledLogVariance, to: &bytes)
        bytes.append(priority2)
        PTPWriter.append(grandmasterIdentity, to: &bytes)
        PTPWriter.append(stepsRemoved, to: &bytes)
        bytes.append(timeSource)
    }
}

/// What follows the header, by message type.
public enum PTPBody: Hashable, Sendable {
    /// A Sync's origin time (zero from a two-step clock).
    case sync(PTPTimestamp)
    /// A Delay_Req's origin time (the follower's own, often zero).
    case delayRequest(PTPTimestamp)
    /// A Follow_Up's precise origin time of the Sync with the same sequence number.
    case followUp(PTPTimestamp)
    /// When the master received the Delay_Req of `requester` with the same sequence number.
    case delayResponse(received: PTPTimestamp, requester: PTPPortIdentity)
    /// An Announce.
    case announce(PTPAnnounce)
    /// Any other message, its body kept as it came.
    case other([UInt8])

    static func decode(type: PTPMessageType, reader: inout PTPReader, length: Int) throws(PTPDecodeError) -> PTPBody {
        let needed: Int
        switch type {
        case .sync, .delayRequest, .followUp: needed = 10
        case .delayResponse: needed = 20
        case .announce: needed = 30
        default: needed = 0
        }
        guard length - PTPMessage.headerLength >= needed else { throw .tooShortFor(type, length) }
        switch type {
        case .sync: return .sync(PTPTimestamp.read(&reader))
        case .delayRequest: return .delayRequest(PTPTimestamp.read(&reader))
        case .followUp: return .followUp(PTPTimestamp.read(&reader))
        case .delayResponse:
            let received = PTPTimestamp.read(&reader)
            return .delayResponse(received: received, requester: PTPPortIdentity(clockIdentity: reader.uint64(), port: reader.uint16()))
        case .announce:
            _ = PTPTimestamp.read(&reader)
            let offset = Int16(bitPattern: reader.uint16())
            _ = reader.byte()
            let priority1 = reader.byte(), clockClass = reader.byte(), accuracy = reader.byte()
            let variance = reader.uint16()
            let priority2 = reader.byte()
            let identity = reader.uint64()
            let steps = reader.uint16()
            return .announce(PTPAnnounce(currentUTCOffset: offset, priority1: priority1, clockClass: clockClass, clockAccuracy: accuracy,
                                         offsetScaledLogVariance: variance, priority2: priority2, grandmasterIdentity: identity,
                                         stepsRemoved: steps, timeSource: reader.byte()))
        default:
            return .other(reader.rest(upTo: length))
        }
    }
}

/// Why a datagram is not a PTP message we read.
public enum PTPDecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Shorter than a header.
    case tooShort(Int)
    /// A message type PTPv2 does not define.
    case unknownType(UInt8)
    /// Not PTP version 2.
    case unsupportedVersion(UInt8)
    /// The declared length is below a header or beyond the datagram.
    case badLength(declared: Int, actual: Int)
    /// Too short for its type's body.
    case tooShortFor(PTPMessageType, Int)

    /// What is wrong, for logs and counters.
    public var description: String {
        switch self {
        case .tooShort(let count): "\(count) bytes, shorter than a PTP header"
        case .unknownType(let type): "unknown message type \(type)"
        case .unsupportedVersion(let version): "PTP version \(version), not 2"
        case .badLength(let declared, let actual): "declared length \(declared) for a \(actual)-byte datagram"
        case .tooShortFor(let type, let length): "\(length) bytes is too short for \(type)"
        }
    }
}

/// Big-endian reads from a buffer whose length was checked before.
struct PTPReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func byte() -> UInt8 {
        defer { index += 1 }
        return index < bytes.count ? bytes[index] : 0
    }

    mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }
    mutating func uint32() -> UInt32 { UInt32(uint16()) << 16 | UInt32(uint16()) }
    mutating func uint64() -> UInt64 { UInt64(uint32()) << 32 | UInt64(uint32()) }

    mutating func rest(upTo length: Int) -> [UInt8] {
        guard index < min(length, bytes.count) else { return [] }
        defer { index = length }
        return Array(bytes[index..<min(length, bytes.count)])
    }
}

/// Big-endian writes.
enum PTPWriter {
    static func append<Value: FixedWidthInteger>(_ value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }
}
