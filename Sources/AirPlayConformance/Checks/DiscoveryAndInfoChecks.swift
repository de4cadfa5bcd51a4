import AirPlaySender
import AirPlayPlist
import AirPlayWire
import NIOCore

/// `discovery.md`: the records avahi-daemon resolves, and what they agree on.
enum DiscoveryChecks {
    static let all = [airPlayRecord, raopRecord, recordsAgree]

    static let airPlayRecord = ConformanceCheck("discovery.airplay-record", "discovery.md `_airplay._tcp` TXT record",
                                                "_airplay._tcp carries deviceid, features, model and srcvers") { probe in
        guard case .success(let device) = await probe.discovered() else { return .skipped(await skipReason(probe)) }
        guard let service = device.airPlay else { return .skipped("only _raop._tcp is advertised (an audio-only receiver)") }
        let missing = ["deviceid", "features", "model", "srcvers"].filter { service.record.txt[$0] == nil }
        guard missing.isEmpty else { return .failed("missing TXT keys: \(missing.joined(separator: ", "))") }
        guard FeatureSet(txtValue: service.record.txt["features"] ?? "") != nil else { return .failed("features=\(service.record.txt["features"] ?? "") does not read") }
        return .passed("\(service.instanceName): deviceid=\(service.record.txt["deviceid"] ?? "") features=\(service.record.txt["features"] ?? "")")
    }

    static let raopRecord = ConformanceCheck("discovery.raop-record", "discovery.md `_raop._tcp` TXT record",
                                             "_raop._tcp is named DEVICEID@Name and carries cn, et, tp, sr, ss, ch") { probe in
        guard case .success(let device) = await probe.discovered() else { return .skipped(await skipReason(probe)) }
        guard let service = device.raop else { return .skipped("no _raop._tcp service (a video-only receiver)") }
        guard DeviceID.splitRAOPInstanceName(service.instanceName) != nil else {
            return .failed("instance name \(service.instanceName) is not DEVICEID@Name")
        }
        let missing = ["cn", "et", "tp", "sr", "ss", "ch"].filter { service.record.txt[$0] == nil }
        guard missing.isEmpty else { return .failed("missing TXT keys: \(missing.joined(separator: ", "))") }
        return .passed("\(service.instanceName): cn=\(service.record.txt["cn"] ?? "") et=\(service.record.txt["et"] ?? "")")
    }

    static let recordsAgree = ConformanceCheck("discovery.records-agree", "discovery.md Keeping the records right",
                                               "both records name the same device id, features and port") { probe in
        guard case .success(let device) = await probe.discovered() else { return .skipped(await skipReason(probe)) }
        guard let airPlay = device.airPlay, let raop = device.raop else { return .skipped("only one of the two services is advertised") }
        let raopID = DeviceID.splitRAOPInstanceName(raop.instanceName)?.id
        guard raopID == airPlay.record.deviceID else {
            return .failed("_raop._tcp names \(raopID.map(\.description) ?? "no id"), _airplay._tcp \(airPlay.record.deviceID.map(\.description) ?? "none")")
        }
        guard airPlay.record.features == raop.record.features else {
            return .failed("features \(airPlay.record.features.txtValue) but ft \(raop.record.features.txtValue)")
        }
        guard airPlay.port == raop.port else { return .failed("_airplay._tcp on \(airPlay.port), _raop._tcp on \(raop.port)") }
        return .passed("device \(airPlay.record.deviceID.map(\.description) ?? ""), features \(airPlay.record.features.txtValue)")
    }

    static func skipReason(_ probe: ConformanceProbe) async -> String {
        if case .failure(let skip) = await probe.discovered() { return skip.reason }
        return "not discovered"
    }
}

/// `raop.md §2 GET /info` and `discovery.md GET /server-info`: what the receiver says of itself.
enum InfoChecks {
    static let all = [info, binaryInfo, serverInfo]

    static let info = ConformanceCheck("info.get", "raop.md §2 GET /info (RTSP)", "GET /info answers a plist with deviceID, features and name") { probe in
        switch await probe.info() {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let list):
            let missing = ["features", "name"].filter { list[$0] == nil } + (list["deviceID"] == nil && list["deviceid"] == nil ? ["deviceID"] : [])
            return missing.isEmpty ? .passed("name \(list["name"]?.stringValue ?? "?"), features \(list["features"]?.integerValue ?? 0)")
                : .failed("the plist lacks \(missing.joined(separator: ", "))")
        }
    }

    static let binaryInfo = ConformanceCheck("info.binary", "discovery.md Plist format negotiation",
                                             "GET /info with Accept: application/x-apple-binary-plist answers a binary plist") { probe in
        guard case .success = await probe.info() else { return .skipped("GET /info is not answered") }
        switch await probe.request("GET", "/info", rtsp: true, headers: [("Accept", "application/x-apple-binary-plist")]) {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let response):
            let body = Array(response.body.readableBytesView)
            return response.status == 200 && body.starts(with: Array("bplist00".utf8)) ? .passed("\(body.count) bytes of bplist00")
                : .failed("\(response.status), body starts \(String(decoding: body.prefix(8), as: UTF8.self))")
        }
    }

    static let serverInfo = ConformanceCheck("info.server-info", "discovery.md GET /server-info",
                                             "a video receiver answers GET /server-info with deviceid, features, model and srcvers") { probe in
        guard let features = await probe.features(), !features.isDisjoint(with: [.video, .airPlayVideoV2]) else {
            return .skipped("the receiver advertises no video")
        }
        switch await probe.request("GET", "/server-info") {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let response):
            guard response.status == 200, let list = try? PropertyList(decoding: Array(response.body.readableBytesView)) else {
                return .failed("answered \(response.status) without a plist")
            }
            let missing = ["deviceid", "features", "model", "srcvers"].filter { list[$0] == nil }
            return missing.isEmpty ? .passed("model \(list["model"]?.stringValue ?? "?"), srcvers \(list["srcvers"]?.stringValue ?? "?")")
                : .failed("the plist lacks \(missing.joined(separator: ", "))")
        }
    }
}

/// `discovery.md Errors on the control port` and `raop.md §3`: what a receiver answers to what
/// no sender should send, and that it goes on serving.
enum ControlPortChecks {
    static let all = [unknownPath, malformedLine, oversizedHead, cseqEcho]

    static let unknownPath = ConformanceCheck("control.unknown-path", "discovery.md Errors on the control port",
                                              "an unknown path gets 404 and the connection serves the next request") { probe in
        let bytes = Array("GET /no-such-path HTTP/1.1\r\nHost: x\r\n\r\nGET /no-such-path-either HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        return expect(await probe.raw(bytes, expecting: 2), statuses: [404, 404])
    }

    static let malformedLine = ConformanceCheck("control.malformed-request", "discovery.md Errors on the control port",
                                                "a malformed request line gets 400 and the next request is served") { probe in
        let bytes = Array("THIS IS NOT HTTP\r\n\r\nOPTIONS * RTSP/1.0\r\nCSeq: 2\r\n\r\n".utf8)
        return expect(await probe.raw(bytes, expecting: 2), statuses: [400, 200])
    }

    static let oversizedHead = ConformanceCheck("control.oversized-head", "discovery.md Errors on the control port",
                                                "a request head over 16 KiB gets 431 (or 400) rather than being buffered") { probe in
        let bytes = Array("GET /info HTTP/1.1\r\nX-Filler: \(String(repeating: "a", count: 40_000))\r\n\r\n".utf8)
        switch await probe.raw(bytes, expecting: 1) {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let responses):
            guard let first = responses.first else { return .failed("no answer: the connection was dropped or left waiting") }
            return [431, 400, 413].contains(first.status) ? .passed("\(first.status) \(first.reason)") : .failed("answered \(first.status)")
        }
    }

    static let cseqEcho = ConformanceCheck("rtsp.cseq", "raop.md §2", "every RTSP reply carries the request's CSeq") { probe in
        switch await probe.raw(Array("OPTIONS * RTSP/1.0\r\nCSeq: 41\r\n\r\nOPTIONS * RTSP/1.0\r\nCSeq: 42\r\n\r\n".utf8), expecting: 2) {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let responses):
            let seqs = responses.map { $0.headers["CSeq"] ?? "none" }
            return seqs == ["41", "42"] ? .passed("CSeq 41, 42") : .failed("CSeq \(seqs.joined(separator: ", ")) for 41, 42")
        }
    }

    /// Passes when the responses have exactly these statuses, in order.
    static func expect(_ answer: Result<[AirPlayResponse], ConformanceIssue>, statuses: [Int]) -> ConformanceOutcome {
        switch answer {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let responses):
            let seen = responses.map(\.status)
            return seen == statuses ? .passed(seen.map(String.init).joined(separator: ", "))
                : .failed("answered \(seen.isEmpty ? "nothing" : seen.map(String.init).joined(separator: ", ")), expected \(statuses.map(String.init).joined(separator: ", "))")
        }
    }
}
