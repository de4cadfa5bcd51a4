import AirPlaySender
import AirPlayCrypto
import AirPlayWire
import Foundation
import Glibc

/// `raop.md §2`: a RAOP session request by request, as iTunes and pyatv make it, on one
/// connection. Each step needs the one before; after a failure the rest are skipped.
enum RAOPChecks {
    static let all = [options, appleChallenge, announce, setup, record, RAOPStreamChecks.timing, RAOPStreamChecks.resend, volume,
                      progress, metadata, getVolume, flush, teardown, unknownCodec]

    static let options = ConformanceCheck("raop.options", "raop.md §2 OPTIONS", "OPTIONS lists the RAOP methods in Public") { probe in
        switch await probe.request("OPTIONS", "*", rtsp: true) {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let response):
            let listed = Set((response.headers["Public"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            let missing = ["ANNOUNCE", "SETUP", "RECORD", "FLUSH", "TEARDOWN", "SET_PARAMETER"].filter { !listed.contains($0) }
            guard response.status == 200 else { return .failed("answered \(response.status)") }
            return missing.isEmpty ? .passed("Public: \(response.headers["Public"] ?? "")") : .failed("Public lacks \(missing.joined(separator: ", "))")
        }
    }

    static let appleChallenge = ConformanceCheck("raop.apple-challenge", "raop.md §2 OPTIONS",
                                                 "Apple-Response signs the challenge, the address and the device id with the AirPort key") { probe in
        guard let deviceID = await probe.deviceID() else { return .skipped("the device id is unknown (no /info, no records)") }
        return await probe.withConnection { connection in
            do {
                let client = RAOPClient(connection: connection, identity: probe.identity, password: nil)
                switch try await client.checkIdentity(deviceID: deviceID.bytes, crypto: try RAOPSenderCrypto()) {
                case nil: return .failed("no Apple-Response to an Apple-Challenge")
                case false?: return .failed("the Apple-Response does not verify for \(deviceID)")
                case true?: return .passed("verified for \(deviceID) at \(connection.remoteIP ?? probe.host)")
                }
            } catch let error as SenderError {
                return .failed(error.message)
            } catch {
                return .failed("\(error)")
            }
        }
    }

    static let announce = step("raop.announce", "raop.md §2 ANNOUNCE", "ANNOUNCE of an ALAC 44.1 kHz stereo stream is accepted") { probe in
        if probe.session == nil {
            switch await probe.connect() {
            case .failure(let issue): return .failure(issue)
            case .success(let made): probe.session = made
            }
        }
        return await probe.sessionRequest("ANNOUNCE", body: Array(sdp(probe, codec: "AppleLossless", fmtp: "352 0 16 40 10 14 2 255 0 0 44100").utf8),
                                          contentType: "application/sdp")
    }

    static let setup = step("raop.setup", "raop.md §2 SETUP", "SETUP over UDP answers server_port, control_port and a Session") { probe in
        let ports = probe.udpPorts()
        let answer = await probe.sessionRequest("SETUP", headers: [
            ("Transport", RTSPTransport.record(controlPort: ports.control, timingPort: ports.timing).headerValue),
        ])
        guard case .success(let response) = answer, response.status == 200 else { return answer }
        let transport = RTSPTransport(parsing: response.headers["Transport"] ?? "")
        guard let audio = transport.port("server_port"), let control = transport.port("control_port") else {
            return .failure("Transport \(response.headers["Transport"] ?? "(none)") lacks server_port or control_port")
        }
        probe.receiverPorts = (Int(audio), Int(control))
        guard let session = response.headers["Session"], !session.isEmpty else { return .failure("no Session header") }
        probe.sessionID = String(session.prefix { $0 != ";" })
        return answer
    }

    static let record = step("raop.record", "raop.md §2 RECORD", "RECORD with Range and RTP-Info starts the stream") { probe in
        await probe.sessionRequest("RECORD", headers: [("Range", "npt=0-"), (RTPInfo.headerName, RTPInfo(sequence: 1000, rtpTime: 352_000).headerValue)] + probe.sessionHeader)
    }

    static let volume = step("raop.volume", "raop.md §2 SET_PARAMETER: volume", "SET_PARAMETER volume is accepted", breaksSession: false) { probe in
        await probe.sessionRequest("SET_PARAMETER", headers: probe.sessionHeader, body: TextParameters.volume(decibels: -15).encoded,
                                   contentType: TextParameters.contentType)
    }

    static let progress = step("raop.progress", "raop.md §2 SET_PARAMETER: progress", "SET_PARAMETER progress is accepted", breaksSession: false) { probe in
        await probe.sessionRequest("SET_PARAMETER", headers: probe.sessionHeader, body: TextParameters.progress(start: 352_000, current: 352_000, end: 2_998_000).encoded,
                                   contentType: TextParameters.contentType)
    }

    static let metadata = step("raop.metadata", "raop.md §2 SET_PARAMETER: DMAP metadata", "SET_PARAMETER with DMAP track metadata is accepted",
                               breaksSession: false) { probe in
        var item = DMAP.Item()
        item.title = "Conformance"
        item.artist = "airplay"
        item.album = "Protocol"
        return await probe.sessionRequest("SET_PARAMETER", headers: probe.sessionHeader + [(RTPInfo.headerName, RTPInfo(rtpTime: 352_000).headerValue)],
                                          body: DMAP.encode(item), contentType: "application/x-dmap-tagged")
    }

    static let getVolume = step("raop.get-volume", "raop.md §2 GET_PARAMETER: volume", "GET_PARAMETER volume answers a volume: line",
                                breaksSession: false) { probe in
        let answer = await probe.sessionRequest("GET_PARAMETER", headers: probe.sessionHeader, body: TextParameters.asking("volume").encoded,
                                                contentType: TextParameters.contentType)
        guard case .success(let response) = answer, response.status == 200 else { return answer }
        return TextParameters(parsing: Array(response.body.readableBytesView))["volume"].flatMap(Double.init) != nil ? answer : .failure("the body is not a volume: line: \(String(buffer: response.body).prefix(60))")
    }

    static let flush = step("raop.flush", "raop.md §2 FLUSH", "FLUSH with RTP-Info is accepted") { probe in
        await probe.sessionRequest("FLUSH", headers: probe.sessionHeader + [(RTPInfo.headerName, RTPInfo(sequence: 1010, rtpTime: 355_520).headerValue)])
    }

    static let teardown = step("raop.teardown", "raop.md §2 TEARDOWN", "TEARDOWN ends the session") { probe in
        defer { probe.sessionBroken = "the session was torn down" }
        return await probe.sessionRequest("TEARDOWN", headers: probe.sessionHeader)
    }

    static let unknownCodec = ConformanceCheck("raop.unknown-codec", "raop.md §3 Error answers",
                                               "ANNOUNCE of a codec the receiver cannot play is refused with a 4xx") { probe in
        return await probe.withConnection { connection in
            let body = Array(sdp(probe, codec: "speex/16000/1", fmtp: nil).utf8)
            switch await probe.send("ANNOUNCE", probe.sessionURI, on: connection, rtsp: true, headers: [("Content-Type", "application/sdp")], body: body) {
            case .failure(let issue): return .failed(issue.reason)
            case .success(let response):
                return (400..<500).contains(response.status) ? .passed("\(response.status) \(String(buffer: response.body).prefix(80))")
                    : .failed("answered \(response.status)")
            }
        }
    }

    /// A session step: skipped once an earlier one failed; a failure that `breaksSession` skips the rest.
    static func step(_ id: String, _ reference: String, _ summary: String, breaksSession: Bool = true,
                     _ body: @escaping @Sendable (ConformanceProbe) async -> Result<AirPlayResponse, ConformanceIssue>) -> ConformanceCheck {
        ConformanceCheck(id, reference, summary) { probe in
            if let broken = probe.sessionBroken { return .skipped(broken) }
            let outcome: ConformanceOutcome
            switch await body(probe) {
            case .failure(let issue): outcome = .failed(issue.reason)
            case .success(let response) where response.status == 200: outcome = .passed("200\(response.headers["Audio-Latency"].map { ", Audio-Latency \($0)" } ?? "")")
            case .success(let response):
                outcome = .failed("answered \(response.status) \(String(buffer: response.body).trimmingCharacters(in: .whitespacesAndNewlines).prefix(80))")
            }
            if case .failed(let reason) = outcome, breaksSession { probe.sessionBroken = "\(id) failed: \(reason)" }
            return outcome
        }
    }

    /// An ANNOUNCE body as iTunes writes it.
    static func sdp(_ probe: ConformanceProbe, codec: String, fmtp: String?) -> String {
        RAOPAnnouncement(origin: probe.session?.localAddress?.ipAddress ?? "127.0.0.1", connection: probe.host, rtpmap: codec, fmtp: fmtp).encoded
    }
}

extension ConformanceProbe {
    /// `Session: ID` once SETUP gave one.
    var sessionHeader: [(String, String)] { sessionID.map { [("Session", $0)] } ?? [] }

    /// Two UDP ports of ours for the receiver's control and timing packets (bound, never read:
    /// the checks look at RTSP only), kept until the probe ends.
    func udpPorts() -> (control: Int, timing: Int) {
        func bound() -> Int {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { return 0 }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let port = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress -> Int in
                    guard bind(descriptor, socketAddress, length) == 0, getsockname(descriptor, socketAddress, &length) == 0 else { return 0 }
                    return Int(UInt16(bigEndian: pointer.pointee.sin_port))
                }
            }
            udpDescriptors.append(descriptor)
            return port
        }
        return (bound(), bound())
    }
}
