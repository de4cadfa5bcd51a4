import AirPlaySender
import AirPlayCrypto
import AirPlayMedia
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import Foundation

/// `airplay2.md`: what an AirPlay 2 receiver says of itself, and that it sets up no session
/// on a connection that was never paired. Skipped for receivers that advertise no AirPlay 2
/// (neither unified media control nor CoreUtils pairing, the bits pyatv chooses AirPlay 2 by).
enum AirPlay2Checks {
    static let all = [info, recordKey, setupInClear, session, realtimeStream, bufferedStream]

    static let session = ConformanceCheck("airplay2.session", "airplay2.md §3 SETUP, phase 1, and §4 The event channel",
                                          "after transient pairing, a session SETUP (PTP where the receiver advertises it, else NTP) answers an eventPort whose channel opens encrypted") { probe in
        let ptp = await usesPTP(probe)
        return await pairedSession(probe) { client in
            let session = try await startSession(client, probe: probe, ptp: ptp)
            await session.close()
            return .passed("transient pair-setup, encrypted \(ptp ? "PTP" : "NTP") SETUP, event channel open")
        }
    }

    /// Whether sessions are tried on PTP: receivers that advertise a PTP clock (bit 41) may serve
    /// nothing else (shairport-sync 5 answers an NTP session with an empty 200).
    static func usesPTP(_ probe: ConformanceProbe) async -> Bool {
        await airPlay2Features(probe)?.contains(.ptpClock) == true
    }

    /// Phase 1 as the checks send it: PTP with our address as the timing peer (no clock is
    /// served: the receiver only has to answer), or NTP with the probe's timing port.
    static func startSession(_ client: RAOPClient, probe: ConformanceProbe, ptp: Bool) async throws(SenderError) -> AirPlay2SenderSession {
        guard ptp else { return try await AirPlay2SenderSession.start(client: client, timingPort: probe.udpPorts().timing) }
        let local = IPAddressBytes.plain(client.connection.localAddress?.ipAddress ?? "")
        return try await AirPlay2SenderSession.start(client: client, timingPort: nil, ptpPeers: [local])
    }

    static let realtimeStream = ConformanceCheck("airplay2.realtime-stream", "airplay2.md §5 SETUP, phase 2: the stream",
                                                 "after phase 1, a realtime ALAC stream (type 96) SETUP answers its dataPort and controlPort, and RECORD is taken") { probe in
        let ptp = await usesPTP(probe)
        return await pairedSession(probe) { client in
            let ports = probe.udpPorts()
            let session = try await startSession(client, probe: probe, ptp: ptp)
            defer { Task { await session.close() } }
            let stream = AirPlay2SenderSession.realtimeStream(alac: true, key: SecureRandom.bytes(32), controlPort: ports.control,
                                                              ssrc: UInt32.random(in: 1...UInt32.max))
            let reply = try await AirPlay2SenderSession.setUp(client, .streams([stream]))
            guard let described = reply.streams?.first, let control = described.controlPort else {
                return .failed("the stream SETUP answered no dataPort and controlPort: \(reply.plist)")
            }
            let data = described.dataPort
            try await client.request("RECORD", headers: ["Range": "npt=0-", RTPInfo.headerName: RTPInfo(sequence: 1, rtpTime: 0).headerValue])
            return .passed("\(ptp ? "PTP" : "NTP") session: dataPort \(data), controlPort \(control), RECORD 200")
        }
    }

    static let bufferedStream = ConformanceCheck("airplay2.buffered-stream", "airplay2.md §12 Buffered audio (type 103) on PTP",
                                                 "with buffered audio advertised (bit 40), a PTP session's buffered stream (type 103) SETUP answers a dataPort that takes a TCP connection") { probe in
        guard let features = await airPlay2Features(probe) else { return .skipped("the receiver advertises no AirPlay 2") }
        guard features.contains(.bufferedAudio) else { return .skipped("no buffered audio (bit 40) is advertised") }
        return await pairedSession(probe) { client in
            let local = IPAddressBytes.plain(client.connection.localAddress?.ipAddress ?? "")
            let remote = IPAddressBytes.plain(client.connection.remoteIP ?? client.connection.host)
            let session = try await AirPlay2SenderSession.start(client: client, timingPort: nil, ptpPeers: [local])
            defer { Task { await session.close() } }
            try await client.request("RECORD", headers: ["Range": "npt=0-", RTPInfo.headerName: RTPInfo(sequence: 0, rtpTime: 0).headerValue])
            try await client.request("SETPEERS", body: TimingPeers.plist(addresses: [local, remote]).encoded(as: .binary), contentType: TimingPeers.contentType)
            let stream = AirPlay2SenderSession.bufferedStream(compression: 2, audioFormat: 0x40000, samplesPerFrame: 352,
                                                              format: PCMFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16),
                                                              key: SecureRandom.bytes(32), ssrc: UInt32.random(in: 1...UInt32.max))
            guard let data = try await AirPlay2SenderSession.setUp(client, .streams([stream])).streams?.first?.dataPort else {
                return .failed("the buffered SETUP answered no dataPort")
            }
            let connection = try BufferedDataConnection(host: remote, port: data)
            connection.close()
            return .passed("dataPort \(data) takes a TCP connection")
        }
    }

    /// Runs `body` on a connection of its own, encrypted by a transient pair-setup; tears the
    /// session down after it. Skipped for receivers that offer no transient pairing.
    private static func pairedSession(_ probe: ConformanceProbe,
                                      _ body: (RAOPClient) async throws -> ConformanceOutcome) async -> ConformanceOutcome {
        guard let features = await airPlay2Features(probe) else { return .skipped("the receiver advertises no AirPlay 2") }
        guard !features.isDisjoint(with: [.systemPairing, .coreUtilsPairing]) else { return .skipped("no transient pairing is offered") }
        return await probe.withConnection { connection in
            do {
                try await connection.pairTransient(identity: PairingIdentity(identifier: UUID().uuidString.lowercased(),
                                                                             key: Ed25519SigningKey.generate()))
                let client = RAOPClient(connection: connection, identity: probe.identity, password: nil)
                let outcome = try await body(client)
                _ = try? await client.request("TEARDOWN")
                return outcome
            } catch let error as SenderError {
                return .failed(error.message)
            } catch {
                return .failed("\(error)")
            }
        }
    }

    static let info = ConformanceCheck("airplay2.info", "airplay2.md §1 Turning it on, and what is advertised",
                                       "GET /info carries deviceID, a 32-byte pk and initialVolume as a real; supportedFormats with buffered audio") { probe in
        guard let features = await airPlay2Features(probe) else { return .skipped("the receiver advertises no AirPlay 2") }
        guard case .success(let list) = await probe.info() else { return .failed("no /info plist") }
        var problems: [String] = []
        if list["deviceID"]?.stringValue.flatMap(DeviceID.init) == nil { problems.append("no deviceID AA:BB:CC:DD:EE:FF") }
        if case .data(let key)? = list["pk"], key.count == 32 {} else { problems.append("pk is not 32 bytes of data") }
        // pyatv raises on an integer here.
        if case .real? = list["initialVolume"] {} else if list["initialVolume"] != nil { problems.append("initialVolume is not a real") }
        if features.contains(.bufferedAudio), case .dictionary? = list["supportedFormats"] {} else if features.contains(.bufferedAudio) {
            problems.append("buffered audio (bit 40) without supportedFormats")
        }
        return problems.isEmpty ? .passed("deviceID \(list["deviceID"]?.stringValue ?? ""), pk of 32 bytes") : .failed(problems.joined(separator: "; "))
    }

    static let recordKey = ConformanceCheck("airplay2.record-pk", "airplay2.md §1 Turning it on, and what is advertised",
                                            "the _airplay._tcp record's pk is /info's pk, in hex") { probe in
        guard await airPlay2Features(probe) != nil else { return .skipped("the receiver advertises no AirPlay 2") }
        guard case .success(let device) = await probe.discovered(), let record = device.airPlay?.record else {
            return .skipped("no _airplay._tcp record was resolved")
        }
        guard case .success(let list) = await probe.info(), case .data(let key)? = list["pk"] else { return .failed("/info has no pk") }
        let hex = key.map { String(format: "%02x", $0) }.joined()
        guard let advertised = record.txt["pk"] else { return .failed("the record has no pk") }
        return advertised.lowercased() == hex ? .passed("pk \(hex.prefix(16))…") : .failed("the record says \(advertised.prefix(16))…, /info \(hex.prefix(16))…")
    }

    static let setupInClear = ConformanceCheck("airplay2.setup-in-clear", "airplay2.md §3 SETUP, phase 1: the session",
                                               "a session SETUP plist on a connection never paired is refused with a 4xx") { probe in
        guard await airPlay2Features(probe) != nil else { return .skipped("the receiver advertises no AirPlay 2") }
        let body = AirPlay2Setup.session(AirPlay2Setup.Session(
            timingProtocol: "NTP", timingPort: 9, sessionUUID: UUID().uuidString, deviceID: "AA:BB:CC:DD:EE:FF",
            name: "airplay conformance", model: "Conformance1,1")).plist.encoded(as: .binary)
        let answer = await probe.request("SETUP", probe.sessionURI, rtsp: true,
                                         headers: [("Content-Type", "application/x-apple-binary-plist")], body: body)
        // A 2xx is judged by what it carries: a session set up in clear, or nothing set up
        // under a success status (shairport-sync 5 answers 200 after every handler).
        if case .success(let response) = answer, (200..<300).contains(response.status) {
            if case .success(let reply) = SenderSetupMachine.setupReply(response), let port = reply.session?.eventPort {
                return .failed("answered \(response.status) and set a session up in clear (eventPort \(port))")
            }
            return .failed("answered \(response.status) with no session in it: nothing was set up, but the request was not refused")
        }
        return ConformanceOutcome.expecting(answer, 400..<500)
    }

    /// The receiver's features when they say AirPlay 2; nil otherwise.
    static func airPlay2Features(_ probe: ConformanceProbe) async -> FeatureSet? {
        guard let features = await probe.features(), !features.isDisjoint(with: [.unifiedMediaControl, .coreUtilsPairing]) else { return nil }
        return features
    }
}
