import AirPlayMedia
import AirPlayWire
import Glibc
import NIOCore
import Synchronization
import LinuxIO

/// One packet of a buffered stream, as it comes on the TCP data connection after its 2-byte
/// length: `0x80`, a 24-bit sequence number, the RTP time, the SSRC (it names the format),
/// then the sealed payload, its 16-byte tag and the 8-byte nonce trailer.
struct BufferedAudioPacket: Hashable, Sendable {
    /// The 24-bit sequence field.
    var sequence: UInt32
    /// The RTP time of its first frame.
    var timestamp: UInt32
    /// The SSRC.
    var ssrc: UInt32
    /// What follows the 12-byte header: ciphertext, tag, nonce trailer.
    var sealed: [UInt8]

    /// The smallest packet: a header, an empty payload, a tag and a nonce.
    static let minimumSize = 12 + 16 + 8
    /// The largest frame read (the length prefix included); Apple's largest is about 4 KiB.
    static let maximumFrame = 16_384

    /// Reads a packet (the frame without its length prefix); nil for one too short or not RTP version 2.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.minimumSize, bytes[0] >> 6 == 2 else { return nil }
        sequence = UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        timestamp = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
        ssrc = UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
        sealed = Array(bytes[12...])
    }

    /// The frame as a sender writes it: length (counting itself), header, sealed payload.
    static func frame(sequence: UInt32, timestamp: UInt32, ssrc: UInt32, sealed: [UInt8]) -> [UInt8] {
        let length = 2 + 12 + sealed.count
        var bytes: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF), 0x80,
                              UInt8((sequence >> 16) & 0xFF), UInt8((sequence >> 8) & 0xFF), UInt8(sequence & 0xFF)]
        for value in [timestamp, ssrc] { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }
        return bytes + sealed
    }
}

/// The TCP data connection of a buffered stream: listens on a port of its own, takes one
/// connection from the session's sender, and reads length-prefixed packets on a thread of its
/// own. While `isFull` says the playout holds enough, it stops reading, and TCP's flow control
/// holds the sender back: there is no retransmission in buffered mode, so nothing is dropped.
final class BufferedDataReceiver: Sendable {
    /// The port senders connect to (`dataPort`).
    let port: Int
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)

    /// Listens on `local`'s address; every packet goes to `packet`, the end of the connection
    /// (with why) to `ended`.
    init(local: SocketAddress?, expectedHost: [UInt8]?, isFull: @escaping @Sendable () -> Bool,
         packet: @escaping @Sendable (BufferedAudioPacket) -> Void, malformed: @escaping @Sendable (String) -> Void,
         ended: @escaping @Sendable (String) -> Void) throws {
        let (descriptor, port) = try RAOPPorts.bind(local: local, type: SOCK_STREAM, listening: true)
        listener = descriptor
        self.port = port
        DedicatedThread.start(name: "airplay-buffered") { [self] in
            let reason = serve(expectedHost: expectedHost, isFull: isFull, packet: packet, malformed: malformed)
            close(listener)
            if !stopped.load(ordering: .acquiring) { ended(reason) }
        }
    }

    /// Stops reading and closes the connection within 100 ms.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    private func serve(expectedHost: [UInt8]?, isFull: @Sendable () -> Bool, packet: @Sendable (BufferedAudioPacket) -> Void,
                       malformed: @Sendable (String) -> Void) -> String {
        guard let connection = accept(expectedHost: expectedHost) else { return "no data connection" }
        defer { close(connection) }
        var frame = [UInt8](repeating: 0, count: BufferedAudioPacket.maximumFrame)
        while !stopped.load(ordering: .acquiring) {
            if isFull() {
                usleep(5_000)
                continue
            }
            guard read(connection, into: &frame, count: 2) else { return "the sender closed the data connection" }
            let length = Int(frame[0]) << 8 | Int(frame[1])
            guard length >= 2 + BufferedAudioPacket.minimumSize, length <= BufferedAudioPacket.maximumFrame else {
                malformed("data frame length \(length) outside \(2 + BufferedAudioPacket.minimumSize)...\(BufferedAudioPacket.maximumFrame)")
                return "a malformed frame on the data connection"
            }
            guard read(connection, into: &frame, count: length - 2) else { return "the sender closed the data connection" }
            guard let parsed = BufferedAudioPacket(Array(frame[0..<(length - 2)])) else {
                malformed("a data packet that is not RTP version 2")
                continue
            }
            packet(parsed)
        }
        return "stopped"
    }

    /// Waits for the sender's connection; others are closed at once.
    private func accept(expectedHost: [UInt8]?) -> Int32? {
        while !stopped.load(ordering: .acquiring) {
            var polled = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&polled, 1, 100) > 0 else { continue }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let connection = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            if let expectedHost, Self.hostBytes(address) != expectedHost {
                close(connection)
                continue
            }
            return connection
        }
        return nil
    }

    /// The host part of a peer's address, IPv4-mapped IPv6 as IPv4 (as `RAOPPorts.hostBytes`).
    private static func hostBytes(_ address: sockaddr_storage) -> [UInt8] {
        var copy = address
        return withUnsafePointer(to: &copy) { pointer -> [UInt8] in
            if address.ss_family == sa_family_t(AF_INET) {
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } }
            }
            let bytes = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) } }
            return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(bytes.suffix(4)) : bytes
        }
    }

    /// Reads exactly `count` bytes into the start of `buffer`, checking `stopped` every 100 ms.
    private func read(_ connection: Int32, into buffer: inout [UInt8], count: Int) -> Bool {
        var done = 0
        while done < count {
            if stopped.load(ordering: .acquiring) { return false }
            var polled = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&polled, 1, 100) > 0 else { continue }
            let got = buffer.withUnsafeMutableBytes { Glibc.recv(connection, $0.baseAddress! + done, count - done, 0) }
            if got <= 0 { return false }
            done += got
        }
        return true
    }
}
