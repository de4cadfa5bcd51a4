import AirPlaySender
import AirPlayCrypto
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation
import NIOCore

/// What the Apple profile's steps share: the paired session connection, its event channel, and
/// where the session broke. Steps run one after another, never at once.
final class AppleWalk: @unchecked Sendable {
    private var connection: ReceiverConnection?
    private var events: AirPlay2EventConnection?
    private var eventPort: Int?
    /// The step after which the session cannot go on.
    private var brokenAt: String?

    /// Runs a step, or skips it when the session it needs broke before it.
    func run(_ step: AppleProfileChecks.Step, probe: ConformanceProbe) async -> ConformanceOutcome {
        probeForSession = probe
        if step.inSession, let brokenAt { return .skipped("the session broke at \(brokenAt)") }
        let outcome = await step.body(self, probe)
        if case .failed = outcome, ["apple.pair-setup", "apple.setup-session"].contains(step.id) { brokenAt = step.id }
        // The session connection's last request is /configure; the walk ends on a connection of its own.
        if step.id == "apple.configure" || step.id == AppleProfileChecks.steps.last?.id { await closeSession() }
        return outcome
    }

    private func closeSession() async {
        await events?.close()
        await connection?.close()
        events = nil
        connection = nil
    }

    // MARK: The steps

    func info(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        let body = PropertyList.dictionary(["qualifier": .array([.string("txtAirPlay")])]).encoded(as: .binary)
        let answer = await probe.request("GET", "/info", rtsp: true, headers: [("Content-Type", PropertyListFormat.binary.contentType)], body: body)
        guard case .success(let response) = answer else { return .failed("no answer") }
        guard response.status == 200, let list = try? PropertyList(decoding: Array(response.body.readableBytesView)), case .dictionary = list else {
            return .failed("\(response.status), not a property list")
        }
        var seen: [String] = []
        var problems: [String] = []
        if case .data(let txt)? = list["txtAirPlay"], !txt.isEmpty { seen.append("txtAirPlay") } else { problems.append("no txtAirPlay") }
        let version = list["sourceVersion"]?.stringValue ?? list["srcvers"]?.stringValue ?? ""
        if Self.version(version, atLeast: [366]) { seen.append("sourceVersion>=366") } else { problems.append("sourceVersion \(version) is below 366") }
        if case .data(let key)? = list["pk"], key.count == 32 { seen.append("pk") } else { problems.append("pk is not 32 bytes of data") }
        if let value = list["features"]?.integerValue {
            let features = FeatureSet(rawValue: UInt64(bitPattern: value))
            seen.append(features.contains(.fairPlayAuthentication) ? "bit14" : "no-bit14")
        } else {
            problems.append("no features")
        }
        return problems.isEmpty ? .passed("200 {\(seen.joined(separator: ", "))}") : .failed(problems.joined(separator: "; "))
    }

    func pairTransiently(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        guard case .success(let made) = await probe.connect() else { return .failed("cannot connect") }
        do {
            try await Self.pairAsNewSender(made)
        } catch {
            await made.close()
            return .failed(error.message)
        }
        connection = made
        return .passed("200 M2, 200 M4: encrypted")
    }

    func fairPlayFirst() async -> ConformanceOutcome {
        let message: [UInt8] = Array("FPLY".utf8) + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, 2, 0xBB]
        guard case .success(let response) = await send("POST", target: "/fp-setup", body: message, contentType: "application/octet-stream") else {
            return .failed("no answer")
        }
        let reply = Array(response.body.readableBytesView)
        let shape = "\(response.status), \(reply.count) bytes, sha512 \(TextFormatting.hex(SHA512.hash(reply).prefix(6)))"
        guard response.status == 200, reply.count == 142, reply.starts(with: Array("FPLY".utf8)), reply[6] == 2, reply[13] == 2 else {
            return .failed(shape)
        }
        return .passed(shape)
    }

    func fairPlaySecond() async -> ConformanceOutcome {
        let message: [UInt8] = Array("FPLY".utf8) + [3, 1, 3, 0, 0, 0, 0, 0x98] + SecureRandom.bytes(152)
        guard case .success(let response) = await send("POST", target: "/fp-setup", body: message, contentType: "application/octet-stream") else {
            return .failed("no answer")
        }
        let reply = Array(response.body.readableBytesView)
        let header: [UInt8] = Array("FPLY".utf8) + [3, 1, 4, 0, 0, 0, 0, 0x14]
        guard response.status == 200, reply.count == 32, reply.starts(with: header), Array(reply.suffix(20)) == Array(message.suffix(20)) else {
            return .failed("\(response.status), \(reply.count) bytes: not the fixed header and the request's last 20 bytes")
        }
        return .passed("200, 32 bytes, the fixed header and the last 20 bytes")
    }

    func setupSession(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        guard let connection else { return .failed("no paired connection") }
        let ptp = await probe.features()?.contains(.ptpClock) == true
        let ours = IPAddressBytes.plain(connection.localAddress?.ipAddress ?? "")
        // An iPhone's phase 1 (iOS 18.1), with our own addresses and ports.
        let session = AirPlay2Setup.Session(
            timingProtocol: ptp ? "PTP" : "NTP", timingPort: ptp ? nil : probe.udpPorts().timing, sessionUUID: UUID().uuidString,
            deviceID: AirPlay2SenderSession.senderDeviceID, name: "airplay conformance", model: "iPhone16,2",
            timingPeers: ptp ? [ours] : [], macAddress: AirPlay2SenderSession.senderDeviceID, sourceVersion: "860.7.1",
            groupUUID: UUID().uuidString, osName: "iPhone OS", osVersion: "18.1", osBuildVersion: "22B83",
            traits: ["groupContainsGroupLeader": false, "isMultiSelectAirPlay": true, "senderSupportsRelay": true,
                     "statsCollectionEnabled": false])
        guard case .success(let response) = await send("SETUP", body: AirPlay2Setup.session(session).plist.encoded(as: .binary),
                                                       contentType: PropertyListFormat.binary.contentType) else { return .failed("no answer") }
        let shape = Self.shape(response)
        // shairport-sync 5 answers 200 to everything: the reply's content is what counts.
        guard response.status == 200, let reply = Self.plist(response).flatMap({ try? AirPlay2SetupReply(plist: $0) }),
              let port = reply.session?.eventPort else {
            return .failed(shape)
        }
        eventPort = port
        return .passed("\(shape) (\(ptp ? "PTP" : "NTP"))")
    }

    func openEvents() async -> ConformanceOutcome {
        guard let connection, let eventPort, let secret = connection.pairingSecret else { return .skipped("no eventPort") }
        do {
            events = try await AirPlay2EventConnection.connect(host: connection.connectableHost, port: eventPort,
                                                               keys: try EventChannelKeys(sharedSecret: secret))
            return .passed("connected, encrypted")
        } catch {
            return .failed("\(error)")
        }
    }

    func setupStream(type: Int, probe: ConformanceProbe) async -> ConformanceOutcome {
        if type == 103, await probe.features()?.contains(.bufferedAudio) != true { return .skipped("no buffered audio (bit 40) is advertised") }
        let realtime = type == AirPlay2Setup.realtime
        let stream = AirPlay2Setup.Stream(
            type: type, compression: 2, audioFormat: 0x40000, samplesPerFrame: 352, sampleRate: 44100, streamKey: SecureRandom.bytes(32),
            controlPort: realtime ? probe.udpPorts().control : nil, latencyMin: realtime ? 11025 : nil, latencyMax: realtime ? 88200 : nil,
            isMedia: true, audioMode: "default", streamConnectionID: Int64(UInt32.random(in: 1...UInt32.max)), supportsDynamicStreamID: true)
        return await plist("SETUP", AirPlay2Setup.streams([stream]).plist)
    }

    func setPeers(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        guard let connection else { return .skipped("no paired connection") }
        let peers = [connection.localAddress?.ipAddress, connection.remoteIP].compactMap { $0 }.map(IPAddressBytes.plain)
        return await plain("SETPEERS", body: TimingPeers.plist(addresses: peers).encoded(as: .binary), contentType: TimingPeers.contentType)
    }

    /// `step`, or skipped on a receiver without buffered audio (its anchors and buffered
    /// flushes belong to a type 103 stream).
    func buffered(_ probe: ConformanceProbe, _ step: () async -> ConformanceOutcome) async -> ConformanceOutcome {
        guard await probe.features()?.contains(.bufferedAudio) == true else { return .skipped("no buffered audio (bit 40) is advertised") }
        return await step()
    }

    func anchor() async -> ConformanceOutcome {
        let now = Date().timeIntervalSince1970
        return await plist("SETRATEANCHORTIME", .dictionary([
            "rate": .integer(1), "rtpTime": .integer(0), "networkTimeSecs": .integer(Int64(now)),
            "networkTimeFrac": .integer(0), "networkTimeTimelineID": .integer(0x0AAB_BCCD_DEEF_F000),
        ]))
    }

    func remoteControl(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        await probe.withConnection { connection in
            do {
                try await Self.pairAsNewSender(connection)
            } catch {
                return .failed((error as? SenderError)?.message ?? "\(error)")
            }
            let body = AirPlay2Setup.remoteControl(AirPlay2Setup.Session(
                timingProtocol: "None", sessionUUID: UUID().uuidString, deviceID: AirPlay2SenderSession.senderDeviceID,
                name: "airplay conformance", model: "iPhone16,2")).plist.encoded(as: .binary)
            guard case .success(let response) = await probe.send("SETUP", probe.sessionURI, on: connection, rtsp: true,
                                                                  headers: [("Content-Type", PropertyListFormat.binary.contentType)], body: body) else {
                return .failed("no answer")
            }
            let shape = Self.shape(response)
            guard response.status == 200, let reply = Self.plist(response).flatMap({ try? AirPlay2SetupReply(plist: $0) }),
                  let port = reply.session?.eventPort, let secret = connection.pairingSecret else {
                return .failed(shape)
            }
            do {
                let events = try await AirPlay2EventConnection.connect(host: connection.connectableHost, port: port,
                                                                       keys: try EventChannelKeys(sharedSecret: secret))
                await events.close()
            } catch {
                return .failed("\(shape), but its event channel: \(error)")
            }
            _ = await probe.send("TEARDOWN", probe.sessionURI, on: connection, rtsp: true, headers: [], body: [])
            return .passed("\(shape), event channel connected")
        }
    }

    /// Transient pair-setup as a sender the receiver never met (a fresh identity each time).
    static func pairAsNewSender(_ connection: ReceiverConnection) async throws(SenderError) {
        try await connection.pairTransient(identity: PairingIdentity(identifier: UUID().uuidString.lowercased(), key: Ed25519SigningKey.generate()))
    }

    // MARK: Requests on the session connection

    /// A request with a binary plist body; passed on 2xx, with what came back.
    func plist(_ method: String, target: String? = nil, _ body: PropertyList) async -> ConformanceOutcome {
        await plain(method, target: target, body: body.encoded(as: .binary), contentType: PropertyListFormat.binary.contentType)
    }

    /// A request; passed on 2xx, with `STATUS {reply keys}`.
    func plain(_ method: String, target: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [],
               contentType: String? = nil) async -> ConformanceOutcome {
        switch await send(method, target: target, headers: headers, body: body, contentType: contentType) {
        case .failure(let issue):
            brokenAt = brokenAt ?? "\(method) (\(issue.reason))"
            return .failed(issue.reason)
        case .success(let response):
            let shape = Self.shape(response)
            return (200..<300).contains(response.status) ? .passed(shape) : .failed(shape)
        }
    }

    private func send(_ method: String, target: String? = nil, headers: [(String, String)] = [], body: [UInt8] = [],
                      contentType: String? = nil) async -> Result<AirPlayResponse, ConformanceIssue> {
        guard let connection else { return .failure("no paired connection") }
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return await sessionProbe.send(method, target ?? sessionProbe.sessionURI, on: connection, rtsp: true, headers: all, body: body)
    }

    /// The probe the session's requests go through (every step sets it: the same for a run).
    private var sessionProbe: ConformanceProbe { probeForSession! }
    private var probeForSession: ConformanceProbe?

    // MARK: Describing replies

    /// `STATUS {keys}` of a reply: a plist's top-level keys (a `streams` array's first entry's
    /// keys beside it), else its length; the same for the same reply shape on any receiver.
    static func shape(_ response: AirPlayResponse) -> String {
        guard response.body.readableBytes > 0 else { return "\(response.status)" }
        guard let list = plist(response), case .dictionary(let entries) = list else { return "\(response.status), \(response.body.readableBytes) bytes" }
        var keys = entries.keys.sorted()
        if case .array(let streams)? = entries["streams"], case .dictionary(let first)? = streams.first {
            keys = keys.map { $0 == "streams" ? "streams[\(first.keys.sorted().joined(separator: ", "))]" : $0 }
        }
        return "\(response.status) {\(keys.joined(separator: ", "))}"
    }

    static func plist(_ response: AirPlayResponse) -> PropertyList? {
        try? PropertyList(decoding: Array(response.body.readableBytesView))
    }

    /// Whether a dotted version (`366.0`, `354.54.6`) is at least `minimum`.
    static func version(_ text: String, atLeast minimum: [Int]) -> Bool {
        let parts = text.split(separator: ".").map { Int($0) ?? 0 }
        for (index, wanted) in minimum.enumerated() {
            let have = index < parts.count ? parts[index] : 0
            if have != wanted { return have > wanted }
        }
        return true
    }
}
