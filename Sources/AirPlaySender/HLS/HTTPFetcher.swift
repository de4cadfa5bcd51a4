import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// GETs over HTTP(S) for the HLS tools: playlists, keys and segments, with the headers (cookies,
/// authorization) the user gives, bounded in size and time. Only http and https are fetched.
public struct HTTPFetcher: Sendable {
    /// Extra request headers, e.g. `Cookie`.
    public var headers: [String: String]
    /// Seconds before a request is given up.
    public var timeout: Double

    /// A fetcher with extra headers.
    public init(headers: [String: String] = [:], timeout: Double = 20) {
        self.headers = headers
        self.timeout = timeout
    }

    /// The body of `url` (at most `limit` bytes) and the URL it finally came from (after redirects).
    public func get(_ url: URL, limit: Int = 16 << 20, range: ClosedRange<Int>? = nil) async throws(SenderError) -> (Data, URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw SenderError(.badInput, "\(url.absoluteString): only http and https URLs are fetched")
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let range { request.setValue("bytes=\(range.lowerBound)-\(range.upperBound)", forHTTPHeaderField: "Range") }
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw SenderError(.notFound, "\(url.absoluteString): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else { throw SenderError(.notFound, "\(url.absoluteString): not an HTTP answer") }
        guard (200..<300).contains(http.statusCode) else {
            throw SenderError(http.statusCode == 401 || http.statusCode == 403 ? .refused(status: http.statusCode) : .notFound,
                              "\(url.absoluteString) answered \(http.statusCode)")
        }
        guard data.count <= limit else { throw SenderError(.badInput, "\(url.absoluteString) is larger than \(limit) bytes") }
        return (data, http.url ?? url)
    }

    /// A playlist's text and final URL.
    public func playlist(_ url: URL) async throws(SenderError) -> (String, URL) {
        let (data, final) = try await get(url)
        guard let text = String(data: data, encoding: .utf8) else {
            throw SenderError(.badInput, "\(url.absoluteString) is not UTF-8 text")
        }
        return (text, final)
    }
}
