import AirPlayPairing
import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

/// The bug classes other receivers shipped in 2025-26 (shairport-sync 5.5's security release
/// and its #2263/#2264, UxPlay's CVE-2025-60458), each sent to the running daemon: a clear
/// answer, the session (if any) going on, the daemon serving the next sender. The two that need
/// an encrypted AirPlay 2 connection (timing peers' `Addresses` that are not strings, a short
/// `shk`) are in `AirPlay2Tests`; each class is also a seed under `Fuzz/Regressions`.
@Suite(.timeLimit(.minutes(10))) struct KnownBugClassesTests {
    private func rtsp(_ connection: RawHTTPConnection, _ method: String, _ cseq: Int, headers: [String: String] = [:],
                      body: [UInt8] = []) throws -> RawHTTPConnection.Message {
        var all = headers
        all["CSeq"] = String(cseq)
        return try connection.request(method, "rtsp://127.0.0.1/3413821438", headers: all, body: body, protocolName: "RTSP/1.0")
    }

    /// A realtime session of 16-bit PCM (ANNOUNCE, SETUP, RECORD) on `connection`: its audio port.
    private func record(_ connection: RawHTTPConnection) throws -> Int {
        let sdp = RTSPConformanceTests.sdp
        #expect(try rtsp(connection, "ANNOUNCE", 1, headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8)).status == 200)
        let setup = try rtsp(connection, "SETUP", 2, headers: ["Transport": "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001;timing_port=6002"])
        #expect(setup.status == 200)
        #expect(try rtsp(connection, "RECORD", 3, headers: ["RTP-Info": "seq=1;rtptime=0"]).status == 200)
        return Int(try #require(RTSPTransport(parsing: setup.headers["transport"] ?? "").port("server_port")))
    }

    /// UxPlay hex-dumped the body of a method it did not know onto the stack before any
    /// pairing. Here an unknown method with 64 KiB of binary body gets 501 naming the method on
    /// an RTSP connection (404 naming the path on an HTTP one), and each connection serves its
    /// next request.
    @Test func anUnknownMethodWithALargeBodyIsAnsweredBeforeAnyPairing() throws {
        let daemon = try LocalDaemon()
        let body = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for rtspConnection in [true, false] {
            let connection = try RawHTTPConnection(port: daemon.port)
            let answer = try connection.request("XYZZY", rtspConnection ? "rtsp://127.0.0.1/1" : "/xyzzy", headers: ["CSeq": "1"],
                                                body: body, protocolName: rtspConnection ? "RTSP/1.0" : "HTTP/1.1")
            // RTSP names the method it does not implement; HTTP the resource it does not have.
            let named = rtspConnection ? answer.status == 501 && answer.text.contains("XYZZY") : answer.status == 404 && answer.text.contains("/xyzzy")
            #expect(named, "\(answer.startLine) \(answer.text)")
            let next = try connection.request("GET", "/info", headers: ["CSeq": "2"], protocolName: rtspConnection ? "RTSP/1.0" : "HTTP/1.1")
            #expect(next.status == 200, "\(next.startLine)")
        }
        #expect(daemon.process.isRunning)
    }

    /// shairport-sync let a UDP packet larger than its decoder's buffer into the classic
    /// decoder. Here datagrams of 64 000 bytes and of one byte arrive on a realtime session's
    /// audio port between real packets: each is dropped with a reason, and the session plays
    /// on to its TEARDOWN.
    @Test func anOversizedAudioDatagramIsDroppedAndTheSessionPlaysOn() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let connection = try RawHTTPConnection(port: daemon.port)
        let audioPort = try record(connection)
        let udp = try UDPSocket()
        let silence = [UInt8](repeating: 0, count: 352 * 4)
        for sequence in UInt16(1)...40 {
            if sequence == 10 { try udp.send([0x80, 0xE0, 0, 10, 0, 0, 0x0D, 0xC0, 0, 0, 0, 0] + [UInt8](repeating: 0xA5, count: 64_000), to: audioPort) }
            if sequence == 20 { try udp.send([0x80], to: audioPort) }
            let packet = RAOPAudioPacket(sequence: sequence, timestamp: UInt32(sequence) * 352, marker: sequence == 1, payload: silence)
            try udp.send(packet.bytes, to: audioPort)
            Thread.sleep(forTimeInterval: 0.008)   // paced like a sender
        }
        #expect(try rtsp(connection, "TEARDOWN", 4).status == 200)
        #expect(daemon.process.waitForOutput("audio session ended", timeout: 5), "\(daemon.process.stderr.suffix(2000))")
        let ended = daemon.process.lines(containing: "audio session ended").last ?? ""
        // Both odd datagrams dropped, all 40 packets played, none lost.
        #expect(ended.contains("reason=TEARDOWN") && ended.contains("dropped=2") && ended.contains("received=40") && ended.contains("lost=0"), "\(ended)")
        let info = try RawHTTPConnection(port: daemon.port).request("GET", "/info")
        #expect(daemon.process.isRunning && info.status == 200)
    }

    /// A NULL dereference in pairing TLVs: messages with their items missing, empty or out of
    /// order. Each gets a TLV error (or a 4xx) on the same connection, and a real transient
    /// pairing works afterwards. (An M1 whose method is missing or empty is taken as method 0,
    /// a PIN pairing, and answered with its M2, as the sender then expects.)
    @Test func pairingMessagesWithItemsMissingGetAnError() throws {
        let daemon = try LocalDaemon(extra: ["--airplay2", "on"])
        let connection = try RawHTTPConnection(port: daemon.port)
        let broken: [TLV8] = [
            TLV8([]),
            TLV8([(.state, [3])]),                                   // M3 before M1, no key, no proof
            TLV8([(.state, [3]), (.publicKey, []), (.proof, [])]),   // M3 with empty items
            TLV8([(.state, [5]), (.encryptedData, [])]),             // M5 with nothing sealed
            TLV8([(.state, [])]),                                    // a state of no bytes
            TLV8([(.state, [0xFF]), (.method, [0xFF])]),
        ]
        for message in broken {
            let answer = try connection.request("POST", "/pair-setup", headers: ["X-Apple-HKP": "4", "Content-Type": "application/octet-stream"],
                                                body: message.bytes)
            let reply = try? TLV8(bytes: answer.body)
            #expect((400..<500).contains(answer.status ?? 0) || reply?.byte(.error) != nil, "\(message.bytes): \(answer.startLine)")
        }
        for message in [TLV8([(.state, [1])]), TLV8([(.state, [3])])] {
            let answer = try connection.request("POST", "/pair-verify", headers: ["X-Apple-HKP": "4", "Content-Type": "application/octet-stream"],
                                                body: message.bytes)
            let reply = try? TLV8(bytes: answer.body)
            #expect((400..<500).contains(answer.status ?? 0) || reply?.byte(.error) != nil, "\(message.bytes): \(answer.startLine) \(answer.body)")
        }
        for m1 in [TLV8([(.state, [1])]), TLV8([(.state, [1]), (.method, [])])] {
            let answer = try RawHTTPConnection(port: daemon.port).request(
                "POST", "/pair-setup", headers: ["X-Apple-HKP": "4", "Content-Type": "application/octet-stream"], body: m1.bytes)
            #expect(answer.status == 200 && (try? TLV8(bytes: answer.body))?.byte(.state) == 2, "\(m1.bytes): \(answer.startLine)")
        }
        let fresh = try RawHTTPConnection(port: daemon.port)
        let m2 = try fresh.request("POST", "/pair-setup", headers: ["X-Apple-HKP": "4", "Content-Type": "application/octet-stream"],
                                   body: PairingClient.setupStart(transient: true).bytes)
        let state = (try? TLV8(bytes: m2.body))?.byte(.state)
        #expect(m2.status == 200 && state == 2, "\(m2.startLine)")
        #expect(daemon.process.isRunning)
    }

    /// A double free on TEARDOWN: TEARDOWN twice, TEARDOWN after the connection's session was
    /// taken over, and TEARDOWN with nothing set up. Each gets an answer; the next sender plays.
    @Test func teardownTwiceOrWithoutASessionIsAnswered() throws {
        let daemon = try LocalDaemon(extra: ["--audio-output", "raw:/dev/null"])
        let first = try RawHTTPConnection(port: daemon.port)
        _ = try record(first)
        #expect(try rtsp(first, "TEARDOWN", 4).status == 200)
        let again = try rtsp(first, "TEARDOWN", 5)
        #expect((200..<500).contains(again.status ?? 0), "\(again.startLine)")
        let bare = try RawHTTPConnection(port: daemon.port)
        let none = try rtsp(bare, "TEARDOWN", 1)
        #expect((200..<500).contains(none.status ?? 0), "\(none.startLine)")
        let second = try RawHTTPConnection(port: daemon.port)
        _ = try record(second)
        let third = try RawHTTPConnection(port: daemon.port)
        _ = try record(third)   // takes the session over from `second`
        let stale = try? rtsp(second, "TEARDOWN", 4)
        #expect(stale.map { (200..<500).contains($0.status ?? 0) } ?? true, "a connection taken over may be closed instead")
        #expect(try rtsp(third, "TEARDOWN", 4).status == 200)
        let info = try RawHTTPConnection(port: daemon.port).request("GET", "/info")
        #expect(daemon.process.isRunning && info.status == 200)
    }
}
