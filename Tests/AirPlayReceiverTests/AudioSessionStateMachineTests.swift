@testable import AirPlayReceiver
import AirPlayWire
import NIOCore
import Testing

/// The RAOP session protocol of `Protocol/raop.md`, driven through the receiver's state machine
/// with no socket and a clock in the test's hand: what each RTSP method does, every refusal,
/// takeover, time-outs, resend requests and pausing.
@Suite struct AudioSessionStateMachineTests {
    typealias Machine = AudioSessionStateMachine

    /// Stand-ins for two control connections.
    final class Connection {}
    let first = Connection(), second = Connection()
    var a: ObjectIdentifier { ObjectIdentifier(first) }
    var b: ObjectIdentifier { ObjectIdentifier(second) }

    static let alac = try! RAOPStreamDescription(sdp: "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 AppleLossless\r\n"
        + "a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n")

    static func machine(takeover: AudioTakeover = .replace, timeout: Double = 30) -> Machine {
        Machine(configuration: .init(takeover: takeover, sessionTimeout: timeout), firstNumber: 100)
    }

    static func request(_ method: String, headers: MessageHeaders = [:], body: String = "") -> AirPlayRequest {
        AirPlayRequest(method: method, target: "rtsp://127.0.0.1/1", version: .rtsp10, headers: headers, body: ByteBuffer(string: body))
    }

    /// The reply among the actions (exactly one per request).
    static func reply(_ actions: [Machine.Action]) -> AirPlayResponse? {
        let replies = actions.compactMap { action -> AirPlayResponse? in
            if case .reply(let response) = action { return response }
            return nil
        }
        #expect(replies.count <= 1)
        return replies.first
    }

    /// ANNOUNCE, SETUP (ports 6000-6002) and RECORD on connection `a`; returns the session number.
    @discardableResult
    func startSession(_ machine: inout Machine, on connection: ObjectIdentifier, now: Double = 0) -> Int {
        let announced = machine.announce(Self.alac, on: connection, now: now)
        guard case .beginSession(let number, _) = announced.first(where: { if case .beginSession = $0 { true } else { false } }) else {
            Issue.record("ANNOUNCE begins a session: \(announced)")
            return -1
        }
        let setup = machine.receive(Self.request("SETUP", headers: ["Transport": "RTP/AVP/UDP;unicast;control_port=6001;timing_port=6002"]),
                                    on: connection, now: now)
        #expect(setup == [.openPorts(session: number, senderControlPort: 6001, senderTimingPort: 6002)])
        _ = machine.portsOpened(session: number, audio: 7000, control: 7001, timing: 7002)
        _ = machine.receive(Self.request("RECORD"), on: connection, now: now)
        return number
    }

    @Test func optionsListsTheMethodsWithoutASession() {
        var machine = Self.machine()
        let response = Self.reply(machine.receive(Self.request("OPTIONS"), on: a, now: 0))
        #expect(response?.status == 200)
        #expect(response?.headers["Public"]?.contains("ANNOUNCE") == true)
        #expect(response?.headers["Public"]?.contains("SET_PARAMETER") == true)
    }

    /// SETUP answers with our three ports, the session number and the jack status senders check.
    @Test func setupRepliesWithThePortsAndTheSession() throws {
        var machine = Self.machine()
        let announce = machine.announce(Self.alac, on: a, now: 0)
        #expect(announce == [.beginSession(number: 101, connection: a), .reply(AirPlayResponse(status: 200))])
        _ = machine.receive(Self.request("SETUP", headers: ["Transport": "RTP/AVP/UDP;unicast;control_port=6001;timing_port=6002"]),
                            on: a, now: 0)
        let reply = try #require(Self.reply(machine.portsOpened(session: 101, audio: 7000, control: 7001, timing: 7002)))
        #expect(reply.status == 200)
        #expect(reply.headers["Transport"] == "RTP/AVP/UDP;unicast;mode=record;server_port=7000;control_port=7001;timing_port=7002")
        #expect(reply.headers["Session"] == "101")
        #expect(reply.headers["Audio-Jack-Status"] == "connected; type=analog")
        #expect(machine.current?.phase == .ready)
        let again = Self.reply(machine.receive(Self.request("SETUP"), on: a, now: 0))
        #expect(again?.status == 455, "SETUP happens once per session")
    }

    /// RTP interleaved in the RTSP connection (PulseAudio's protocol=TCP) is refused with 461,
    /// and the sender may SETUP again over UDP. PulseAudio's UDP SETUP carries `interleaved=0-1`
    /// as well: that one is played.
    @Test func setupOverTCPIsRefused() {
        var machine = Self.machine()
        _ = machine.announce(Self.alac, on: a, now: 0)
        let tcp = machine.receive(Self.request("SETUP", headers: ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record"]),
                                  on: a, now: 0)
        #expect(Self.reply(tcp)?.status == 461)
        let udp = machine.receive(Self.request("SETUP", headers: [
            "Transport": "RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=6001",
        ]), on: a, now: 0)
        #expect(udp == [.openPorts(session: 101, senderControlPort: 6001, senderTimingPort: nil)])
    }

    /// RECORD starts playing and tells the sender our latency (0.5 s at 44.1 kHz).
    @Test func recordAnnouncesTheLatencyAndPlays() {
        var machine = Self.machine()
        startSession(&machine, on: a)
        let actions = machine.receive(Self.request("RECORD"), on: a, now: 1)
        #expect(actions.contains(.nowPlaying(.streamStarted)))
        #expect(Self.reply(actions)?.headers["Audio-Latency"] == "22050")
        #expect(machine.current?.phase == .recording)
    }

    /// Requests that need a session get 454 from a connection without one, and change nothing.
    @Test(arguments: ["SETUP", "RECORD", "PAUSE", "FLUSH", "SET_PARAMETER", "GET_PARAMETER"])
    func methodsWithoutASessionGet454(method: String) {
        var machine = Self.machine()
        startSession(&machine, on: a)
        let before = machine.current
        let response = Self.reply(machine.receive(Self.request(method), on: b, now: 1))
        #expect(response?.status == 454)
        #expect(machine.current == before)
    }

    @Test func unknownMethodsGet405() {
        var machine = Self.machine()
        #expect(Self.reply(machine.receive(Self.request("DESCRIBE"), on: a, now: 0))?.status == 405)
    }

    /// A second sender's ANNOUNCE ends the first session and closes its connection (Apple TV's
    /// behaviour); with `refuse`, the second sender gets 453 and the first plays on.
    @Test func takeoverReplacesOrRefuses() {
        var replacing = Self.machine()
        let old = startSession(&replacing, on: a)
        let actions = replacing.announce(Self.alac, on: b, now: 5)
        guard case .endSession(let ended, _) = actions.first else {
            Issue.record("the old session ends first: \(actions)")
            return
        }
        #expect(ended.number == old)
        #expect(actions.contains(.closeConnection(a)))
        #expect(replacing.current?.connection == b)

        var refusing = Self.machine(takeover: .refuse)
        startSession(&refusing, on: a)
        let refused = refusing.announce(Self.alac, on: b, now: 5)
        #expect(refused.count == 1 && Self.reply(refused)?.status == 453)
        #expect(refusing.current?.connection == a)
        // The same sender announcing again simply restarts its own session.
        let restart = refusing.announce(Self.alac, on: a, now: 6)
        #expect(Self.reply(restart)?.status == 200)
        #expect(!restart.contains(.closeConnection(a)), "its own connection stays open")
    }

    /// FLUSH pauses: the playout drops frames before RTP-Info's rtptime, and the stream's
    /// packets start a new run from RTP-Info's seq (`AudioPacketPipelineTests`); when its
    /// first packet after the flush comes, the session plays again (a packet that resumed
    /// from an earlier FLUSH, racing this one, does not count).
    @Test func flushPausesUntilTheStreamResumes() {
        var machine = Self.machine()
        let number = startSession(&machine, on: a)
        let flush = machine.receive(Self.request("FLUSH", headers: ["RTP-Info": "seq=11;rtptime=123456"]), on: a, now: 2)
        #expect(flush.contains(.flush(session: number, before: 123456, resumeSequence: 11)))
        #expect(flush.contains(.nowPlaying(.flushed)))
        #expect(machine.current?.paused == true && machine.current?.flushes == 1)
        #expect(machine.streamResumed(session: number + 1, flushes: 1) == [], "not this session")
        #expect(machine.streamResumed(session: number, flushes: 0) == [], "a packet that resumed from before this FLUSH")
        #expect(machine.streamResumed(session: number, flushes: 1) == [.nowPlaying(.resumed)])
        #expect(machine.current?.paused == false)
        #expect(machine.streamResumed(session: number, flushes: 1) == [], "once")
    }

    /// SET_PARAMETER: volume (-30…0 dB, -144 mute), progress, DMAP text, artwork; bad values are
    /// refused, unknown parameters get 451, metadata that does not parse never stops the audio.
    @Test func setParameterCarriesVolumeProgressAndMetadata() {
        var machine = Self.machine()
        let number = startSession(&machine, on: a)
        let volume = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "text/parameters"],
                                                  body: "volume: -15.000000\r\n"), on: a, now: 1)
        #expect(volume.contains(.setVolume(session: number, decibels: -15)))
        #expect(Self.reply(volume)?.status == 200)
        let get = Self.reply(machine.receive(Self.request("GET_PARAMETER", body: "volume\r\n"), on: a, now: 1))
        #expect(get.map { String(buffer: $0.body) } == "volume: -15.000000\r\n")
        for bad in ["volume: 3", "volume: -50", "volume: nan"] {
            let refused = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "text/parameters"], body: bad),
                                          on: a, now: 1)
            #expect(Self.reply(refused)?.status == 400, "\(bad)")
        }
        let progress = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "text/parameters"],
                                                    body: "progress: 1000/45100/265600\r\n"), on: a, now: 1)
        #expect(progress.contains(.nowPlaying(.progress(start: 1000, current: 45100, end: 265600, sampleRate: 44100))))
        let unknown = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "text/parameters"], body: "bass: 3"),
                                      on: a, now: 1)
        #expect(Self.reply(unknown)?.status == 451)
        let broken = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "application/x-dmap-tagged"],
                                                  body: "mlit\u{0}\u{0}\u{0}\u{50}minm"), on: a, now: 1)
        #expect(Self.reply(broken)?.status == 200, "senders abort on an error here")
        #expect(broken.contains { if case .notice = $0 { true } else { false } })
        let cover = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "image/png"], body: "PNG"), on: a, now: 1)
        #expect(cover.contains(.nowPlaying(.artwork(type: "image/png", bytes: Array("PNG".utf8), rtpTime: nil))))
        let other = machine.receive(Self.request("SET_PARAMETER", headers: ["Content-Type": "video/mp4"]), on: a, now: 1)
        #expect(Self.reply(other)?.status == 415)
    }

    /// A session ends with TEARDOWN, when its connection closes, or after `sessionTimeout`
    /// seconds without RTSP or RTP (its connection is then closed too). Whatever its stream's
    /// ports heard (audio, sync, timing: `AudioPacketPipeline.lastHeard`) counts as life.
    @Test func sessionsEndByTeardownCloseOrSilence() {
        var machine = Self.machine(timeout: 30)
        var number = startSession(&machine, on: a, now: 0)
        let teardown = machine.receive(Self.request("TEARDOWN"), on: a, now: 1)
        #expect(teardown.first.map { if case .endSession(let session, "TEARDOWN") = $0 { session.number == number } else { false } } == true)
        #expect(machine.current == nil)

        number = startSession(&machine, on: a, now: 2)
        #expect(machine.connectionClosed(b).isEmpty, "another connection closing ends nothing")
        #expect(machine.connectionClosed(a).count == 1)
        #expect(machine.current == nil)

        number = startSession(&machine, on: a, now: 10)
        #expect(machine.tick(now: 60, streamHeard: 35).isEmpty, "25 s after the last sync packet")
        let expired = machine.tick(now: 65.5, streamHeard: 35)
        #expect(expired.contains(.closeConnection(a)))
        #expect(machine.current == nil)
        #expect(machine.tick(now: 100).isEmpty)
    }

    /// A SETUP whose ports (or output) cannot be opened ends the session with a 500, so the
    /// sender may retry and nobody stays locked out.
    @Test func failedPortsEndTheSession() {
        var machine = Self.machine(takeover: .refuse)
        _ = machine.announce(Self.alac, on: a, now: 0)
        _ = machine.receive(Self.request("SETUP"), on: a, now: 0)
        let failed = machine.portsFailed(session: 101, reason: "cannot open UDP ports: EADDRINUSE")
        #expect(Self.reply(failed)?.status == 500)
        #expect(machine.current == nil)
        #expect(Self.reply(machine.announce(Self.alac, on: b, now: 1))?.status == 200, "another sender is not refused")
    }

    /// An audio output that cannot be built once the session plays (a sound card gone) ends
    /// the session and closes its connection, so the sender knows; a stale report does nothing.
    @Test func aFailedOutputEndsTheSessionAndItsConnection() {
        var machine = Self.machine()
        let number = startSession(&machine, on: a)
        #expect(machine.outputFailed(session: number + 1, reason: "stale") == [])
        let actions = machine.outputFailed(session: number, reason: "audio output unavailable: no such device")
        #expect(actions.count == 2 && actions.last == .closeConnection(a))
        if case .endSession(let session, let reason) = actions.first {
            // `airplay doctor` reads the ended session's reason by its first words.
            #expect(session.number == number && reason == "audio output failed: audio output unavailable: no such device")
        } else {
            Issue.record("the session ends first")
        }
        #expect(machine.current == nil)
    }
}
