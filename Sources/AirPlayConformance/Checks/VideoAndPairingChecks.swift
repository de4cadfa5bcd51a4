import AirPlaySender
import AirPlayCrypto
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import NIOCore

/// `video.md`: the video endpoints with no playback, and the refusals `/play` owes a sender.
enum VideoChecks {
    static let all = [playbackInfoIdle, scrubIdle, reverse, playRefusesFileURLs, playWithoutLocation, badRate]

    static let reverse = ConformanceCheck("video.reverse", "video.md §7 Reverse event channel",
                                          "POST /reverse with Upgrade: PTTH/1.0 switches the connection to events (101)") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        guard case .success(let response) = await probe.request("POST", "/reverse", headers: [
            ("Upgrade", "PTTH/1.0"), ("Connection", "Upgrade"), ("X-Apple-Purpose", "event"), ("X-Apple-Session-ID", "conformance"),
        ]) else { return .failed("no answer") }
        guard response.status == 101 else { return .failed("answered \(response.status)") }
        let upgrade = response.headers["Upgrade"] ?? ""
        return upgrade.lowercased() == "ptth/1.0" ? .passed("101, Upgrade: \(upgrade)") : .failed("101 without Upgrade: PTTH/1.0 (\(upgrade))")
    }

    static let playbackInfoIdle = ConformanceCheck("video.playback-info", "video.md §4 GET /playback-info",
                                                   "GET /playback-info with nothing playing answers 200") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        return ConformanceOutcome.expecting(await probe.request("GET", "/playback-info"), 200..<201)
    }

    static let scrubIdle = ConformanceCheck("video.scrub", "video.md §5 GET /scrub", "GET /scrub answers duration: and position: lines") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        guard case .success(let response) = await probe.request("GET", "/scrub") else { return .failed("no answer") }
        let text = String(buffer: response.body)
        return response.status == 200 && text.contains("duration:") && text.contains("position:")
            ? .passed(text.replacingOccurrences(of: "\n", with: " ")) : .failed("answered \(response.status): \(text.prefix(80))")
    }

    static let playRefusesFileURLs = ConformanceCheck("video.play-file-url", "video.md §9 Playback engine and safety",
                                                      "POST /play of a file:// URL is refused with a 4xx") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        return ConformanceOutcome.expecting(await probe.request("POST", "/play", headers: [("Content-Type", "text/parameters"), ("X-Apple-Session-ID", "conformance")],
                                          body: Array("Content-Location: file:///etc/passwd\nStart-Position: 0\n".utf8)), 400..<500)
    }

    static let playWithoutLocation = ConformanceCheck("video.play-no-location", "video.md §2 Errors",
                                                      "POST /play without Content-Location is refused with 400") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        return ConformanceOutcome.expecting(await probe.request("POST", "/play", headers: [("Content-Type", "text/parameters")], body: Array("Start-Position: 0\n".utf8)),
                      400..<401)
    }

    static let badRate = ConformanceCheck("video.rate-bad-value", "video.md §6 /rate and /volume", "POST /rate?value=fast is refused with 400") { probe in
        guard await hasVideo(probe) else { return .skipped("the receiver advertises no video") }
        return ConformanceOutcome.expecting(await probe.request("POST", "/rate?value=fast"), 400..<401)
    }

    static func hasVideo(_ probe: ConformanceProbe) async -> Bool {
        guard let features = await probe.features() else { return false }
        return !features.isDisjoint(with: [.video, .airPlayVideoV2])
    }
}

/// `pairing.md`: the first step of each pairing exchange, and the errors of §3.
enum PairingChecks {
    static let all = [transientSetup, verifyStart, notTLV, wrongMethod]

    static let transientSetup = ConformanceCheck("pairing.setup-m2", "pairing.md §4 Transient pair-setup",
                                                 "pair-setup M1 (transient) answers M2 with a 16-byte salt and a 384-byte SRP key") { probe in
        guard await pairs(probe) else { return .skipped("the receiver advertises no HomeKit pairing") }
        guard case .success(let response) = await probe.request("POST", "/pair-setup", headers: headers(hkp: "4"),
                                                                body: PairingClient.setupStart(transient: true).bytes) else {
            return .failed("no answer")
        }
        guard response.status == 200, let m2 = try? TLV8(bytes: Array(response.body.readableBytesView)) else {
            return .failed("answered \(response.status) without TLV8")
        }
        if let code = m2.byte(.error) { return .failed("M2 carries error \(code)") }
        guard m2.byte(.state) == 2, m2[.salt]?.count == 16, m2[.publicKey]?.count == 384 else {
            return .failed("state \(m2.byte(.state).map(String.init) ?? "none"), salt \(m2[.salt]?.count ?? 0) bytes, B \(m2[.publicKey]?.count ?? 0) bytes")
        }
        return .passed("state 2, salt 16 bytes, B 384 bytes")
    }

    static let verifyStart = ConformanceCheck("pairing.verify-m2", "pairing.md §4 Pair-verify",
                                              "pair-verify M1 answers M2 with a 32-byte key and encrypted data") { probe in
        guard await pairs(probe) else { return .skipped("the receiver advertises no HomeKit pairing") }
        let m1 = TLV8([(.state, [1]), (.publicKey, SecureRandom.bytes(32))])
        guard case .success(let response) = await probe.request("POST", "/pair-verify", headers: headers(hkp: "3"), body: m1.bytes) else {
            return .failed("no answer")
        }
        guard response.status == 200, let m2 = try? TLV8(bytes: Array(response.body.readableBytesView)) else {
            return .failed("answered \(response.status) without TLV8")
        }
        guard m2.byte(.state) == 2, m2[.publicKey]?.count == 32, (m2[.encryptedData]?.count ?? 0) > 16 else {
            return .failed("state \(m2.byte(.state).map(String.init) ?? "none"), key \(m2[.publicKey]?.count ?? 0) bytes")
        }
        return .passed("state 2, key 32 bytes, \(m2[.encryptedData]?.count ?? 0) bytes sealed")
    }

    static let notTLV = ConformanceCheck("pairing.not-tlv8", "pairing.md §3 Endpoints and headers",
                                         "a pair-setup body that is not TLV8 gets 400") { probe in
        guard await pairs(probe) else { return .skipped("the receiver advertises no HomeKit pairing") }
        return ConformanceOutcome.expecting(await probe.request("POST", "/pair-setup", headers: headers(hkp: "3"), body: [0x06]), 400..<401)
    }

    static let wrongMethod = ConformanceCheck("pairing.method", "pairing.md §3 Endpoints and headers", "GET /pair-setup gets 405") { probe in
        guard await pairs(probe) else { return .skipped("the receiver advertises no HomeKit pairing") }
        return ConformanceOutcome.expecting(await probe.request("GET", "/pair-setup", headers: headers(hkp: "3")), 405..<406)
    }

    static func pairs(_ probe: ConformanceProbe) async -> Bool {
        guard let features = await probe.features() else { return false }
        return !features.isDisjoint(with: [.homeKitPairing, .systemPairing, .coreUtilsPairing])
    }

    static func headers(hkp: String) -> [(String, String)] {
        [("Content-Type", "application/octet-stream"), ("X-Apple-HKP", hkp)]
    }
}
