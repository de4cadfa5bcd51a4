@testable import AirPlayReceiver
import AirPlayTesting
import AirPlayWire
import Foundation
import NIOCore
import Testing

/// The audio port as the playout's thread reads it: datagrams in batches, in place, with the
/// sender's host checked as bytes; and the playout playing what it reads from such a port.
@Suite struct UDPDatagramSocketTests {
    /// Sends datagrams to 127.0.0.1:`port` from a socket of its own.
    static func send(_ datagrams: [[UInt8]], to port: Int) {
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        for datagram in datagrams {
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sender, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    final class Received: @unchecked Sendable {
        let lock = NSLock()
        var datagrams: [([UInt8], Bool)] = []
        var truncated = 0
    }

    static func port(expecting host: [UInt8]?) throws -> (UDPDatagramSocket, Int, Received) {
        let (descriptor, port) = try RAOPPorts.bindUDP(local: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
        let received = Received()
        let input = UDPDatagramSocket(descriptor: descriptor, expectedHost: host, handle: { datagram, fromHost in
            received.lock.withLock { received.datagrams.append((Array(datagram), fromHost)) }
        }, truncated: { received.lock.withLock { received.truncated += 1 } })
        return (input, port, received)
    }

    /// Twenty datagrams (more than one batch) come out of one drain, in order, each marked as
    /// from the expected host; one too large for a slot is reported, not handed on.
    @Test func drainReadsEveryWaitingDatagramInOrder() throws {
        let (input, port, received) = try Self.port(expecting: [127, 0, 0, 1])
        defer { input.close() }
        Self.send((0..<20).map { [UInt8($0), 1, 2, 3] } + [[UInt8](repeating: 7, count: UDPDatagramSocket.slotSize + 1)], to: port)
        usleep(50_000)
        input.drain()
        #expect(received.datagrams.map { $0.0[0] } == (0..<20).map { UInt8($0) })
        #expect(received.datagrams.allSatisfy { $0.1 && $0.0.count == 4 })
        #expect(received.truncated == 1)
        input.drain()
        #expect(received.datagrams.count == 20, "nothing more waits")
    }

    /// A datagram from another host than the session's sender is marked as such (the session
    /// drops and counts it).
    @Test func anotherHostIsTold() throws {
        let (input, port, received) = try Self.port(expecting: [192, 0, 2, 1])
        defer { input.close() }
        Self.send([[0x80, 0x60, 0, 1]], to: port)
        usleep(50_000)
        input.drain()
        #expect(received.datagrams.count == 1 && received.datagrams[0].1 == false)
    }

    /// A playout with an attached port plays what arrives there: the first packet waits out
    /// the buffer (0.1 s here), then every packet reaches the output once, in order.
    @Test func aPlayoutPlaysWhatItsPortReceives() throws {
        let output = RecordingPCMOutput()
        let playout = AudioPlayout(output: output, format: .cd, framesPerPacket: 4, bufferDelay: 0.1)
        let (descriptor, port) = try RAOPPorts.bindUDP(local: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
        playout.attach(UDPDatagramSocket(descriptor: descriptor, expectedHost: nil, handle: { datagram, _ in
            guard let header = RAOPAudioPacket.header(of: datagram) else { return }
            playout.receive(timestamp: header.timestamp,
                            samples: RAOPPacketDecoding.bigEndianSamples(UnsafeRawBufferPointer(rebasing: datagram[12...]), width: 2))
        }, truncated: {}))
        let start = ProcessInfo.processInfo.systemUptime
        // Three packets of 4 stereo frames each, L16 big-endian: sample values 0...23.
        let packets = (0..<3).map { index -> [UInt8] in
            let header: [UInt8] = [0x80, 0x60, 0, UInt8(index), 0, 0, 0, UInt8(index * 4), 0, 0, 0, 0]
            return header + (0..<8).flatMap { sample -> [UInt8] in [0, UInt8(index * 8 + sample)] }
        }
        Self.send(packets, to: port)
        var played: [Int32] = []
        for _ in 0..<100 where played.count < 24 {
            usleep(10_000)
            played = output.samples
        }
        #expect(played == (0..<24).map { Int32($0) })
        let first = try #require(output.writes.first)
        #expect(first.time - start >= 0.09, "the buffer delay was waited out")
        playout.stop()
        #expect(output.isClosed)
        #expect(playout.statistics.received == 3)
    }
}
