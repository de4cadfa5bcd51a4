/// The packets a sender keeps to answer resend requests, as a value: the last `capacity` sent,
/// by sequence number (which wraps at 65536). A slot holds the packet and the number it was
/// sent under, so a request for a number long gone finds nothing rather than a newer packet.
struct ResendBacklog: Sendable {
    /// How many packets are kept (a power of two dividing 65536).
    let capacity: Int
    private var slots: [(sequence: UInt16, packet: [UInt8])?]

    /// An empty backlog keeping `capacity` packets (1024 by default: over 8 s of realtime audio).
    init(capacity: Int = 1024) {
        precondition(capacity > 0 && capacity <= 65536 && 65536 % capacity == 0, "capacity must divide 65536")
        self.capacity = capacity
        slots = Array(repeating: nil, count: capacity)
    }

    /// Keeps `packet` as sent under `sequence`, dropping the one `capacity` numbers before it.
    mutating func store(_ packet: [UInt8], sequence: UInt16) {
        slots[Int(sequence) % capacity] = (sequence, packet)
    }

    /// The packet sent under `sequence`, if still kept.
    func packet(_ sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % capacity], slot.sequence == sequence else { return nil }
        return slot.packet
    }

    /// The kept packets of a resend request for `count` packets from `first` (across the wrap),
    /// in order, each with its number; at most `capacity` are looked at, whatever was asked.
    func packets(from first: UInt16, count: UInt16) -> [(sequence: UInt16, packet: [UInt8])] {
        (0..<min(Int(count), capacity)).compactMap { offset in
            let sequence = first &+ UInt16(offset)
            return packet(sequence).map { (sequence, $0) }
        }
    }
}
