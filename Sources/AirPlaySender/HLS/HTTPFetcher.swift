import AirPlayHTTP
import Foundation

/// GETs over HTTP(S) for the HLS tools: playlists, keys and segments, with the headers (cookies,
/// authorization) the user gives and an optional extra CA, bounded in size and time. Only http
/// and https are fetched.
public struct HTTPFetcher: Sendable {
    /// The request options.
    public var options: HTTPRequestOptions

    /// A fetcher with given request options.
    public init(options: HTTPRequestOptions) { self.options = options }

    /// A fetcher with extra headers and CA file.
    public init(headers: [String: String] = [:], caFile: String? = nil, timeout: Double = 20) {
        options = HTTPRequestOptions(headers: headers, timeout: timeout, caFile: caFile)
    }

    /// The body of `url` (at most `limit` bytes) and the URL it finally came from (after redirects).
    public func get(_ url: URL, limit: Int = 16 << 20) async throws(SenderError) -> (Data, URL) {
        var options = self.options
        options.maximumBytes = limit
        let result: HTTPResult
        do {
            result = try await HTTPClient.get(url.absoluteString, options: options)
        } catch {
            throw SenderError(error.unsupportedScheme ? .badInput : .notFound, error.message)
        }
        guard (200..<300).contains(result.status) else {
            throw SenderError(result.status == 401 || result.status == 403 ? .refused(status: result.status) : .notFound,
                              "\(url.absoluteString) answered \(result.status)")
        }
        return (Data(result.body), URL(string: result.finalURL) ?? url)
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
