@testable import AirPlayReceiver
import AirPlayCrypto
import AirPlayMedia
import AirPlayPlist
import AirPlayWire
import NIOCore
import Testing

/// An AirPlay 2 realtime session through the receiver's session machine, with no socket: SETUP
/// phase 1 (the session and its event port), phase 2 (the stream and its ports), TEARDOWN of
/// the stream or of the session, and the same takeover as RAOP. `Protocol/airplay2.md` §3–§6.
@Suite struct AirPlay2SessionTests {
    typealias Machine = AudioSessionStateMachine
    /// The RAOP suite's stand-ins: two connections, a machine, the reply among actions.
    typealias RAOP = AudioSessionStateMachineTests

    let first = RAOP.Connection(), second = RAOP.Connection()
    var a: ObjectIdentifier { ObjectIdentifier(first) }
    var b: ObjectIdentifier { ObjectIdentifier(second) }

    static let pcm = RAOPStreamDescription(codec: .pcm, sampleRate: 44100, channels: 2, framesPerPacket: 352)
    static let phase1 = AirPlay2Setup.Session(timingProtocol: "NTP", timingPort: 6002, sessionUUID: "S", deviceID: nil, name: "pyatv",
                                              model: "iPhone14,3")

    static func machine(takeover: AudioTakeover = .replace) -> Machine { RAOP.machine(takeover: takeover) }

    static func reply(_ actions: [Machine.Action]) -> AirPlayResponse? { RAOP.reply(actions) }

    static func plist(_ response: AirPlayResponse?) throws -> PropertyList {
        let response = try #require(response)
        #expect(response.headers["Content-Type"] == "application/x-apple-binary-plist")
        return try PropertyList(decoding: Array(response.body.readableBytesView))
    }

    /// Phase 1 and phase 2 on connection `a`; returns the session number.
    func setUp(_ machine: inout Machine, on connection: ObjectIdentifier) throws -> Int {
        let opened = machine.setupSession(Self.phase1, on: connection, now: 0)
        guard case .openEventPort(let number)? = opened.last else {
            Issue.record("phase 1 asks for the event port: \(opened)")
            return -1
        }
        _ = machine.eventPortOpened(session: number, port: 7010)
        _ = machine.setupStreams(Self.pcm, senderControlPort: 6001, on: connection, now: 0)
        _ = machine.portsOpened(session: number, audio: 7000, control: 7001, timing: 7002)
        return number
    }

    /// iOS 27 sends no RTSP `/feedback` while a video it handed over plays: the session set up in
    /// phase 1 stays alive as long as the same host asks something elsewhere (its video's
    /// `/playback-info` once a second); another host's requests do not count, and without the
    /// sender's own it ends after `sessionTimeout` as before.
    @Test func aSenderPlayingVideoKeepsItsSessionWithoutFeedback() throws {
        var machine = Self.machine()
        let phone: [UInt8] = [10, 79, 0, 1]
        guard case .openEventPort(let number)? = machine.setupSession(Self.phase1, on: a, senderHost: phone, now: 0).last else {
            Issue.record("no session"); return
        }
        _ = machine.eventPortOpened(session: number, port: 7010)
        for second in 1...60 {
            machine.senderActive(host: phone, now: Double(second))
            machine.senderActive(host: [10, 79, 0, 9], now: Double(second) + 0.5)
            #expect(machine.tick(now: Double(second) + 0.5).isEmpty, "second \(second)")
        }
        let ended = machine.tick(now: 91)
        #expect(ended.contains(.closeConnection(a)), "30 s after the phone's last request")
    }

    /// Phase 1 answers with the event port once it listens; the sender's NTP port is kept for
    /// phase 2, where the timing requests start.
    @Test func phaseOneAnswersWithTheEventPort() throws {
        var machine = Self.machine()
        #expect(machine.setupSession(Self.phase1, on: a, now: 0) == [.openEventPort(session: 101)])
        #expect(machine.current?.kind == .airPlay2 && machine.current?.phase == .openingEventPort)
        let reply = try Self.plist(Self.reply(machine.eventPortOpened(session: 101, port: 7010)))
        #expect(reply["eventPort"]?.integerValue == 7010)
        #expect(machine.current?.phase == .sessionSetUp && machine.current?.senderTimingPort == 6002)
    }

    /// `POST /command` with `updateMRSupportedCommands` from the session's sender tells the box
    /// which buttons to offer; from another connection it is answered and changes nothing.
    @Test func theSendersSupportedCommandsReachNowPlaying() throws {
        var machine = Self.machine()
        _ = try setUp(&machine, on: a)
        let list = MediaRemoteSupportedCommands(enabled: [0, 1, 5])
        var body = ByteBuffer()
        body.writeBytes(list.plist.encoded(as: .binary))
        let request = AirPlayRequest(method: "POST", target: "/command", version: .rtsp10,
                                     headers: ["Content-Type": "application/x-apple-binary-plist"], body: body)
        let actions = machine.receive(request, on: a, now: 1)
        #expect(actions.contains(.nowPlaying(.senderCommands([0, 1, 5]))) && Self.reply(actions)?.status == 200)
        let elsewhere = machine.receive(request, on: b, now: 1)
        #expect(!elsewhere.contains { if case .nowPlaying = $0 { true } else { false } } && Self.reply(elsewhere)?.status == 200)
    }

    /// Apple's senders, OwnTone and libraop send RECORD (and SETPEERS) before the stream's
    /// SETUP; pyatv and `airplay` after it. Either way the stream begins playing: the stream
    /// SETUP after a RECORD says so right after the session's `began`, and the phase is `recording`.
    @Test func recordBeforeTheStreamSetupLeavesItPlaying() throws {
        var machine = Self.machine()
        guard case .openEventPort(let number)? = machine.setupSession(Self.phase1, on: a, now: 0).last else {
            throw BufferedSessionTests.TestFailure("no event port asked for")
        }
        _ = machine.eventPortOpened(session: number, port: 7010)
        let record = AirPlayRequest(method: "RECORD", target: "rtsp://127.0.0.1/1", version: .rtsp10, headers: [:], body: ByteBuffer())
        #expect(machine.receive(record, on: a, now: 0).contains(.nowPlaying(.streamStarted)))
        let streams = machine.setupStreams(Self.pcm, senderControlPort: 6001, on: a, now: 0)
        #expect(Array(streams.prefix(2)) == [.beginSession(number: number, connection: a), .nowPlaying(.streamStarted)])
        _ = machine.portsOpened(session: number, audio: 7000, control: 7001, timing: 7002)
        #expect(machine.current?.phase == .recording)

        // pyatv's order: no RECORD yet, so the stream SETUP starts nothing; RECORD does.
        var other = Self.machine()
        let later = try setUp(&other, on: a)
        #expect(other.current?.phase == .ready && other.current?.number == later)
        #expect(other.receive(record, on: a, now: 0).contains(.nowPlaying(.streamStarted)))
        #expect(other.current?.phase == .recording)
    }

    /// Phase 2 makes the session's resources, then its ports; the reply names the data and
    /// control ports of the realtime stream (type 96), as pyatv and owntone read them.
    @Test func phaseTwoAnswersWithTheStreamPorts() throws {
        var machine = Self.machine()
        _ = machine.setupSession(Self.phase1, on: a, now: 0)
        _ = machine.eventPortOpened(session: 101, port: 7010)
        let actions = machine.setupStreams(Self.pcm, senderControlPort: 6001, on: a, now: 0)
        #expect(actions == [.beginSession(number: 101, connection: a),
                            .openPorts(session: 101, senderControlPort: 6001, senderTimingPort: 6002)])
        let reply = try Self.plist(Self.reply(machine.portsOpened(session: 101, audio: 7000, control: 7001, timing: 7002)))
        guard case .array(let streams)? = reply["streams"], let stream = streams.first else {
            Issue.record("streams: \(reply)"); return
        }
        #expect(stream["type"]?.integerValue == 96 && stream["dataPort"]?.integerValue == 7000 && stream["controlPort"]?.integerValue == 7001)
        #expect(machine.current?.phase == .ready && machine.current?.stream == Self.pcm)
        let again = Self.reply(machine.setupStreams(Self.pcm, senderControlPort: 6001, on: a, now: 0))
        #expect(again?.status == 455, "one stream at a time")
    }

    /// Streams without phase 1, or on another connection than the session's, are refused.
    @Test func streamsNeedTheirSession() {
        var machine = Self.machine()
        #expect(Self.reply(machine.setupStreams(Self.pcm, senderControlPort: nil, on: a, now: 0))?.status == 455)
        _ = machine.setupSession(Self.phase1, on: a, now: 0)
        _ = machine.eventPortOpened(session: 101, port: 7010)
        #expect(Self.reply(machine.setupStreams(Self.pcm, senderControlPort: nil, on: b, now: 0))?.status == 455)
        #expect(machine.current?.connection == a)
    }

    /// TEARDOWN naming `streams` ends the audio and keeps the session for a new stream; a bare
    /// TEARDOWN (pyatv's) ends the session, event channel included.
    @Test func teardownOfTheStreamThenOfTheSession() throws {
        var machine = Self.machine()
        let number = try setUp(&machine, on: a)
        var body = ByteBuffer()
        body.writeBytes(PropertyList.dictionary(["streams": .array([.dictionary(["type": .integer(96)])])]).encoded(as: .binary))
        let streams = machine.receive(AirPlayRequest(method: "TEARDOWN", target: "rtsp://h/1", version: .rtsp10,
                                                     headers: ["Content-Type": "application/x-apple-binary-plist"], body: body), on: a, now: 1)
        #expect(streams.contains { if case .endStreams(let session, _) = $0 { session.number == number } else { false } })
        #expect(machine.current?.phase == .sessionSetUp && machine.current?.stream == nil)
        // A new stream on the same session.
        #expect(machine.setupStreams(Self.pcm, senderControlPort: 6001, on: a, now: 2).contains(.beginSession(number: number, connection: a)))
        let whole = machine.receive(AirPlayRequest(method: "TEARDOWN", target: "rtsp://h/1", version: .rtsp10, headers: ["Session": "0"]),
                                    on: a, now: 3)
        #expect(whole.contains { if case .endSession(let session, _) = $0 { session.number == number } else { false } })
        #expect(machine.current == nil)
    }

    /// An AirPlay 2 sender takes over from a RAOP one (and the other way round), by the same rule.
    @Test func takeoverCrossesProtocols() throws {
        var machine = Self.machine()
        _ = machine.announce(Self.pcm, on: b, now: 0)
        let actions = machine.setupSession(Self.phase1, on: a, now: 1)
        #expect(actions.contains { if case .endSession(let session, _) = $0 { session.kind == .raop } else { false } })
        #expect(actions.contains(.closeConnection(b)))
        var refusing = Self.machine(takeover: .refuse)
        _ = refusing.announce(Self.pcm, on: b, now: 0)
        #expect(Self.reply(refusing.setupSession(Self.phase1, on: a, now: 1))?.status == 453)
    }

    /// RECORD, FLUSH, volume and progress work on an AirPlay 2 session as on RAOP's.
    @Test func theRestIsRAOPs() throws {
        var machine = Self.machine()
        let number = try setUp(&machine, on: a)
        #expect(Self.reply(machine.receive(RAOP.request("RECORD"), on: a, now: 1))?.status == 200)
        #expect(machine.current?.phase == .recording)
        let volume = machine.receive(RAOP.request("SET_PARAMETER", headers: ["Content-Type": "text/parameters"],
                                                                        body: "volume: -20.1\r\n"), on: a, now: 1)
        #expect(volume.contains(.setVolume(session: number, decibels: -20.1)))
        let flush = machine.receive(RAOP.request("FLUSH", headers: ["RTP-Info": "seq=5;rtptime=66150"]), on: a, now: 1)
        #expect(flush.contains(.flush(session: number, before: 66150, resumeSequence: 5)))
    }

    /// The plist's stream as the decoders know it: the format bit decides (codec, rate and
    /// depth), `ct`, `sr` and `ss` only without one.
    @Test func theFormatBitDecidesTheCodec() throws {
        func stream(ct: Int, format: UInt64) -> AirPlay2Setup.Stream {
            AirPlay2Setup.Stream(type: 96, compression: ct, audioFormat: format, samplesPerFrame: 352, sampleRate: 44100,
                                 streamKey: [UInt8](repeating: 1, count: 32), controlPort: nil, latencyMin: nil, latencyMax: nil)
        }
        #expect(try stream(ct: 1, format: 0x800).description().codec == .pcm)
        #expect(try stream(ct: 2, format: 0x40000).description().codec == .alac(fmtp: [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]))
        #expect(try stream(ct: 4, format: 0x400000).description().codec == .aacLC)
        #expect(try stream(ct: 2, format: 0).description().codec == .alac(fmtp: [352, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100]))
        let pcm48 = try stream(ct: 1, format: 0x8000).description()   // PCM 48 kHz 16-bit
        #expect(pcm48.codec == .pcm && pcm48.sampleRate == 48000 && pcm48.bitsPerSample == 16)
        let alac24 = try stream(ct: 2, format: 0x200000).description()   // ALAC 48 kHz 24-bit
        #expect(alac24.codec == .alac(fmtp: [352, 0, 24, 40, 10, 14, 2, 255, 0, 0, 48000]))
        #expect(alac24.pcmFormat == PCMFormat(sampleRate: 48000, channels: 2, bitsPerSample: 24))
        let aac48 = try stream(ct: 4, format: 0x800000).description()
        #expect(aac48.sampleRate == 48000 && aac48.aacConfig == [0x11, 0x90])
        var unflagged = stream(ct: 2, format: 0)
        (unflagged.sampleRate, unflagged.bitsPerSample) = (48000, 24)
        #expect(try unflagged.description().codec == .alac(fmtp: [352, 0, 24, 40, 10, 14, 2, 255, 0, 0, 48000]))
        #expect(throws: AirPlay2Setup.Refusal.self) { try stream(ct: 1, format: 0x1000).description() }   // PCM mono
        #expect(throws: AirPlay2Setup.Refusal.self) { try stream(ct: 8, format: 1 << 24).description() }  // AAC-ELD
    }

    /// SETPEERS, `/audioMode` and `/command` change nothing on an NTP session and get 200; a
    /// body that is not a plist gets a 400 saying what was expected.
    @Test func requestsThatChangeNothingAreAnswered() {
        var machine = Self.machine()
        let plist = ByteBuffer(bytes: PropertyList.array([.string("127.0.0.1")]).encoded(as: .binary))
        for (method, path) in [("SETPEERS", "rtsp://h/1"), ("POST", "/command"), ("POST", "/audioMode")] {
            let ok = machine.receive(AirPlayRequest(method: method, target: path, version: .rtsp10, headers: [:], body: plist), on: a, now: 0)
            #expect(Self.reply(ok)?.status == 200, "\(method) \(path)")
            let bad = machine.receive(AirPlayRequest(method: method, target: path, version: .rtsp10, headers: [:],
                                                     body: ByteBuffer(string: "peers please")), on: a, now: 0)
            #expect(Self.reply(bad)?.status == 400 && String(buffer: Self.reply(bad)!.body).contains("property list"))
        }
    }

    /// `/feedback`, the keep-alive, names the stream set up (as shairport-sync 5 does), and is a
    /// plain 200 before there is one.
    @Test func feedbackNamesTheStream() throws {
        var machine = Self.machine()
        let feedback = AirPlayRequest(method: "POST", target: "/feedback", version: .rtsp10, headers: [:], body: ByteBuffer())
        _ = machine.setupSession(Self.phase1, on: a, now: 0)
        _ = machine.eventPortOpened(session: 101, port: 7010)
        #expect(Self.reply(machine.receive(feedback, on: a, now: 0))?.body.readableBytes == 0)
        _ = machine.setupStreams(Self.pcm, senderControlPort: 6001, on: a, now: 0)
        _ = machine.portsOpened(session: 101, audio: 7000, control: 7001, timing: 7002)
        let reply = try Self.plist(Self.reply(machine.receive(feedback, on: a, now: 0)))
        #expect(reply["streams"] == .array([.dictionary(["type": .integer(96), "sr": .real(44100)])]))
    }

    /// iOS 17 on sends SETMAGICCOOKIE (a plist about its audio) with or without a stream: 200,
    /// and the session is as it was.
    @Test func setMagicCookieIsAcknowledged() throws {
        var machine = Self.machine()
        let number = try setUp(&machine, on: a)
        let cookie = ByteBuffer(bytes: PropertyList.dictionary(["audioFormat": .integer(0x40000)]).encoded(as: .binary))
        let actions = machine.receive(AirPlayRequest(method: "SETMAGICCOOKIE", target: "rtsp://h/1", version: .rtsp10, headers: [:],
                                                     body: cookie), on: a, now: 0)
        #expect(actions == [.reply(AirPlayResponse(status: 200))])
        #expect(machine.current?.number == number)
    }

    /// A packet sealed under another key, or altered, does not open: it is dropped and counted,
    /// never played as noise.
    @Test func aPacketUnderTheWrongKeyDoesNotOpen() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let sealer = try AirPlay2AudioCipher(streamKey: key)
        let header: [UInt8] = [0x80, 0x60, 0, 1, 0, 0, 0x01, 0x60, 0x12, 0x34, 0x56, 0x78]
        let packet = try sealer.seal(header: header, audio: [1, 2, 3, 4], counter: 9)
        let right = AudioPacketCipher.chacha(try AirPlay2AudioCipher(streamKey: key))
        let wrong = AudioPacketCipher.chacha(try AirPlay2AudioCipher(streamKey: [UInt8](repeating: 8, count: 32)))
        let body = Array(packet[12...])
        #expect(body.withUnsafeBytes { right.open($0, timestamp: 0x160, ssrc: 0x1234_5678) } == [1, 2, 3, 4])
        #expect(body.withUnsafeBytes { wrong.open($0, timestamp: 0x160, ssrc: 0x1234_5678) } == nil)
        #expect(body.withUnsafeBytes { right.open($0, timestamp: 0x161, ssrc: 0x1234_5678) } == nil, "the timestamp is authenticated")
    }

    /// With AirPlay 2 on, `/info` carries the `_airplay._tcp` record itself (`txtAirPlay`), and
    /// the record names the group (`gid`); `/info` names the output (`psi`).
    @Test func infoCarriesTheAirPlayRecord() throws {
        var capabilities = ReceiverCapabilities(video: true, hls: true, audio: true)
        capabilities.pairingIdentity = ("5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5", String(repeating: "ab", count: 32))
        capabilities.airPlay2Pairing = true
        let id = DeviceID("02:FC:00:00:00:01")!
        let info = ServerInfo(deviceID: id, name: "Box", capabilities: capabilities).propertyList
        guard case .data(let txt)? = info["txtAirPlay"] else { Issue.record("no txtAirPlay"); return }
        var strings: [String] = []
        var index = 0
        while index < txt.count {
            let length = Int(txt[index])
            strings.append(String(decoding: txt[(index + 1)..<(index + 1 + length)], as: UTF8.self))
            index += 1 + length
        }
        #expect(strings == ReceiverAdvertisement(deviceID: id, port: 7000, capabilities: capabilities).airPlayTXT.strings)
        #expect(strings.contains("gid=5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5") && info["psi"]?.stringValue == "5F3A1C2B-8E4D-4A6F-B7C9-D0E1F2A3B4C5")
        #expect(info["pk"] == .data([UInt8](repeating: 0xAB, count: 32)))
        #expect(info["initialVolume"] == .real(0))
        #expect(FeatureSet(txtValue: strings.first { $0.hasPrefix("features=") }!.dropFirst(9).description)!.contains(.unifiedMediaControl))
    }
}
