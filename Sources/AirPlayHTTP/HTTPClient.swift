internal import CCurl
import FoundationEssentials
import Dispatch
import Glibc

/// How a GET is made: headers (cookies, authorization), limits, and an extra CA to trust.
public struct HTTPRequestOptions: Sendable {
    /// Extra request headers, e.g. `Cookie`.
    public var headers: [String: String]
    /// Seconds for the whole request.
    public var timeout: Double
    /// The most bytes accepted in a body held in memory.
    public var maximumBytes: Int
    /// A PEM file of certificate authorities to trust besides the system's (private CAs, tests).
    public var caFile: String?
    /// Refuse to connect to loopback, link-local and unspecified addresses, checked on every
    /// connection (redirects included) at the address actually connected.
    public var refuseLocalTargets: Bool

    /// Options with defaults: 20 s, 16 MiB, the system's CAs, any address.
    public init(headers: [String: String] = [:], timeout: Double = 20, maximumBytes: Int = 16 << 20, caFile: String? = nil,
                refuseLocalTargets: Bool = false) {
        self.headers = headers
        self.timeout = timeout
        self.maximumBytes = maximumBytes
        self.caFile = caFile
        self.refuseLocalTargets = refuseLocalTargets
    }
}

/// An HTTP answer.
public struct HTTPResult: Sendable {
    /// The status code.
    public var status: Int
    /// The body.
    public var body: [UInt8]
    /// The URL the body finally came from (after redirects).
    public var finalURL: String

    /// The body as UTF-8 text, when it is.
    public var text: String? { String(validating: body, as: UTF8.self) }
}

/// Why a request gave no answer.
public struct HTTPError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// True when the URL's scheme is not http or https (nothing was fetched).
    public var unsupportedScheme: Bool
    /// True when the server could not send from the offset asked for (no byte ranges).
    public var rangeRefused = false
    /// True when a connection was refused because it led to a loopback or link-local address.
    public var localTargetRefused = false

    /// The message.
    public var description: String { message }

    /// An error from its parts.
    public init(message: String, unsupportedScheme: Bool) {
        self.message = message
        self.unsupportedScheme = unsupportedScheme
    }
}

/// GETs over HTTP and HTTPS with libcurl, for playlists, keys and segments. Only http and https
/// are ever fetched, redirects included (a sender's URL can never make us read file:// or
/// anything else); bodies are bounded; TLS is verified against the system's CAs and an optional
/// extra CA file. Blocking calls: the async ones run them off the caller's thread.
public enum HTTPClient {

    /// True for http and https URLs.
    public static func isFetchable(_ url: String) -> Bool {
        let lowered = url.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// GET into memory.
    public static func get(_ url: String, options: HTTPRequestOptions = HTTPRequestOptions(), range: ClosedRange<Int>? = nil)
        throws(HTTPError) -> HTTPResult {
        let sink = MemorySink(limit: options.maximumBytes)
        let (status, final) = try perform(url, options: options, range: range, resumeFrom: nil, sink: sink)
        return HTTPResult(status: status, body: sink.bytes, finalURL: final)
    }

    /// GET into memory without blocking the caller's thread.
    public static func get(_ url: String, options: HTTPRequestOptions = HTTPRequestOptions(), range: ClosedRange<Int>? = nil)
        async throws(HTTPError) -> HTTPResult {
        let result: Result<HTTPResult, HTTPError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do { continuation.resume(returning: .success(try get(url, options: options, range: range))) } catch {
                    continuation.resume(returning: .failure(error as! HTTPError))
                }
            }
        }
        return try result.get()
    }

    /// GET into a file kept up to `offset` bytes, for downloads that resume: without `range`, the
    /// resource from `offset` on (a Range request when the offset is not 0); with `range`, those
    /// bytes of it. Returns the status and the bytes written.
    public static func download(_ url: String, to path: String, resumeFrom offset: Int, range: ClosedRange<Int>? = nil,
                                options: HTTPRequestOptions = HTTPRequestOptions(),
                                progress: @escaping @Sendable (Int) -> Void = { _ in }) throws(HTTPError) -> (status: Int, written: Int) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw HTTPError(message: "cannot write \(path): \(String(cString: strerror(errno)))", unsupportedScheme: false) }
        defer { close(descriptor) }
        guard ftruncate(descriptor, off_t(offset)) == 0, lseek(descriptor, 0, SEEK_END) >= 0 else {
            throw HTTPError(message: "cannot write \(path): \(String(cString: strerror(errno)))", unsupportedScheme: false)
        }
        let sink = FileSink(descriptor: descriptor, progress: progress)
        let (status, _) = try perform(url, options: options, range: range, resumeFrom: range == nil && offset > 0 ? offset : nil, sink: sink)
        return (status, sink.written)
    }

    /// Where `url` leads after its redirects (each one screened as `options` say), found by a
    /// GET of its first byte: HEAD is not enough, as signed CDN URLs are valid for one method
    /// only. Returns the status and the final URL; the body is not read.
    public static func resolve(_ url: String, options: HTTPRequestOptions = HTTPRequestOptions()) throws(HTTPError)
        -> (status: Int, finalURL: String) {
        try perform(url, options: options, range: 0...0, resumeFrom: nil, sink: FirstBytesSink())
    }

    private static func perform(_ url: String, options: HTTPRequestOptions, range: ClosedRange<Int>?, resumeFrom: Int?, sink: Sink)
        throws(HTTPError) -> (Int, String) {
        guard isFetchable(url) else {
            throw HTTPError(message: "\(url): only http and https URLs are fetched", unsupportedScheme: true)
        }
        if let reason = cairplay_curl_load() { throw HTTPError(message: String(cString: reason), unsupportedScheme: false) }
        guard let handle = cairplay_curl_easy_init() else { throw HTTPError(message: "libcurl cannot start", unsupportedScheme: false) }
        defer { cairplay_curl_easy_cleanup(handle) }
        var headers: UnsafeMutablePointer<curl_slist>?
        for (name, value) in options.headers { headers = cairplay_curl_slist_append(headers, "\(name): \(value)") }
        defer { cairplay_curl_slist_free_all(headers) }
        let box = Unmanaged.passRetained(sink)
        defer { box.release() }
        _ = cairplay_curl_set_string(handle, CURLOPT_URL, url)
        _ = cairplay_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = cairplay_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = cairplay_curl_set_long(handle, CURLOPT_MAXREDIRS, 5)
        // Redirects may not leave http(s): a hostile server cannot point us at file:// or worse.
        _ = cairplay_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = cairplay_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = cairplay_curl_set_long(handle, CURLOPT_TIMEOUT_MS, Int(options.timeout * 1000))
        _ = cairplay_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(min(options.timeout, 10) * 1000))
        _ = cairplay_curl_set_string(handle, CURLOPT_USERAGENT, "swift-airplay/1.0")
        _ = cairplay_curl_set_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        if let headers { _ = cairplay_curl_set_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers)) }
        if let caFile = options.caFile { _ = cairplay_curl_set_string(handle, CURLOPT_CAINFO, caFile) }
        if let range { _ = cairplay_curl_set_string(handle, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound)") }
        if let resumeFrom { _ = cairplay_curl_set_off(handle, CURLOPT_RESUME_FROM_LARGE, curl_off_t(resumeFrom)) }
        let refused = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        refused.initialize(to: 0)
        defer { refused.deallocate() }
        if options.refuseLocalTargets, cairplay_curl_refuse_local_targets(handle, refused) != CURLE_OK {
            throw HTTPError(message: "libcurl cannot screen the addresses it connects to", unsupportedScheme: false)
        }
        _ = cairplay_curl_set_write(handle, { data, size, count, context in
            let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            guard let data, sink.accept(UnsafeRawBufferPointer(start: data, count: length)) else { return 0 }
            return length
        }, box.toOpaque())
        let code = cairplay_curl_easy_perform(handle)
        if code != CURLE_OK, !sink.stoppedOnPurpose {
            if sink.overflowed { throw HTTPError(message: "\(url) is larger than \(options.maximumBytes) bytes", unsupportedScheme: false) }
            if refused.pointee != 0 {
                var error = HTTPError(message: "\(url): refused: it leads to a loopback or link-local address", unsupportedScheme: false)
                error.localTargetRefused = true
                throw error
            }
            let reason = String(cString: cairplay_curl_easy_strerror(code))
            var error = HTTPError(message: "\(url): \(reason)", unsupportedScheme: code == CURLE_UNSUPPORTED_PROTOCOL)
            error.rangeRefused = code == CURLE_RANGE_ERROR
            throw error
        }
        let final = cairplay_curl_effective_url(handle).map { String(cString: $0) } ?? url
        return (cairplay_curl_status(handle), final)
    }
}

/// Where a response body goes.
class Sink: @unchecked Sendable {
    var overflowed = false
    /// True when the sink ended the transfer because it had what it wanted (not an error).
    var stoppedOnPurpose = false
    func accept(_ bytes: UnsafeRawBufferPointer) -> Bool { true }
}

/// Stops at the first bytes of a body: the headers (status, final URL) were all that was wanted.
final class FirstBytesSink: Sink, @unchecked Sendable {
    override func accept(_ chunk: UnsafeRawBufferPointer) -> Bool {
        stoppedOnPurpose = true
        return false
    }
}

final class MemorySink: Sink, @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    override func accept(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count + chunk.count <= limit else {
            overflowed = true
            return false
        }
        bytes.append(contentsOf: chunk)
        return true
    }
}

final class FileSink: Sink, @unchecked Sendable {
    private let descriptor: Int32
    private let progress: @Sendable (Int) -> Void
    private(set) var written = 0

    init(descriptor: Int32, progress: @escaping @Sendable (Int) -> Void) {
        self.descriptor = descriptor
        self.progress = progress
    }

    override func accept(_ chunk: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < chunk.count {
            let count = write(descriptor, chunk.baseAddress! + offset, chunk.count - offset)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        written += chunk.count
        progress(chunk.count)
        return true
    }
}

/// Which addresses the box never fetches from on a sender's say-so (with `video_refuse_local_urls`).
public enum LocalAddressScreen {
    /// The first loopback, link-local or unspecified address `host` resolves to, if any (a
    /// literal address is checked as it is; brackets around IPv6 are allowed).
    public static func firstLocalAddress(of host: String) -> String? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(bare, nil, &hints, &list) == 0, let list else { return nil }
        defer { freeaddrinfo(list) }
        var node: UnsafeMutablePointer<addrinfo>? = list
        while let current = node {
            if let address = current.pointee.ai_addr, cairplay_address_is_local(address) != 0 {
                return numericHost(address, length: current.pointee.ai_addrlen) ?? bare
            }
            node = current.pointee.ai_next
        }
        return nil
    }

    private static func numericHost(_ address: UnsafePointer<sockaddr>, length: socklen_t) -> String? {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
