import AirPlayHLS
import AirPlayHTTP
import AirPlayWire
import FoundationEssentials
import NIOCore

/// Segments through the gateway, with `refuseLocalTargets` (`video_refuse_local_urls`).
///
/// The player's HLS demuxer (playbin3's hlsdemux2) downloads segments itself and follows their
/// redirects, so a segment on an innocent host could redirect to the box. With the policy on,
/// the gateway hands the player names of its own (`s<n>.ts`) and fetches each segment and map
/// through libcurl, which screens every connection, redirects included. The player's byte
/// range (`EXT-X-BYTERANGE` stays in the playlist) is passed on; bodies are held whole, so they
/// are bounded. The cost: the player sees a segment's first byte only once all of it arrived.
extension HLSGateway {
    /// The largest segment or map fetched for the player (six seconds at 60 Mb/s).
    static let maximumSegmentBytes = 48 << 20
    /// Seconds one segment may take.
    static let segmentTimeout = 60.0

    /// The media playlist with its segments and maps named for proxying, when the policy asks
    /// for it; as it is otherwise. Its URIs are absolute and screened already.
    func proxying(_ media: MediaPlaylist, token: String) -> MediaPlaylist {
        guard options.refuseLocalTargets else { return media }
        var copy = media
        copy.segments = sessions.withLockedValue { sessions in
            media.segments.map { segment in
                var segment = segment
                segment.uri = sessions.proxiedName(token: token, url: segment.uri) + Self.fileExtension(segment.uri)
                if var map = segment.map, let uri = map["URI"] {
                    map["URI"] = sessions.proxiedName(token: token, url: uri) + Self.fileExtension(uri)
                    segment.map = map
                }
                return segment
            }
        }
        return copy
    }

    /// The number in a proxied name (`s12.ts` → 12), nil for any other name.
    static func proxiedNumber(_ name: String) -> Int? {
        guard name.hasPrefix("s") else { return nil }
        let digits = name.dropFirst().prefix { $0 != "." }
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    /// `.ts`, `.m4s`… of a URL's path, kept on the proxied name for players that look at it;
    /// empty when the path has no short alphanumeric extension.
    static func fileExtension(_ url: String) -> String {
        guard let path = URLComponents(string: url)?.path, let dot = path.lastIndex(of: "."),
              !path[dot...].contains("/") else { return "" }
        let suffix = path[path.index(after: dot)...]
        guard (1...5).contains(suffix.count), suffix.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return "." + suffix.lowercased()
    }

    /// `bytes=a-b` of a Range header; nil for anything else (multiple or open ranges), which
    /// is then ignored and the whole resource sent, as RFC 9110 allows.
    static func singleByteRange(_ header: String?) -> ClosedRange<Int>? {
        guard let header, header.lowercased().hasPrefix("bytes=") else { return nil }
        let bounds = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0].filter { $0 != " " }),
              let last = Int(bounds[1].filter { $0 != " " }), first >= 0, last >= first else { return nil }
        return first...last
    }

    /// The media type the player is told for a proxied resource, by its extension.
    static func mediaType(_ url: String) -> String {
        switch fileExtension(url) {
        case ".ts": "video/mp2t"
        case ".m4s", ".mp4", ".m4v", ".cmfv": "video/mp4"
        case ".m4a", ".cmfa": "audio/mp4"
        case ".aac": "audio/aac"
        case ".vtt", ".webvtt": "text/vtt"
        default: "application/octet-stream"
        }
    }

    /// Answers the player's GET of `s<number>`: the resource fetched with every connection
    /// screened, its byte range passed on.
    func proxied(_ token: String, number: Int, range header: String?) async -> AirPlayResponse {
        guard let session = sessions.withLockedValue({ $0[token] }), let url = session.proxied[number] else {
            return Self.text(404, "no segment s\(number) in this playback")
        }
        var options = self.options
        options.headers = session.headers
        options.maximumBytes = Self.maximumSegmentBytes
        options.timeout = Self.segmentTimeout
        let range = Self.singleByteRange(header)
        let result: HTTPResult
        do {
            result = try await HTTPClient.get(url, options: options, range: range)
        } catch {
            // The player retries a 5xx without end (hlsdemux2 takes it for a passing failure):
            // a refusal by policy is final, so it is a 403.
            return fail(token, error.localTargetRefused ? 403 : 502, "segment \(error.message)")
        }
        guard (200..<300).contains(result.status) else {
            // The origin's own 4xx goes on as it is (final: the player gives up and says so).
            return fail(token, (400..<500).contains(result.status) ? result.status : 502, "segment \(url) answered \(result.status)")
        }
        var headers: MessageHeaders = ["Content-Type": Self.mediaType(url)]
        var status = 200
        if let range, result.status == 206, !result.body.isEmpty {
            status = 206
            headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.lowerBound + result.body.count - 1)/*")
        }
        return AirPlayResponse(status: status, headers: headers, body: ByteBuffer(bytes: result.body))
    }
}
