import AirPlayMedia
import AirPlayCrypto
import AirPlayPlist
import AirPlayTiming
import AirPlayWire
import Foundation
import Glibc

/// Buffered AirPlay 2 audio (stream type 103), the way senders play to a group: the session is
/// timed by PTP (our grandmaster), the audio goes ahead of time over a TCP data connection, and
/// `SETRATEANCHORTIME` tells each receiver which RTP time sounds at which time of the PTP clock.
/// Every receiver gets the same anchors, so all play each frame at the same moment.
extension ReceiverLink {
    /// Seals one ALAC packet and writes it on the data connection; blocks while TCP holds us
    /// back (the receiver's buffer is full). False when the connection is gone.
    @discardableResult
    func sendBuffered(sequence: UInt32, timestamp: UInt32, payload: [UInt8]) -> Bool {
        guard let dataConnection, let frame = packets.buffered(sequence: sequence, timestamp: timestamp, payload: payload) else { return false }
        return dataConnection.send(frame)
    }

    /// SETRATEANCHORTIME with `anchor` (rate 1 with its RTP and PTP times, or a pause).
    /// A receiver whose own clock is followed gets the same moment named on its clock.
    func sendAnchor(_ anchor: RateAnchor) async throws(SenderError) {
        var anchor = anchor
        if anchor.playing, let receiverTimeline { anchor.timeline = receiverTimeline }
        try await perform(.anchor(anchor))
    }

    /// The `audioFormat` bit of the stream: stereo ALAC 18 (44.1 kHz 16-bit), 19 (44.1/24),
    /// 20 (48/16) or 21 (48/24); AAC-LC 22 (44.1 kHz) or 23 (48 kHz).
    static func formatBit(_ format: PCMFormat, codec: BufferedCodec) -> UInt64 {
        let rate48 = format.sampleRate == 48000
        if codec == .aac { return UInt64(1) << (rate48 ? 23 : 22) }
        return UInt64(1) << (18 + (rate48 ? 2 : 0) + (format.bitsPerSample > 16 ? 1 : 0))
    }
}

/// The TCP data connection of a buffered stream, written from the streamer's thread with
/// blocking sends: when the receiver stops reading, TCP holds the streamer back.
package final class BufferedDataConnection: @unchecked Sendable {
    private var descriptor: Int32

    package init(host: String, port: Int) throws(SenderError) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw SenderError(.badInput, "buffered audio needs an IPv4 receiver, not \(host)") }
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw SenderError(.connectionLost, "socket: \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(socket)
            throw SenderError(.connectionLost, "cannot connect the buffered data port \(host):\(port): \(reason)")
        }
        var on: Int32 = 1
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        // A receiver that stops reading for this long (gone without a reset) is given up, so
        // it cannot hold the others back; a healthy one never makes us wait near this long.
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        descriptor = socket
    }

    /// Writes all of `bytes`; false when the connection is closed or broken.
    package func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            guard descriptor >= 0 else { return false }
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    /// Closes the connection; later sends fail.
    package func close() {
        guard descriptor >= 0 else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        descriptor = -1
    }
}
