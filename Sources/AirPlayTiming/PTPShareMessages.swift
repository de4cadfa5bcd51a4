import AirPlayWire

/// What one airplayd's PTP follower tells the others on the box (`SharedPTPClock`), and what
/// they tell it: a snapshot of every master it tracks, and each instance's timing peers.
///
/// Datagrams on a local `SOCK_SEQPACKET` socket, little-endian, no versioning beyond the kind
/// byte: both ends are the same binary or a restart away from it.
public enum PTPShareMessage: Hashable, Sendable {
    /// The follower's masters (at most 16) as of the moment it was sent.
    case snapshot([PTPFollower.MasterStatus])
    /// An instance's timing peers (nil: its sessions name none).
    case peers([String]?)

    /// The most masters a snapshot carries (the follower tracks as many).
    public static let maximumMasters = 16

    private static let snapshotKind: UInt8 = 1
    private static let peersKind: UInt8 = 2

    /// The datagram.
    public func encoded() -> [UInt8] {
        var out = ByteWriter()
        switch self {
        case .snapshot(let masters):
            out.byte(Self.snapshotKind)
            out.byte(UInt8(min(masters.count, Self.maximumMasters)))
            for master in masters.prefix(Self.maximumMasters) {
                out.integer(master.identity.clockIdentity)
                out.integer(UInt64(master.identity.port))
                out.string(master.address)
                out.byte(master.followed ? 1 : 0)
                out.integer(UInt64(bitPattern: master.silentFor))
                out.integer(UInt64(bitPattern: master.pathDelay ?? -1))
                out.byte(master.announce == nil ? 0 : 1)
                if let announce = master.announce {
                    out.integer(announce.grandmasterIdentity)
                    out.byte(announce.priority1)
                    out.byte(announce.clockClass)
                }
                out.byte(master.line == nil ? 0 : 1)
                if let line = master.line {
                    out.integer(UInt64(bitPattern: line.local))
                    out.integer(line.offset.bitPattern)
                    out.integer(line.drift.bitPattern)
                    out.integer(UInt64(line.samples))
                    out.integer(line.residual.bitPattern)
                }
                // Apple's clocks: the timing sequence, why it last started, wake-ups, a stopped clock.
                out.integer(UInt64(max(0, master.sequence)))
                // Short (the reasons are) so 16 masters stay within a 4 KiB datagram; a longer
                // one is left out whole rather than cut inside a character.
                let restart = master.lastRestart ?? ""
                out.string(restart.utf8.count <= 48 ? restart : "")
                out.integer(UInt64(max(0, master.wakeUps)))
                out.integer(UInt64(max(0, master.frozenFollowUps)))
            }
        case .peers(let addresses):
            out.byte(Self.peersKind)
            out.byte(addresses == nil ? 0 : 1)
            let list = (addresses ?? []).prefix(32)
            out.byte(UInt8(list.count))
            for address in list { out.string(address) }
        }
        return out.bytes
    }

    /// Reads a datagram; nil for one that is not a whole message of a known kind.
    public static func decode(_ bytes: [UInt8]) -> PTPShareMessage? {
        var reader = ByteReader(bytes)
        switch reader.byte() {
        case snapshotKind:
            guard let count = reader.byte(), count <= Self.maximumMasters else { return nil }
            var masters: [PTPFollower.MasterStatus] = []
            for _ in 0..<count {
                guard let clock = reader.integer(), let port = reader.integer(), let address = reader.string(),
                      let followed = reader.byte(), let silent = reader.integer(), let delay = reader.integer(),
                      let hasAnnounce = reader.byte() else { return nil }
                var announce: PTPAnnounce?
                if hasAnnounce == 1 {
                    guard let grandmaster = reader.integer(), let priority1 = reader.byte(), let clockClass = reader.byte() else { return nil }
                    announce = PTPAnnounce(priority1: priority1, clockClass: clockClass, grandmasterIdentity: grandmaster)
                }
                guard let hasLine = reader.byte() else { return nil }
                var line: ClockLine?
                if hasLine == 1 {
                    guard let local = reader.integer(), let offset = reader.integer(), let drift = reader.integer(),
                          let samples = reader.integer(), samples <= UInt64(Int.max), let residual = reader.integer() else { return nil }
                    line = ClockLine(local: Int64(bitPattern: local), offset: Double(bitPattern: offset), drift: Double(bitPattern: drift),
                                     samples: Int(samples), residual: Double(bitPattern: residual))
                    // Only a line a follower could have fitted (its times stay clear of overflow).
                    guard let line, line.offset.magnitude <= Double(PTPFollower.largestOffset), line.drift.magnitude <= ClockLine.maximumDrift,
                          line.residual.isFinite, line.local.magnitude <= PTPFollower.largestOffset.magnitude else { return nil }
                }
                guard let sequence = reader.integer(), let restart = reader.string(), let wakeUps = reader.integer(),
                      let frozen = reader.integer(), sequence <= UInt64(Int32.max), wakeUps <= UInt64(Int32.max),
                      frozen <= UInt64(Int32.max) else { return nil }
                let pathDelay = Int64(bitPattern: delay)
                guard pathDelay <= PTPFollower.longestPathDelay, Int64(bitPattern: silent) >= 0, silent <= UInt64(PTPFollower.largestOffset) else { return nil }
                masters.append(PTPFollower.MasterStatus(
                    identity: PTPPortIdentity(clockIdentity: clock, port: UInt16(truncatingIfNeeded: port)), address: address,
                    announce: announce, silentFor: Int64(bitPattern: silent), line: line, pathDelay: pathDelay < 0 ? nil : pathDelay,
                    followed: followed == 1, sequence: Int(sequence), lastRestart: restart.isEmpty ? nil : restart,
                    wakeUps: Int(wakeUps), frozenFollowUps: Int(frozen)))
            }
            return reader.atEnd ? .snapshot(masters) : nil
        case peersKind:
            guard let given = reader.byte(), let count = reader.byte(), count <= 32 else { return nil }
            var addresses: [String] = []
            for _ in 0..<count {
                guard let address = reader.string() else { return nil }
                addresses.append(address)
            }
            return reader.atEnd ? .peers(given == 1 ? addresses : nil) : nil
        default:
            return nil
        }
    }
}

/// Little-endian fields, strings behind a length byte.
private struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func byte(_ value: UInt8) { bytes.append(value) }
    mutating func integer(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func string(_ value: String) {
        let utf8 = Array(value.utf8.prefix(255))
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }
}

/// Reads what `ByteWriter` wrote; every read is bounds-checked (nil past the end).
private struct ByteReader {
    private let bytes: [UInt8]
    private var at = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var atEnd: Bool { at == bytes.count }
    mutating func byte() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }
    mutating func integer() -> UInt64? {
        guard at + 8 <= bytes.count else { return nil }
        defer { at += 8 }
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
    }
    mutating func string() -> String? {
        guard let count = byte().map(Int.init), at + count <= bytes.count else { return nil }
        defer { at += count }
        return String(decoding: bytes[at..<(at + count)], as: UTF8.self)
    }
}
