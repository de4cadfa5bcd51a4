import AirPlayCrypto
import AirPlayPlist
import AirPlayWire
import Foundation
import NIOCore

/// A request the setup sends, before the connection adds its own headers (CSeq, `Session`,
/// who we are, Digest): `RAOPClient.frame` turns it into the wire request.
package struct SenderRequest: Hashable, Sendable {
    /// The RTSP method.
    package var method: String
    /// The target; nil means the session's RTSP URI.
    package var target: String?
    /// Headers of this request only.
    package var headers: MessageHeaders = [:]
    /// The body.
    package var body: [UInt8] = []
    /// The body's type.
    package var contentType: String?

    /// A request whose body is a binary plist.
    static func plist(_ method: String, _ body: PropertyList) -> SenderRequest {
        SenderRequest(method: method, body: body.encoded(as: .binary), contentType: PropertyListFormat.binary.contentType)
    }

    /// A request from its parts.
    package init(method: String, target: String? = nil, headers: MessageHeaders = [:], body: [UInt8] = [], contentType: String? = nil) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.contentType = contentType
    }
}

/// How a sender sets one receiver's stream up, as a pure machine: it never touches a socket or a
/// clock. It says what to do next (a request to send, a port to open, a channel to connect) and
/// reads each outcome; `ReceiverLink` carries the actions out over the network, and the in-memory
/// tier (`AirPlayInMemory`) carries them out against the receiver's own machine.
///
/// Three routes, as `Protocol/raop.md` and `Protocol/airplay2.md` tell them:
/// - **RAOP**: OPTIONS (with an `Apple-Challenge` when we can check the answer), ANNOUNCE for
///   each codec the receiver may take until one is accepted (415, 400 and 501 mean "try the
///   next"), SETUP with a `Transport` header, RECORD, the volume.
/// - **AirPlay 2 realtime** (type 96, NTP or PTP): our UDP port, SETUP phase 1, the event
///   channel, RECORD (then SETPEERS on PTP), SETUP phase 2 for one stream, the volume (Apple's
///   order; `.streamsFirst` swaps RECORD and phase 2).
/// - **AirPlay 2 buffered** (type 103, PTP): SETUP phase 1, the event channel, RECORD, SETPEERS,
///   SETUP phase 2, the TCP data connection, the volume.
package struct SenderSetupMachine: Sendable {
    /// An ANNOUNCE body for one codec: in clear, and with the stream key wrapped for the
    /// receiver (nil when we cannot encrypt).
    package struct Announcement: Hashable, Sendable {
        package var codec: ReceiverLink.Codec
        package var clear: String
        package var encrypted: String?

        /// An announcement.
        package init(codec: ReceiverLink.Codec, clear: String, encrypted: String?) {
            self.codec = codec
            self.clear = clear
            self.encrypted = encrypted
        }
    }

    /// Which exchange, with what it needs that is random or read elsewhere (keys, the challenge,
    /// the SDP), so the machine itself is deterministic.
    package enum Route: Equatable, Sendable {
        /// AirPlay 1. `challenge` is the `Apple-Challenge` (nil: a plain OPTIONS);
        /// `announcements` the codecs to offer, in order.
        case raop(traits: RAOPReceiverTraits, challenge: [UInt8]?, announcements: [Announcement])
        /// AirPlay 2 realtime: ALAC or PCM, sealed with `streamKey`, `ssrc` as the stream's id;
        /// on PTP (`session` names PTP) `peers` goes in SETPEERS after RECORD, as for buffered.
        case realtime(session: AirPlay2Setup.Session, alac: Bool, streamKey: [UInt8], ssrc: UInt32, peers: [String]? = nil)
        /// AirPlay 2 buffered: the stream as described, our and the receiver's PTP addresses for SETPEERS.
        case buffered(session: AirPlay2Setup.Session, stream: AirPlay2Setup.Stream, peers: [String])
    }

    /// The order of RECORD and AirPlay 2's stream SETUP.
    package enum Order: Hashable, Sendable {
        /// SETUP phase 2, then RECORD (pyatv's order, and ours before Apple's).
        case streamsFirst
        /// RECORD, then SETUP phase 2: Apple's senders, OwnTone and libraop. Samsung's Music
        /// Frame needs it; every receiver takes it. The default.
        case recordFirst
    }

    /// What the receiver agreed to.
    package struct Outcome: Hashable, Sendable {
        /// The codec of the stream.
        package var codec: ReceiverLink.Codec = .pcm
        /// RAOP: the stream is AES-encrypted with the key the announcement wrapped.
        package var encrypted = false
        /// RAOP: whether the `Apple-Response` verified (nil: none came).
        package var identityVerified: Bool?
        /// Where audio, sync and (RAOP) timing requests go on the receiver's host.
        package var audioPort: Int?
        package var controlPort: Int?
        package var timingPort: Int?
        /// AirPlay 2: the event channel's port.
        package var eventPort: Int?
        /// Buffered: the TCP data port.
        package var dataPort: Int?
    }

    /// What to do, in order. Actions that wait for an outcome name the method to call next.
    package enum Action: Hashable, Sendable {
        /// Send the request; then `replied(_:)`.
        case send(SenderRequest)
        /// Bind our UDP port (sync, resends, timing); then `udpPortOpened(_:)`.
        case openUDPPort
        /// Check the receiver's `Apple-Response` against our challenge; then `identityChecked(_:)`.
        case verifyAppleResponse(String, challenge: [UInt8])
        /// Connect the AirPlay 2 event channel; then `eventChannelConnected()`.
        case connectEventChannel(port: Int)
        /// Connect a buffered stream's TCP data port; then `dataConnectionOpened()`.
        case connectDataPort(Int)
        /// Send the RTSP `Session` header on every request from now on.
        case adoptSession(String)
        /// Tell the user something that does not stop the setup.
        case warn(String)
        /// The stream is set up.
        case finished(Outcome)
        /// The setup cannot go on.
        case failed(SenderError)
    }

    private enum Step: Hashable, Sendable {
        case options, verifying, announce(index: Int), openingPort, transportSetup, sessionSetup, connectingEvents
        case streamsSetup, record, setPeers, connectingData, volume, done
    }

    package let route: Route
    package let order: Order
    private let receiverName: String
    private let sequence: UInt16
    private let rtpTime: UInt32
    private let volumeDecibels: Double
    private var step = Step.options
    private var recorded = false
    private var streamsSetUp = false
    private var ourPort = 0
    /// What has been agreed so far.
    package private(set) var outcome = Outcome()
    /// True once the receiver refused the realtime stream's SETUP (phase 2) for what it is, after
    /// taking the session: it may still play AirPlay 1 (its RAOP-compatible path, as Sonos does).
    package private(set) var refusedNativeStreams = false

    /// A setup along `route`; RECORD starts from `sequence`/`rtpTime` and the volume is
    /// `volumeDecibels` (AirPlay dB).
    package init(route: Route, order: Order? = nil, receiverName: String, sequence: UInt16, rtpTime: UInt32, volumeDecibels: Double) {
        self.route = route
        if case .buffered = route { self.order = .recordFirst } else { self.order = order ?? .recordFirst }
        self.receiverName = receiverName
        self.sequence = sequence
        self.rtpTime = rtpTime
        self.volumeDecibels = volumeDecibels
    }

    // MARK: Inputs

    /// The first actions.
    package mutating func start() -> [Action] {
        switch route {
        case .raop(_, let challenge, _):
            step = .options
            var headers: MessageHeaders = [:]
            if let challenge { headers.add(name: "Apple-Challenge", value: String(Base64.encode(challenge).filter { $0 != "=" })) }
            return [.send(SenderRequest(method: "OPTIONS", headers: headers))]
        case .realtime:
            step = .openingPort
            return [.openUDPPort]
        case .buffered(let session, _, _):
            step = .sessionSetup
            return [Self.plistRequest("SETUP", AirPlay2Setup.session(session).plist)]
        }
    }

    /// Our UDP port is bound.
    package mutating func udpPortOpened(_ port: Int) -> [Action] {
        guard step == .openingPort else { return unexpected("a UDP port") }
        ourPort = port
        switch route {
        case .raop:
            step = .transportSetup
            return [.send(SenderRequest(method: "SETUP", headers: [
                "Transport": RTSPTransport.record(controlPort: port, timingPort: port).headerValue,
            ]))]
        case .realtime(var session, _, _, _, _):
            session.timingPort = port
            step = .sessionSetup
            return [Self.plistRequest("SETUP", AirPlay2Setup.session(session).plist)]
        case .buffered:
            return unexpected("a UDP port")
        }
    }

    /// The receiver's `Apple-Response` verified (or not).
    package mutating func identityChecked(_ verified: Bool) -> [Action] {
        guard step == .verifying else { return unexpected("an identity check") }
        outcome.identityVerified = verified
        return chooseEncryption()
    }

    /// The event channel is connected.
    package mutating func eventChannelConnected() -> [Action] {
        guard step == .connectingEvents else { return unexpected("an event channel") }
        return order == .recordFirst ? record() : setUpStreams()
    }

    /// The buffered data connection is open.
    package mutating func dataConnectionOpened() -> [Action] {
        guard step == .connectingData else { return unexpected("a data connection") }
        return setVolume()
    }

    /// The receiver answered the request last sent.
    package mutating func replied(_ response: AirPlayResponse) -> [Action] {
        let status = response.status
        let accepted = (200..<300).contains(status)
        switch step {
        case .options:
            guard accepted else { return [.failed(Self.refusal("OPTIONS", response))] }
            if case .raop(_, let challenge?, _) = route, let answer = response.headers["Apple-Response"] {
                step = .verifying
                return [.verifyAppleResponse(answer, challenge: challenge)]
            }
            return chooseEncryption()
        case .announce(let index):
            guard case .raop(_, _, let announcements) = route else { return unexpected("an ANNOUNCE reply") }
            if accepted {
                outcome.codec = announcements[index].codec
                step = .openingPort
                return [.openUDPPort]
            }
            // 415/400/501: the receiver does not take this codec; the next one may do.
            guard [415, 400, 501].contains(status), index + 1 < announcements.count else {
                return [.failed(Self.refusal("ANNOUNCE", response))]
            }
            return announce(index + 1)
        case .transportSetup:
            guard accepted else { return [.failed(Self.refusal("SETUP", response))] }
            let transport = RTSPTransport(parsing: response.headers["Transport"] ?? "")
            guard let audioPort = transport.port("server_port"), let controlPort = transport.port("control_port"),
                  let session = response.headers["Session"] else {
                return [.failed(SenderError(.refused(status: status), "the SETUP reply lacks server_port, control_port or Session"))]
            }
            outcome.audioPort = Int(audioPort)
            outcome.controlPort = Int(controlPort)
            outcome.timingPort = transport.port("timing_port").map(Int.init)
            return [.adoptSession(session.split(separator: ";").first.map(String.init) ?? session)] + record()
        case .sessionSetup:
            let reply: AirPlay2SetupReply
            switch Self.setupReply(response) {
            case .failure(let error): return [.failed(error)]
            case .success(let read): reply = read
            }
            guard let eventPort = reply.session?.eventPort else {
                return [.failed(SenderError(.refused(status: status), "SETUP phase 1 was answered with streams, not an eventPort"))]
            }
            outcome.eventPort = Int(eventPort)
            step = .connectingEvents
            return [.connectEventChannel(port: Int(eventPort))]
        case .streamsSetup:
            let reply: AirPlay2SetupReply
            switch Self.setupReply(response) {
            case .failure(let error):
                // Sonos refuses AirPlay 2's native realtime stream (400) and plays AirPlay 1.
                if case .realtime = route, [400, 406, 415, 451, 461].contains(response.status) { refusedNativeStreams = true }
                return [.failed(error)]
            case .success(let read): reply = read
            }
            guard let stream = reply.streams?.first else {
                return [.failed(SenderError(.refused(status: status), "\(receiverName): SETUP phase 2 described no stream"))]
            }
            outcome.audioPort = Int(stream.dataPort)
            streamsSetUp = true
            if case .buffered = route {
                outcome.dataPort = Int(stream.dataPort)
                step = .connectingData
                return [.connectDataPort(Int(stream.dataPort))]
            }
            guard let controlPort = stream.controlPort else {
                return [.failed(SenderError(.refused(status: status), "\(receiverName): SETUP phase 2 gave no dataPort and controlPort"))]
            }
            outcome.controlPort = Int(controlPort)
            // With NTP the receiver asks us for our time, on our UDP port: nothing to aim at.
            outcome.timingPort = nil
            return recorded ? setVolume() : record()
        case .record:
            guard accepted else { return [.failed(Self.refusal("RECORD", response))] }
            recorded = true
            // A PTP session names its timing peers right after RECORD (Apple's order).
            if let peers = timingPeers {
                step = .setPeers
                return [.send(SenderRequest(method: "SETPEERS", body: TimingPeers.plist(addresses: peers).encoded(as: .binary), contentType: TimingPeers.contentType))]
            }
            return afterRecord()
        case .setPeers:
            guard accepted else { return [.failed(Self.refusal("SETPEERS", response))] }
            return afterRecord()
        case .volume:
            guard accepted else { return [.failed(Self.refusal("SET_PARAMETER", response))] }
            step = .done
            return [.finished(outcome)]
        case .verifying, .openingPort, .connectingEvents, .connectingData, .done:
            return unexpected("a reply")
        }
    }

    // MARK: Steps

    /// RAOP after OPTIONS: RSA when the receiver lists it and we can (warning when its identity
    /// did not verify), clear when it takes that, else a refusal; then the first ANNOUNCE.
    private mutating func chooseEncryption() -> [Action] {
        guard case .raop(let traits, _, let announcements) = route else { return unexpected("OPTIONS") }
        var actions: [Action] = []
        let wantsRSA = traits.encryptions.contains(1) && (traits.advertised || outcome.identityVerified == true)
        if wantsRSA, outcome.identityVerified != true {
            actions.append(.warn("\(receiverName): its Apple-Response does not verify with the AirPort key (not an AirPlay 1 receiver as it claims?)"))
        }
        let canEncrypt = announcements.contains { $0.encrypted != nil }
        if wantsRSA, canEncrypt {
            outcome.encrypted = true
        } else if traits.advertised, !traits.encryptions.contains(0) {
            return actions + [.failed(SenderError(.refused(status: 0),
                                                  "\(receiverName) takes only encryption this sender does not speak (et=\(traits.encryptions.sorted()))"))]
        }
        guard !announcements.isEmpty else {
            return actions + [.failed(SenderError(.refused(status: 0), "\(receiverName) takes none of ALAC or PCM (cn=\(traits.codecs.sorted()))"))]
        }
        return actions + announce(0)
    }

    private mutating func announce(_ index: Int) -> [Action] {
        guard case .raop(_, _, let announcements) = route else { return unexpected("ANNOUNCE") }
        step = .announce(index: index)
        let announcement = announcements[index]
        let body = outcome.encrypted ? announcement.encrypted ?? announcement.clear : announcement.clear
        return [.send(SenderRequest(method: "ANNOUNCE", body: Array(body.utf8), contentType: "application/sdp"))]
    }

    /// The peers of a PTP session, for SETPEERS.
    private var timingPeers: [String]? {
        switch route {
        case .raop: nil
        case .realtime(_, _, _, _, let peers): peers
        case .buffered(_, _, let peers): peers
        }
    }

    /// After RECORD (and SETPEERS): the stream's SETUP unless it came first, then the volume.
    private mutating func afterRecord() -> [Action] {
        if case .raop = route { return setVolume() }
        return streamsSetUp ? setVolume() : setUpStreams()
    }

    private mutating func setUpStreams() -> [Action] {
        step = .streamsSetup
        switch route {
        case .raop: return unexpected("SETUP phase 2")
        case .realtime(_, let alac, let key, let ssrc, _):
            outcome.codec = alac ? .alac : .pcm
            let stream = AirPlay2SenderSession.realtimeStream(alac: alac, key: key, controlPort: ourPort, ssrc: ssrc)
            return [Self.plistRequest("SETUP", AirPlay2Setup.streams([stream]).plist)]
        case .buffered(_, let stream, _):
            outcome.codec = .alac
            return [Self.plistRequest("SETUP", AirPlay2Setup.streams([stream]).plist)]
        }
    }

    private mutating func record() -> [Action] {
        step = .record
        return [.send(SenderSessionMachine.recordRequest(RTPInfo(sequence: sequence, rtpTime: rtpTime)))]
    }

    private mutating func setVolume() -> [Action] {
        step = .volume
        return [.send(Self.volumeRequest(decibels: volumeDecibels))]
    }

    private mutating func unexpected(_ what: String) -> [Action] {
        step = .done
        return [.failed(SenderError(.badInput, "setup of \(receiverName): \(what) was not expected now"))]
    }

    // MARK: Messages

    /// `SET_PARAMETER volume:` in AirPlay dB (-30…0, -144 mutes).
    package static func volumeRequest(decibels: Double) -> SenderRequest {
        SenderRequest(method: "SET_PARAMETER", body: TextParameters.volume(decibels: decibels).encoded, contentType: TextParameters.contentType)
    }

    /// A request whose body is a binary plist.
    static func plistRequest(_ method: String, _ body: PropertyList) -> Action {
        .send(.plist(method, body))
    }

    /// The error for a request answered outside 2xx, with the receiver's reason.
    package static func refusal(_ method: String, _ response: AirPlayResponse) -> SenderError {
        let reason = String(buffer: response.body).trimmingCharacters(in: .whitespacesAndNewlines)
        return SenderError(.refused(status: response.status), "\(method) answered \(response.status)\(reason.isEmpty ? "" : ": \(reason)")")
    }

    /// A SETUP reply read, or an error saying what came back instead.
    package static func setupReply(_ response: AirPlayResponse) -> Result<AirPlay2SetupReply, SenderError> {
        guard (200..<300).contains(response.status) else { return .failure(refusal("SETUP", response)) }
        let bytes = Array(response.body.readableBytesView)
        // shairport-sync 5 answers 200 with no body to what it did not do: say so, not "not a plist".
        guard !bytes.isEmpty else { return .failure(SenderError(.refused(status: response.status), "SETUP answered \(response.status) with no body")) }
        let plist: PropertyList
        do {
            plist = try PropertyList(decoding: bytes)
        } catch {
            return .failure(SenderError(.refused(status: response.status), "SETUP answered something that is not a property list"))
        }
        do {
            return .success(try AirPlay2SetupReply(plist: plist))
        } catch {
            return .failure(SenderError(.refused(status: 0), "SETUP: \(error.description)"))
        }
    }
}
