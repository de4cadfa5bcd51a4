import AirPlayHLS
import AirPlayWire
import Foundation

/// A local HLS video handed over the way an iPhone's YouTube app does (`airplay play DIR
/// --playlists fcup`): the receiver gets `mlhls://localhost/<path>` and asks this sender for each
/// playlist over FCUP; the segments (and keys, maps) stay on this machine's media server, named
/// by absolute `http://` URLs in the media playlists handed over. Only files under the served
/// folder are answered.
public struct HandOverPlaylists: Sendable {
    /// Where the handed-over URLs live.
    public static let prefix = "mlhls://localhost/"

    /// The served folder.
    let root: URL
    /// The media server's URL for `root` (`http://HOST:PORT/`).
    let httpRoot: String

    /// Playlists under `root`, whose segments the media server at `httpRoot` serves.
    public init(root: URL, httpRoot: String) {
        self.root = root.standardizedFileURL.resolvingSymlinksInPath()
        self.httpRoot = httpRoot.hasSuffix("/") ? httpRoot : httpRoot + "/"
    }

    /// The URL the receiver is handed for a playlist file under the folder.
    public func handOverURL(for file: URL) -> String {
        Self.prefix + relativePath(of: file)
    }

    private func relativePath(of file: URL) -> String {
        file.standardizedFileURL.resolvingSymlinksInPath().path.dropFirst(root.path.count)
            .split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0) }
            .joined(separator: "/")
    }

    /// The answer to a receiver's playlist request: the playlist with its playlists' URIs handed
    /// over too and its segments' made absolute on the media server; status 404 for anything else.
    public func answer(_ request: FCUPRequest) -> FCUPResponse {
        func failed(_ status: Int) -> FCUPResponse {
            FCUPResponse(url: request.url, requestID: request.requestID, statusCode: status, data: [])
        }
        guard request.url.hasPrefix(Self.prefix) else { return failed(404) }
        let relative = String(request.url.dropFirst(Self.prefix.count).prefix { $0 != "?" && $0 != "#" })
        guard let decoded = relative.removingPercentEncoding else { return failed(400) }
        let file = root.appendingPathComponent(decoded).standardizedFileURL.resolvingSymlinksInPath()
        guard file.path.hasPrefix(root.path + "/"), let text = try? String(contentsOf: file, encoding: .utf8),
              let playlist = try? PlaylistParser.parse(text) else { return failed(404) }
        let handed: String
        switch playlist {
        case .master(let master):
            // Variants and renditions are playlists too: the receiver asks for them the same way.
            handed = master.absolutized(against: URL(string: request.url) ?? root).text
        case .media(var media):
            let base = httpRoot + relativePath(of: file)
            func absolute(_ uri: String) -> String { PlaylistURI.resolve(uri, against: base) }
            media.segments = media.segments.map { segment in
                var segment = segment
                segment.uri = absolute(segment.uri)
                if let uri = segment.map?["URI"] { segment.map?["URI"] = absolute(uri) }
                segment.keys = segment.keys.map { key in
                    var key = key
                    if let uri = key["URI"], !uri.contains(":") { key["URI"] = absolute(uri) }
                    return key
                }
                return segment
            }
            handed = media.text
        }
        return FCUPResponse(url: request.url, requestID: request.requestID, statusCode: 0, data: Array(handed.utf8),
                            headers: ["Content-Type": "application/vnd.apple.mpegurl"])
    }
}
