@testable import AirPlayReceiver
import AirPlayPlist
import AirPlayWire
import NIOCore
import Testing

/// How the box reads an audio request before its session machine sees it (`AudioRequest`):
/// ANNOUNCE's SDP and AirPlay 2's four kinds of SETUP plist are decoded once, the same way for
/// the daemon, the in-memory receiver and the fuzzer, and what no box plays is refused with the
/// status a sender can act on.
@Suite struct AudioRequestTests {
    static let alacSDP = "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 AppleLossless\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n"

    static func announce(_ sdp: String, contentType: String? = "application/sdp") -> AirPlayRequest {
        var headers: MessageHeaders = [:]
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        return AudioSessionStateMachineTests.request("ANNOUNCE", headers: headers, body: sdp)
    }

    static func setup(_ setup: AirPlay2Setup) -> AirPlayRequest {
        AirPlayRequest(method: "SETUP", target: "rtsp://127.0.0.1/1", version: .rtsp10,
                       headers: ["Content-Type": "application/x-apple-binary-plist"],
                       body: ByteBuffer(bytes: setup.plist.encoded(as: .binary)))
    }

    static func stream(type: Int = AirPlay2Setup.realtime) -> AirPlay2Setup.Stream {
        AirPlay2Setup.Stream(type: type, compression: 2, audioFormat: 0, samplesPerFrame: 352, sampleRate: 44100,
                             streamKey: Array(repeating: 7, count: 32), controlPort: 6001)
    }

    static func refusal(_ request: AirPlayRequest, ptp: Bool = true) -> AudioRequest.Refusal? {
        do {
            _ = try AudioRequest(decoding: request, ptp: ptp)
            return nil
        } catch {
            return error
        }
    }

    @Test func anAnnounceIsItsStream() throws {
        let decoded = try AudioRequest(decoding: Self.announce(Self.alacSDP), ptp: false)
        #expect(decoded == .announce(AudioSessionStateMachineTests.alac))
    }

    /// RAOP senders send SDP; a stream of another rate or channel count is never played here.
    @Test func anAnnounceThatCannotBePlayedIsRefusedWithItsReason() {
        #expect(Self.refusal(Self.announce(Self.alacSDP, contentType: nil))?.status == 415)
        #expect(Self.refusal(Self.announce("not sdp at all"))?.status == 400)
        let aacWithoutConfig = "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 mpeg4-generic/44100/2\r\n"
        #expect(Self.refusal(Self.announce(aacWithoutConfig))?.reason.contains("config=") == true)
        let at96k = Self.alacSDP.replacingOccurrences(of: "0 0 44100", with: "0 0 96000")
        #expect(Self.refusal(Self.announce(at96k)) == AudioRequest.Refusal(status: 415, reason: "only 44100 or 48000 Hz stereo is played"))
    }

    /// RAOP's SETUP carries a Transport header and no body: the machine reads it as sent.
    @Test func aRAOPSetupAndEverythingElseGoToTheMachineAsSent() throws {
        let raop = AudioSessionStateMachineTests.request("SETUP", headers: ["Transport": "RTP/AVP/UDP;unicast;control_port=6001"])
        #expect(try AudioRequest(decoding: raop, ptp: false) == .other(raop))
        let record = AudioSessionStateMachineTests.request("RECORD", headers: ["RTP-Info": "seq=1;rtptime=0"])
        #expect(try AudioRequest(decoding: record, ptp: false) == .other(record))
    }

    /// AirPlay 2's SETUP plists: a session (phase 1), its stream (phase 2), a remote-control
    /// session and a data stream, each a case of its own.
    @Test func theFourKindsOfAirPlay2Setup() throws {
        let session = AirPlay2Setup.Session(timingProtocol: "PTP", sessionUUID: "S", name: "iPhone")
        #expect(try AudioRequest(decoding: Self.setup(.session(session)), ptp: true) == .setupSession(session))
        let stream = Self.stream()
        #expect(try AudioRequest(decoding: Self.setup(.streams([stream])), ptp: true) == .setupStream(stream, try stream.description()))
        let remote = AirPlay2Setup.Session(timingProtocol: "None", name: "iPhone")
        guard case .setupRemoteControl = try AudioRequest(decoding: Self.setup(.remoteControl(remote)), ptp: true) else {
            Issue.record("isRemoteControlOnly is a remote-control session"); return
        }
        let data = DataStreamSetup(seed: 42, channelID: "C", clientUUID: "U")
        #expect(try AudioRequest(decoding: Self.setup(.dataStream(data)), ptp: true) == .setupDataStream(data))
    }

    /// The box has one output: one audio stream per session (461), PTP sessions only on a box
    /// that follows PTP, and a body that is no property list is 400.
    @Test func setupsNoBoxPlaysAreRefused() {
        #expect(Self.refusal(Self.setup(.streams([Self.stream(), Self.stream()])))?.status == 461)
        #expect(Self.refusal(Self.setup(.session(.init(timingProtocol: "PTP"))), ptp: false) != nil)
        var garbage = Self.setup(.session(.init(timingProtocol: "NTP")))
        garbage.body = ByteBuffer(string: "bplist00 but not really")
        #expect(Self.refusal(garbage)?.status == 400)
    }

    /// The machine takes the decoded request: ANNOUNCE begins a session, phase 1 asks for the
    /// event port, and what belongs to the connection (remote control, data streams) is not its.
    @Test func theMachineTakesTheDecodedRequest() throws {
        let connection = AudioSessionStateMachineTests.Connection()
        var machine = AudioSessionStateMachineTests.machine()
        let announced = machine.receive(try AudioRequest(decoding: Self.announce(Self.alacSDP), ptp: false),
                                        on: ObjectIdentifier(connection), now: 0)
        #expect(announced.contains { if case .beginSession = $0 { true } else { false } })
        var other = AudioSessionStateMachineTests.machine()
        let phase1 = other.receive(.setupSession(.init(timingProtocol: "PTP")), on: ObjectIdentifier(connection), now: 0)
        #expect(phase1.contains { if case .openEventPort = $0 { true } else { false } })
        let remote = other.receive(.setupRemoteControl(.init(timingProtocol: "None")), on: ObjectIdentifier(connection), now: 0)
        #expect(AudioSessionStateMachineTests.reply(remote)?.status == 501)
    }
}
