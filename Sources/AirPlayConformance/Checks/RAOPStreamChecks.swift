import AirPlaySender
import AirPlayWire
import Foundation
import Glibc

/// `raop.md §5`: the UDP side of the RAOP session the RTSP steps built. After RECORD the
/// receiver asks our timing port for the time, and a packet missing from a short real-time
/// stream is asked for again on our control port. Neither failure breaks the session for the
/// steps after it.
enum RAOPStreamChecks {
    static let timing = ConformanceCheck("raop.timing", "raop.md §5 UDP ports and packets: timing",
                                         "after RECORD the receiver asks the sender's timing port for the time (0x52)") { probe in
        if let broken = probe.sessionBroken { return .skipped(broken) }
        guard probe.udpDescriptors.count >= 2 else { return .skipped("SETUP named no timing port of ours") }
        guard let (request, after) = await probe.awaitDatagram(on: probe.udpDescriptors[1], timeout: 4, matching: {
            $0.count >= 32 && $0[1] & 0x7F == 0x52
        }) else { return .failed("no timing request (0x52) reached our timing port within 4 s") }
        return .passed("a \(request.count)-byte timing request \(Int(after * 1000)) ms after asking")
    }

    static let resend = ConformanceCheck("raop.resend", "raop.md §5 UDP ports and packets: resend request",
                                         "a packet missing from a real-time stream is asked for (0x55) on the sender's control port") { probe in
        if let broken = probe.sessionBroken { return .skipped(broken) }
        guard let ports = probe.receiverPorts, probe.udpDescriptors.count >= 2 else { return .skipped("SETUP named no ports") }
        guard let address = probe.receiverAddress() else { return .failed("cannot resolve \(probe.host) to an IPv4 address") }
        let (control, timing) = (probe.udpDescriptors[0], probe.udpDescriptors[1])
        let outcome: GapStream.Outcome = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var stream = GapStream(address: address, ports: ports, control: control, timing: timing)
                continuation.resume(returning: stream.run(seconds: 6))
            }
        }
        switch outcome {
        case .asked(let request, let after, let timingAnswered):
            return .passed("asked for \(request.count) from \(request.first) \(Int(after * 1000)) ms after the gap "
                           + "(\(timingAnswered) timing requests answered)")
        case .askedWrongly(let request):
            return .failed("asked for \(request.count) from \(request.first), not for \(GapStream.missing)")
        case .notAsked(let timingAnswered):
            return .failed("no resend request (0x55) for the missing packet within 6 s (\(timingAnswered) timing requests answered)")
        }
    }
}

/// Three seconds of ALAC silence streamed in real time as a sender does (a first sync, a sync
/// a second, our timing port answering the receiver's requests), with one packet left out: the
/// receiver should ask for it. Blocking: run off the concurrency pool.
struct GapStream {
    enum Outcome: Sendable {
        case asked(RAOPResendRequest, after: Double, timingAnswered: Int)
        case askedWrongly(RAOPResendRequest)
        case notAsked(timingAnswered: Int)
    }

    /// RECORD announced sequence 1000 at RTP time 352000; this one is not sent.
    static let missing: UInt16 = 1040
    static let latencyFrames: UInt32 = 88200
    let address: sockaddr_in
    let ports: (audio: Int, control: Int)
    let control: Int32
    let timing: Int32
    private let silence = ALACEncoder().encode([Int32](repeating: 0, count: ALACEncoder.framesPerPacket * 2))
    private var timingAnswered = 0

    init(address: sockaddr_in, ports: (audio: Int, control: Int), control: Int32, timing: Int32) {
        (self.address, self.ports, self.control, self.timing) = (address, ports, control, timing)
    }

    mutating func run(seconds: Double) -> Outcome {
        let frames = Double(ALACEncoder.framesPerPacket)
        let started = RAOPClock.now()
        var sent = 0, nextSync = 0.0, gapSentAt: Double?
        let total = Int(3 * 44100 / frames)
        while true {
            let now = RAOPClock.now() - started
            guard now < seconds else { return .notAsked(timingAnswered: timingAnswered) }
            if now >= nextSync {
                let playing = UInt32(352000 + now * 44100) &- Self.latencyFrames
                send(RAOPSync(rtpTimeNowMinusLatency: playing, ntpTime: RAOPClock.ntp(atUptime: started + now),
                              rtpTimeNext: packet(sent).timestamp, isFirst: nextSync == 0).bytes, to: ports.control)
                nextSync += 1
            }
            while sent < total, Double(sent) * frames / 44100 <= now {
                let audio = packet(sent)
                if audio.sequence == Self.missing { gapSentAt = now } else { send(audio.bytes, to: ports.audio) }
                sent += 1
            }
            var waiting = [pollfd(fd: control, events: Int16(POLLIN), revents: 0), pollfd(fd: timing, events: Int16(POLLIN), revents: 0)]
            guard poll(&waiting, 2, 5) > 0 else { continue }
            if waiting[1].revents & Int16(POLLIN) != 0 { answerTiming() }
            if waiting[0].revents & Int16(POLLIN) != 0, case .resendRequest(let request)? = RAOPPacket.parse(receive(control).bytes) {
                guard request.first <= Self.missing, Self.missing &- request.first < request.count else { return .askedWrongly(request) }
                send(RAOPPacket.retransmission(of: packet(Int(Self.missing - 1000)).bytes, sequence: Self.missing), to: ports.control)
                return .asked(request, after: now - (gapSentAt ?? now), timingAnswered: timingAnswered)
            }
        }
    }

    private func packet(_ index: Int) -> RAOPAudioPacket {
        RAOPAudioPacket(sequence: 1000 &+ UInt16(truncatingIfNeeded: index),
                        timestamp: 352000 &+ UInt32(index * ALACEncoder.framesPerPacket), marker: index == 0, payload: silence)
    }

    /// A timing request answered to where it came from, as a sender's timing port does.
    private mutating func answerTiming() {
        let (bytes, source) = receive(timing)
        guard case .timingRequest(let request)? = RAOPPacket.parse(bytes), var source else { return }
        let reply = RAOPTiming.reply(to: request) { RAOPClock.ntp(atUptime: RAOPClock.now()) }.bytes(reply: true)
        Self.send(reply, from: timing, to: &source)
        timingAnswered += 1
    }

    private func receive(_ descriptor: Int32) -> (bytes: [UInt8], source: sockaddr_in?) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length) }
            }
        }
        return count > 0 ? (Array(buffer[0..<count]), source) : ([], nil)
    }

    /// Sends from our control socket to one of the receiver's ports.
    private func send(_ bytes: [UInt8], to port: Int) {
        var target = address
        target.sin_port = UInt16(port).bigEndian
        Self.send(bytes, from: control, to: &target)
    }

    private static func send(_ bytes: [UInt8], from descriptor: Int32, to target: inout sockaddr_in) {
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}

extension ConformanceProbe {
    /// The first datagram on `descriptor` that `matching` accepts within `timeout` seconds, and
    /// how long it took; others are read and passed over.
    func awaitDatagram(on descriptor: Int32, timeout: Double, matching: @escaping @Sendable ([UInt8]) -> Bool) async -> ([UInt8], Double)? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let started = Date()
                var buffer = [UInt8](repeating: 0, count: 2048)
                while true {
                    let left = timeout - Date().timeIntervalSince(started)
                    var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    guard left > 0, poll(&waiting, 1, Int32(left * 1000)) > 0 else { return continuation.resume(returning: nil) }
                    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { continue }
                    let datagram = Array(buffer[0..<count])
                    if matching(datagram) { return continuation.resume(returning: (datagram, Date().timeIntervalSince(started))) }
                }
            }
        }
    }

    /// The receiver's IPv4 address (our UDP sockets are IPv4).
    func receiverAddress() -> sockaddr_in? {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let info = list, let address = info.pointee.ai_addr else { return nil }
        defer { freeaddrinfo(list) }
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
    }
}
