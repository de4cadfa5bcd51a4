import AirPlayPlist
import AirPlayWire
import Foundation
import NIOCore

/// What `/playback-info` says, decoded.
public struct PlaybackInfo: Hashable, Sendable {
    /// Duration in seconds; nil when nothing plays.
    public var duration: Double?
    /// Position in seconds.
    public var position: Double
    /// Rate (0 paused).
    public var rate: Double
    /// True once the first frame is ready.
    public var readyToPlay: Bool
    /// The receiver's error, if the media failed.
    public var error: String?
    /// Alternate audio and subtitle renditions (airplayd's `hlsRenditions` extension).
    public var renditions: [(type: String, name: String, language: String?, selected: Bool)] = []
    /// The HLS variant that plays (airplayd's `hlsVariant` extension): index, bandwidth, resolution.
    public var variant: (index: Int, bandwidth: Int, resolution: String?)?

    /// Compares the standard fields.
    public static func == (lhs: PlaybackInfo, rhs: PlaybackInfo) -> Bool {
        lhs.duration == rhs.duration && lhs.position == rhs.position && lhs.rate == rhs.rate && lhs.readyToPlay == rhs.readyToPlay
            && lhs.error == rhs.error
    }

    /// Hashes the standard fields.
    public func hash(into hasher: inout Hasher) { hasher.combine(position) }

    /// Decodes a plist.
    public init(_ plist: PropertyList) {
        duration = plist["duration"]?.doubleValue
        position = plist["position"]?.doubleValue ?? 0
        rate = plist["rate"]?.doubleValue ?? 0
        readyToPlay = plist["readyToPlay"]?.boolValue ?? false
        if case .array(let list)? = plist["hlsRenditions"] {
            renditions = list.map { ($0["type"]?.stringValue ?? "?", $0["name"]?.stringValue ?? "", $0["language"]?.stringValue,
                                     $0["selected"]?.boolValue ?? false) }
        }
        if let current = plist["hlsVariant"], let index = current["index"]?.integerValue {
            variant = (Int(index), Int(current["bandwidth"]?.integerValue ?? 0), current["resolution"]?.stringValue)
        }
        if let failure = plist["error"] {
            self.error = "\(failure["domain"]?.stringValue ?? "error") \(failure["code"]?.integerValue ?? 0)"
                + (failure["description"]?.stringValue.map { ": \($0)" } ?? "")
        } else {
            error = nil
        }
    }

    /// A state word: playing, paused, loading, stopped, failed.
    public var state: String {
        if error != nil { return "failed" }
        guard duration != nil else { return "stopped" }
        if !readyToPlay { return "loading" }
        return rate == 0 ? "paused" : "playing"
    }
}

/// Drives video on one receiver for one session: the sender side of `Protocol/video.md`.
public struct VideoRemote: Sendable {
    /// The control connection.
    public let connection: ReceiverConnection
    /// The session the calls address.
    public let sessionID: String

    /// A remote on a connection for a session.
    public init(connection: ReceiverConnection, sessionID: String) {
        self.connection = connection
        self.sessionID = sessionID
    }

    private func call(_ method: String, _ target: String, body: [UInt8] = [], contentType: String? = nil)
        async throws(SenderError) -> AirPlayResponse {
        var headers: MessageHeaders = ["User-Agent": "airplay/1.0 (swift-airplay)", "X-Apple-Session-ID": sessionID]
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        var buffer = ByteBuffer()
        buffer.writeBytes(body)
        let response = try await connection.send(AirPlayRequest(method: method, target: target, version: .http11,
                                                                headers: headers, body: buffer))
        guard (200..<300).contains(response.status) else {
            let reason = String(buffer: response.body).trimmingCharacters(in: .whitespacesAndNewlines)
            throw SenderError(.refused(status: response.status),
                              "the receiver answered \(response.status) \(response.reason)" + (reason.isEmpty ? "" : ": \(reason)"))
        }
        return response
    }

    /// `POST /play` with an XML plist (both old and new receivers read it), or a binary one
    /// (what AirPlay 2 receivers expect).
    public func play(url: String, startSeconds: Double, httpHeaders: [String: String] = [:],
                     format: PropertyListFormat = .xml) async throws(SenderError) {
        var fields: [String: PropertyList] = [
            "Content-Location": .string(url), "Start-Position-Seconds": .real(startSeconds),
            "Start-Position": .real(0), "X-Apple-Session-ID": .string(sessionID),
            // The item's id, as iPhones send it (UxPlay refuses a /play without a 36-character one).
            "uuid": .string(UUID().uuidString),
        ]
        // Our extension: headers the receiver sends with its playlist and key requests (cookies).
        if !httpHeaders.isEmpty { fields["httpHeaders"] = .dictionary(httpHeaders.mapValues { .string($0) }) }
        let body = PropertyList.dictionary(fields).encoded(as: format)
        _ = try await call("POST", "/play", body: body, contentType: format.contentType)
    }

    /// `POST /action` with a binary plist: an answer to the receiver's playlist request (FCUP).
    public func action(_ action: VideoAction) async throws(SenderError) {
        _ = try await call("POST", "/action", body: action.plist.encoded(as: .binary), contentType: PropertyListFormat.binary.contentType)
    }

    /// `POST /setProperty?selectedMediaArray`: an audio language, and a subtitle language or
    /// "off"; nil leaves that type as it is.
    public func selectRenditions(audio: String?, subtitles: String?) async throws(SenderError) {
        var entries: [PropertyList] = []
        if let audio {
            entries.append(.dictionary(["MediaSelectionGroupMediaType": .string("public.audible"),
                                        "MediaSelectionOptionsExtendedLanguageTag": .string(audio)]))
        }
        if let subtitles {
            var entry: [String: PropertyList] = ["MediaSelectionGroupMediaType": .string("public.legible")]
            if subtitles.lowercased() != "off" { entry["MediaSelectionOptionsExtendedLanguageTag"] = .string(subtitles) }
            entries.append(.dictionary(entry))
        }
        let body = PropertyList.dictionary(["value": .array(entries)]).encoded(as: .xml)
        _ = try await call("POST", "/setProperty?selectedMediaArray", body: body, contentType: PropertyListFormat.xml.contentType)
    }

    /// `POST /rate?value=R`.
    public func setRate(_ rate: Double) async throws(SenderError) {
        _ = try await call("POST", "/rate?value=\(String(format: "%.6f", rate))")
    }

    /// `POST /scrub?position=S`.
    public func seek(to seconds: Double) async throws(SenderError) {
        _ = try await call("POST", "/scrub?position=\(String(format: "%.6f", max(0, seconds)))")
    }

    /// `GET /scrub`: duration and position.
    public func scrub() async throws(SenderError) -> (duration: Double, position: Double) {
        let text = String(buffer: try await call("GET", "/scrub").body)
        var values: [String: Double] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0]).trimmingCharacters(in: .whitespaces)] = Double(parts[1].trimmingCharacters(in: .whitespaces)) }
        }
        return (values["duration"] ?? 0, values["position"] ?? 0)
    }

    /// `POST /stop`.
    public func stop() async throws(SenderError) { _ = try await call("POST", "/stop") }

    /// `POST /volume?volume=V`.
    public func setVolume(_ volume: Double) async throws(SenderError) {
        _ = try await call("POST", "/volume?volume=\(String(format: "%.6f", volume))")
    }

    /// `GET /playback-info`.
    public func playbackInfo() async throws(SenderError) -> PlaybackInfo {
        let response = try await call("GET", "/playback-info")
        // UxPlay answers with no body while it knows no position (before the start, after the end).
        if response.body.readableBytes == 0 { return PlaybackInfo(.dictionary([:])) }
        guard let plist = try? PropertyList(decoding: Array(response.body.readableBytesView)) else {
            throw SenderError(.connectionLost, "the receiver's /playback-info is not a property list")
        }
        return PlaybackInfo(plist)
    }
}
