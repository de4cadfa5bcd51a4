import AirPlayHTTP
import AirPlayWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Serves local files to a receiver over HTTP: GET and HEAD, single byte ranges, the AirPlay
/// overview's MIME types. Only files under the shared root are reachable.
public final class MediaFileServer: Sendable {
    /// MIME types by extension, from the AirPlay overview's table (plus common HLS/DASH neighbours).
    public static let mimeTypes: [String: String] = [
        "m3u8": "application/vnd.apple.mpegurl", "m3u": "audio/mpegurl", "ts": "video/MP2T", "mov": "video/quicktime",
        "mp3": "audio/mpeg", "aac": "audio/aac", "m4a": "audio/mp4", "m4v": "video/x-m4v", "mp4": "video/mp4",
        "key": "application/octet-stream", "vtt": "text/vtt", "webvtt": "text/vtt", "jpg": "image/jpeg", "png": "image/png",
    ]

    private let root: URL
    private let channel: any Channel
    /// Requests served, for logs and tests.
    public let requestCount = NIOLockedValueBox(0)

    /// The port it listens on.
    public var port: Int { channel.localAddress?.port ?? 0 }

    private init(root: URL, channel: any Channel) {
        self.root = root
        self.channel = channel
    }

    /// Serves `root` (a folder, or the folder of a single file) on `host` (the local address the
    /// receiver reaches us at), on any free port.
    public static func start(root: URL, host: String,
                             group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> MediaFileServer {
        let base = root.standardizedFileURL.resolvingSymlinksInPath()
        let holder = NIOLockedValueBox<MediaFileServer?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AirPlayRequestDecoder(
                        limits: RequestLimits(maxHeadBytes: 16 * 1024, maxHeaderCount: 64, maxBodyBytes: 0))))
                    try channel.pipeline.syncOperations.addHandler(FileRequestHandler(root: base, counter: holder))
                }
            }
            .bind(host: host, port: 0).get()
        let server = MediaFileServer(root: base, channel: channel)
        holder.withLockedValue { $0 = server }
        return server
    }

    /// The URL of a file under the root, for a receiver.
    public func url(for file: URL, host: String) -> String {
        let relative = file.standardizedFileURL.resolvingSymlinksInPath().path.dropFirst(root.path.count)
            .split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0) }
            .joined(separator: "/")
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "http://\(hostPart):\(port)/\(relative)"
    }

    /// Stops serving.
    public func close() async { try? await channel.close() }

    /// The file a request path names, if it is inside the root and exists.
    static func resolve(path: String, root: URL) -> URL? {
        guard let decoded = path.split(separator: "?").first.map(String.init)?.removingPercentEncoding else { return nil }
        let candidate = root.appendingPathComponent(decoded).standardizedFileURL.resolvingSymlinksInPath()
        guard candidate.path == root.path || candidate.path.hasPrefix(root.path + "/") else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue else { return nil }
        return candidate
    }

    /// Parses `bytes=START-END`, `bytes=START-`, `bytes=-SUFFIX` against a size; nil = not satisfiable.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(","), size > 0 else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty {
            guard let suffix = Int(spec[1]), suffix > 0 else { return nil }
            return max(0, size - suffix)...(size - 1)
        }
        guard let start = Int(spec[0]), start < size else { return nil }
        let end = spec[1].isEmpty ? size - 1 : min(Int(spec[1]) ?? -1, size - 1)
        guard end >= start else { return nil }
        return start...end
    }
}

/// Answers GET/HEAD for files; bodies go out as file regions (sendfile), never through memory.
final class FileRequestHandler: ChannelInboundHandler {
    typealias InboundIn = InboundRequest
    typealias OutboundOut = IOData

    private let root: URL
    private let counter: NIOLockedValueBox<MediaFileServer?>

    init(root: URL, counter: NIOLockedValueBox<MediaFileServer?>) {
        self.root = root
        self.counter = counter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .request(let request) = unwrapInboundIn(data) else {
            respond(context, status: 400, headers: [:], body: nil, size: 0)
            return
        }
        counter.withLockedValue { $0?.requestCount.withLockedValue { $0 += 1 } }
        guard request.method == "GET" || request.method == "HEAD" else {
            respond(context, status: 405, headers: ["Allow": "GET, HEAD"], body: nil, size: 0)
            return
        }
        guard let file = MediaFileServer.resolve(path: request.path, root: root),
              let handle = try? NIOFileHandle(_deprecatedPath: file.path) else {
            respond(context, status: 404, headers: [:], body: nil, size: 0)
            return
        }
        let size = Int((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0)
        let type = MediaFileServer.mimeTypes[file.pathExtension.lowercased()] ?? "application/octet-stream"
        // Playlists go gzip-compressed to clients that accept it (they are small and read often).
        if file.pathExtension.lowercased() == "m3u8", request.headers["Range"] == nil, size <= 4 * 1024 * 1024,
           request.headers["Accept-Encoding"]?.lowercased().contains("gzip") == true,
           let data = FileManager.default.contents(atPath: file.path), let compressed = Gzip.compress(Array(data)) {
            try? handle.close()
            var body = context.channel.allocator.buffer(capacity: compressed.count)
            body.writeBytes(compressed)
            respondBuffer(context, headers: ["Content-Type": type, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"],
                          body: request.method == "GET" ? body : nil, size: compressed.count)
            return
        }
        var headers: [String: String] = ["Content-Type": type, "Accept-Ranges": "bytes"]
        var range = 0...(max(size, 1) - 1)
        var status = 200
        if let rangeHeader = request.headers["Range"] {
            guard let parsed = MediaFileServer.byteRange(rangeHeader, size: size) else {
                respond(context, status: 416, headers: ["Content-Range": "bytes */\(size)"], body: nil, size: 0)
                try? handle.close()
                return
            }
            range = parsed
            status = 206
            headers["Content-Range"] = "bytes \(parsed.lowerBound)-\(parsed.upperBound)/\(size)"
        }
        let length = size == 0 ? 0 : range.count
        if request.method != "GET" { try? handle.close() }
        respond(context, status: status, headers: headers, body: request.method == "GET" ? handle : nil,
                size: length, offset: range.lowerBound)
    }

    private func respondBuffer(_ context: ChannelHandlerContext, headers: [String: String], body: ByteBuffer?, size: Int) {
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeString("HTTP/1.1 200 OK\r\n")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.writeString("\(name): \(value)\r\n") }
        head.writeString("Content-Length: \(size)\r\n\r\n")
        context.write(wrapOutboundOut(.byteBuffer(head)), promise: nil)
        if let body { context.write(wrapOutboundOut(.byteBuffer(body)), promise: nil) }
        context.flush()
    }

    private func respond(_ context: ChannelHandlerContext, status: Int, headers: [String: String], body: NIOFileHandle?,
                         size: Int, offset: Int = 0) {
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeString("HTTP/1.1 \(status) \(StatusReason.phrase(for: status))\r\n")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.writeString("\(name): \(value)\r\n") }
        head.writeString("Content-Length: \(size)\r\n\r\n")
        guard let body else {
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(head)), promise: nil)
            return
        }
        context.write(wrapOutboundOut(.byteBuffer(head)), promise: nil)
        let region = FileRegion(fileHandle: body, readerIndex: offset, endIndex: offset + size)
        context.writeAndFlush(wrapOutboundOut(.fileRegion(region))).whenComplete { _ in try? body.close() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
