import AirPlaySender
import AirPlayPlist
import AirPlayWire
import Foundation
import NIOCore

/// `airplay conformance --profile apple-video`: an iPhone's YouTube hand-over, step by step in
/// the order the phone sends it (`Protocol/video.md` §7, FCUP): `/reverse`, `/server-info`, a
/// binary-plist `/play` of `mlhls://localhost/master.m3u8`, the receiver's playlist requests
/// answered with `POST /action`, the properties iOS sets, `/playback-info`, FairPlay video's
/// `/fp-setup2`, `/stop`. Each step names what it saw, so two receivers' runs read side by side;
/// a step whose hand-over broke before it is skipped. The segments named are on a closed port:
/// what is checked is the exchange, not playback.
enum VideoHandOverChecks {
    /// A fresh walk's checks: they share one session.
    static func all() -> [ConformanceCheck] {
        let walk = HandOverWalk()
        return steps.map { step in
            ConformanceCheck(step.id, "video.md §7 " + step.reference, step.summary) { probe in await walk.run(step, probe: probe) }
        }
    }

    struct Step: Sendable {
        let id: String
        let reference: String
        let summary: String
        let body: @Sendable (HandOverWalk, ConformanceProbe) async -> ConformanceOutcome
    }

    static let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS=\"avc1.42c00d,mp4a.40.2\",RESOLUTION=320x180\n"
        + "mlhls://localhost/itag/136/mediadata.m3u8\n"
    static let media = "#EXTM3U\n#YT-EXT-CONDENSED-URL:BASE-URI=\"http://127.0.0.1:9/videoplayback/itag/136\",PARAMS=\"govp,gosq\",PREFIX=\"s/\"\n"
        + "#EXT-X-TARGETDURATION:5\n#EXTINF:5.0,\ns/slices%3D0-99999/0\n#EXT-X-ENDLIST\n"

    static let steps: [Step] = [
        Step(id: "apple-video.reverse", reference: "Reverse event channel", summary: "POST /reverse (PTTH/1.0) opens the event channel") { walk, probe in
            await walk.openChannel(probe)
        },
        Step(id: "apple-video.server-info", reference: "FCUP", summary: "GET /server-info answers a plist") { walk, _ in
            await walk.expect(walk.send("GET", "/server-info"), 200..<201)
        },
        Step(id: "apple-video.play", reference: "How airplayd takes a hand-over",
             summary: "POST /play of mlhls://localhost/master.m3u8 (binary plist, uuid, clientProcName YouTube) answers 200") { walk, _ in
            let body = PropertyList.dictionary([
                "Content-Location": .string("mlhls://localhost/master.m3u8"), "Start-Position": .real(0), "Start-Position-Seconds": .real(0),
                "uuid": .string(UUID().uuidString), "clientProcName": .string("YouTube"), "clientBundleID": .string("com.google.ios.youtube"),
                "rate": .real(1),
            ]).encoded(as: .binary)
            return await walk.expect(walk.send("POST", "/play", body: body, contentType: PropertyListFormat.binary.contentType), 200..<201)
        },
        Step(id: "apple-video.fcup-master", reference: "FCUP",
             summary: "an unhandledURLRequest for the master arrives on the event channel: id 1, the fixed keys, the session echoed") { walk, _ in
            await walk.awaitRequest(url: "mlhls://localhost/master.m3u8")
        },
        Step(id: "apple-video.action-master", reference: "FCUP", summary: "POST /action with the master's bytes answers 200") { walk, _ in
            await walk.answer(master)
        },
        Step(id: "apple-video.fcup-media", reference: "FCUP",
             summary: "the variant's playlist is asked next, its id one more") { walk, _ in
            await walk.awaitRequest(url: "mlhls://localhost/itag/136/mediadata.m3u8")
        },
        Step(id: "apple-video.action-media", reference: "FCUP", summary: "POST /action with a condensed media playlist answers 200") { walk, _ in
            await walk.answer(media)
        },
        Step(id: "apple-video.action-unknown-id", reference: "FCUP", summary: "POST /action naming a request id never sent is refused (4xx)") { walk, _ in
            let body = VideoAction.unhandledURLResponse(FCUPResponse(url: "mlhls://localhost/other.m3u8", requestID: 999, data: Array("#EXTM3U\n".utf8)))
                .plist.encoded(as: .binary)
            return await walk.expect(walk.send("POST", "/action", body: body, contentType: PropertyListFormat.binary.contentType), 400..<500)
        },
        Step(id: "apple-video.set-property", reference: "Properties (video.md §8)",
             summary: "PUT /setProperty?interstitialEvents, as iOS 18 sends it, answers 200") { walk, _ in
            let body = PropertyList.dictionary(["value": .array([])]).encoded(as: .binary)
            return await walk.expect(walk.send("PUT", "/setProperty?interstitialEvents", body: body, contentType: PropertyListFormat.binary.contentType),
                                     200..<201)
        },
        Step(id: "apple-video.playback-info", reference: "GET /playback-info (video.md §4)", summary: "GET /playback-info answers 200") { walk, _ in
            await walk.expect(walk.send("GET", "/playback-info"), 200..<201)
        },
        Step(id: "apple-video.fp-setup2", reference: "FairPlay video", summary: "POST /fp-setup2 (FairPlay video) is refused with 421") { walk, _ in
            await walk.expect(walk.send("POST", "/fp-setup2", body: Array("FPLY".utf8) + [3, 1, 1, 0, 0, 0, 0, 4, 2, 0, 2, 0xbb],
                                        contentType: "application/octet-stream"), 421..<422)
        },
        Step(id: "apple-video.stop", reference: "POST /stop (video.md §1)", summary: "POST /stop answers 200") { walk, _ in
            let outcome = await walk.expect(walk.send("POST", "/stop"), 200..<201)
            await walk.close()
            return outcome
        },
    ]
}

/// One hand-over's state across the steps: the control connection, the event channel and the
/// playlist requests it brought.
final class HandOverWalk: @unchecked Sendable {
    private let lock = NSLock()
    private let sessionID = UUID().uuidString
    private var connection: ReceiverConnection?
    private var listener: EventListener?
    private var requests: [FCUPRequest] = []
    private var pending: FCUPRequest?
    private var broken: String?

    func run(_ step: VideoHandOverChecks.Step, probe: ConformanceProbe) async -> ConformanceOutcome {
        if let broken = lock.withLock({ broken }), step.id != "apple-video.stop" { return .skipped("the hand-over broke earlier: \(broken)") }
        let outcome = await step.body(self, probe)
        if case .failed(let reason) = outcome, ["apple-video.reverse", "apple-video.play", "apple-video.fcup-master"].contains(step.id) {
            lock.withLock { broken = reason }
        }
        return outcome
    }

    func openChannel(_ probe: ConformanceProbe) async -> ConformanceOutcome {
        switch await probe.connect() {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let made): lock.withLock { connection = made }
        }
        do {
            let opened = try await EventListener.open(host: probe.host, port: probe.port, sessionID: sessionID) { [self] event in
                guard let request = try? FCUPRequest(event: event) else { return }
                lock.withLock { requests.append(request) }
            }
            lock.withLock { listener = opened }
            return .passed("101")
        } catch {
            return .failed(error.message)
        }
    }

    func send(_ method: String, _ target: String, body: [UInt8] = [], contentType: String? = nil) async -> Result<AirPlayResponse, ConformanceIssue> {
        guard let connection = lock.withLock({ connection }) else { return .failure("no control connection") }
        var headers: MessageHeaders = ["X-Apple-Session-ID": sessionID, "User-Agent": "AirPlay/860.7.1"]
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        do {
            return .success(try await connection.send(AirPlayRequest(method: method, target: target, version: .http11, headers: headers,
                                                                     body: ByteBuffer(bytes: body))))
        } catch {
            return .failure(ConformanceIssue(reason: error.message))
        }
    }

    func expect(_ answer: Result<AirPlayResponse, ConformanceIssue>, _ expected: Range<Int>) -> ConformanceOutcome {
        ConformanceOutcome.expecting(answer, expected)
    }

    /// Waits up to 10 s for the next playlist request, for `url`, checking its fixed keys.
    func awaitRequest(url: String) async -> ConformanceOutcome {
        for _ in 0..<100 {
            if let next = lock.withLock({ requests.isEmpty ? nil : requests.removeFirst() }) {
                lock.withLock { pending = next }
                let previous = lock.withLock { requestedIDs }
                var problems: [String] = []
                if next.url != url { problems.append("asked for \(next.url.prefix(80)), not \(url)") }
                if next.playbackSessionID != sessionID { problems.append("X-Playback-Session-Id \(next.playbackSessionID.prefix(40)) is not the /play's") }
                if let last = previous.last, next.requestID != last + 1 { problems.append("id \(next.requestID) after \(last)") }
                if previous.isEmpty, next.requestID != 1 { problems.append("the first id is \(next.requestID), not 1") }
                lock.withLock { requestedIDs.append(next.requestID) }
                return problems.isEmpty ? .passed("id \(next.requestID), \(next.url)") : .failed(problems.joined(separator: "; "))
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return .failed("no unhandledURLRequest for \(url) within 10 s")
    }

    private var requestedIDs: [Int] = []

    /// Answers the request just seen with `text`.
    func answer(_ text: String) async -> ConformanceOutcome {
        guard let request = lock.withLock({ pending }) else { return .skipped("no playlist request to answer") }
        let body = VideoAction.unhandledURLResponse(FCUPResponse(url: request.url, requestID: request.requestID, data: Array(text.utf8)))
            .plist.encoded(as: .binary)
        return ConformanceOutcome.expecting(await send("POST", "/action", body: body, contentType: PropertyListFormat.binary.contentType), 200..<201)
    }

    func close() async {
        let (listener, connection) = lock.withLock { (self.listener, self.connection) }
        await listener?.close()
        await connection?.close()
    }
}
