import AirPlaySender
import AirPlayPlist
import AirPlayWire
import Foundation
import Glibc
import NIOCore

/// What the checks share about one receiver: how to reach it, what was learnt (its records,
/// `/info`), and the RAOP session the session checks build step by step. Checks run one after
/// another, never at once.
public final class ConformanceProbe: @unchecked Sendable {
    /// The receiver's address.
    public let host: String
    /// Its control port.
    public let port: Int
    private let browseSeconds: Double
    private var discovery: Result<DiscoveredReceiver, ConformanceSkip>?
    private var infoAnswer: Result<PropertyList, ConformanceIssue>?
    /// The sender identity of every RTSP request (`DACP-ID`, `Active-Remote`).
    let identity = RAOPClientIdentity()
    /// The RAOP session's connection, once ANNOUNCE made one.
    var session: ReceiverConnection?
    /// Why the session cannot go on, once a step of it failed.
    var sessionBroken: String?
    /// The `Session` SETUP answered.
    var sessionID: String?
    /// UDP sockets of ours the session named in SETUP: control, then timing.
    var udpDescriptors: [Int32] = []
    /// The receiver's audio (`server_port`) and control ports, from SETUP.
    var receiverPorts: (audio: Int, control: Int)?
    private var cseq = 0

    init(host: String, port: Int, browseSeconds: Double) {
        self.host = host
        self.port = port
        self.browseSeconds = browseSeconds
    }

    func close() async {
        await session?.close()
        session = nil
        for descriptor in udpDescriptors { Glibc.close(descriptor) }
        udpDescriptors = []
    }

    /// `rtsp://host/…`, the URI of the session's requests.
    lazy var sessionURI = "rtsp://\(host.contains(":") ? "[\(host)]" : host)/\(UInt32.random(in: 1...UInt32.max))"

    // MARK: What the receiver says about itself

    /// The receiver as avahi-daemon resolves it: a device with a service on our port at our
    /// address (any address when `host` is a name).
    func discovered() async -> Result<DiscoveredReceiver, ConformanceSkip> {
        if let discovery { return discovery }
        let (host, port, seconds) = (self.host, self.port, browseSeconds)
        let found: Result<DiscoveredReceiver, ConformanceSkip> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                guard let receivers = try? ReceiverBrowser.discover(timeoutSeconds: seconds) else {
                    return continuation.resume(returning: .failure(ConformanceSkip("avahi-daemon cannot be reached")))
                }
                let onPort = receivers.filter { $0.services.contains { Int($0.port) == port } }
                let match = onPort.first { $0.services.contains { $0.addresses.contains(host) } } ?? onPort.first
                continuation.resume(returning: match.map { .success($0) }
                    ?? .failure(ConformanceSkip("no _airplay._tcp or _raop._tcp service on port \(port) was found through avahi-daemon")))
            }
        }
        discovery = found
        return found
    }

    /// `GET /info` (RTSP/1.0, as pyatv and iOS ask), read once.
    func info() async -> Result<PropertyList, ConformanceIssue> {
        if let infoAnswer { return infoAnswer }
        let answer: Result<PropertyList, ConformanceIssue>
        switch await request("GET", "/info", rtsp: true) {
        case .failure(let issue): answer = .failure(issue)
        case .success(let response) where response.status != 200: answer = .failure("GET /info answered \(response.status)")
        case .success(let response):
            if let list = try? PropertyList(decoding: Array(response.body.readableBytesView)), case .dictionary = list {
                answer = .success(list)
            } else {
                answer = .failure("GET /info answered 200 without a plist dictionary")
            }
        }
        infoAnswer = answer
        return answer
    }

    /// The device id, from `/info` or the records: what `Apple-Response` signs.
    func deviceID() async -> DeviceID? {
        if case .success(let list) = await info(), let text = list["deviceID"]?.stringValue ?? list["deviceid"]?.stringValue,
           let id = DeviceID(text) { return id }
        if case .success(let device) = await discovered() { return device.deviceID }
        return nil
    }

    /// The features, from `/info` or the records; nil when neither says.
    func features() async -> FeatureSet? {
        if case .success(let list) = await info(), let value = list["features"]?.integerValue { return FeatureSet(rawValue: UInt64(bitPattern: value)) }
        if case .success(let device) = await discovered() { return device.features }
        return nil
    }

    // MARK: Exchanges

    /// A fresh connection to the receiver.
    func connect() async -> Result<ReceiverConnection, ConformanceIssue> {
        do { return .success(try await ReceiverConnection.connect(host: host, port: port)) } catch {
            return .failure(ConformanceIssue(reason: error.message))
        }
    }

    /// `body` on a fresh connection, closed after it; a connection that cannot be made fails the check.
    func withConnection(_ body: (ReceiverConnection) async -> ConformanceOutcome) async -> ConformanceOutcome {
        switch await connect() {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let connection):
            defer { Task { await connection.close() } }
            return await body(connection)
        }
    }

    /// One request on a connection of its own; RTSP requests carry CSeq and the sender identity.
    func request(_ method: String, _ target: String, rtsp: Bool = false, headers: [(String, String)] = [], body: [UInt8] = [])
        async -> Result<AirPlayResponse, ConformanceIssue> {
        let connection: ReceiverConnection
        switch await connect() {
        case .failure(let issue): return .failure(issue)
        case .success(let made): connection = made
        }
        defer { Task { await connection.close() } }
        return await send(method, target, on: connection, rtsp: rtsp, headers: headers, body: body)
    }

    /// One request on the session's connection.
    func sessionRequest(_ method: String, headers: [(String, String)] = [], body: [UInt8] = [], contentType: String? = nil)
        async -> Result<AirPlayResponse, ConformanceIssue> {
        guard let session else { return .failure("no session connection") }
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return await send(method, sessionURI, on: session, rtsp: true, headers: all, body: body)
    }

    func send(_ method: String, _ target: String, on connection: ReceiverConnection, rtsp: Bool, headers: [(String, String)],
              body: [UInt8]) async -> Result<AirPlayResponse, ConformanceIssue> {
        var all = MessageHeaders()
        if rtsp {
            cseq += 1
            all.add(name: "CSeq", value: String(cseq))
            all.add(name: "DACP-ID", value: identity.dacpID)
            all.add(name: "Active-Remote", value: identity.activeRemote)
        }
        all.add(name: "User-Agent", value: "AirPlay/381.13 (airplay conformance)")
        for (name, value) in headers { all.add(name: name, value: value) }
        let request = AirPlayRequest(method: method, target: target, version: rtsp ? .rtsp10 : .http11, headers: all,
                                     body: ByteBuffer(bytes: body))
        do { return .success(try await connection.send(request, timeout: 10)) } catch { return .failure(ConformanceIssue(reason: error.message)) }
    }

    /// Bytes written as they are on a fresh connection; the responses that come back within
    /// `timeout` seconds (or until the receiver closes), at most `count`.
    func raw(_ bytes: [UInt8], expecting count: Int, timeout: Double = 5) async -> Result<[AirPlayResponse], ConformanceIssue> {
        let (host, port) = (self.host, self.port)
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: RawExchange.run(host: host, port: port, bytes: bytes, count: count, timeout: timeout))
            }
        }
    }
}

/// Why an exchange gave no usable answer (written as a string literal where it is made).
struct ConformanceIssue: Error, ExpressibleByStringInterpolation {
    let reason: String
    init(reason: String) { self.reason = reason }
    init(stringLiteral value: String) { reason = value }
}

/// Why a check does not apply.
struct ConformanceSkip: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A blocking TCP exchange for the requests no well-behaved client writes (malformed lines,
/// oversized heads), read back with the sender's response decoder.
enum RawExchange {
    static func run(host: String, port: Int, bytes: [UInt8], count: Int, timeout: Double) -> Result<[AirPlayResponse], ConformanceIssue> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else { return .failure("cannot resolve \(host)") }
        defer { freeaddrinfo(list) }
        let descriptor = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure("socket: \(errno)") }
        defer { close(descriptor) }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else { return .failure("cannot connect to \(host):\(port)") }
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // A receiver may answer and close before reading all of an oversized request.
            guard written > 0 else { break }
            sent += written
        }
        let decoder = AirPlayResponseDecoder()
        var buffer = ByteBuffer()
        var responses: [AirPlayResponse] = []
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 16384)
        while responses.count < count, Date() < deadline {
            let read = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard read > 0 else { break }
            buffer.writeBytes(chunk[0..<read])
            do {
                while let response = try decoder.next(from: &buffer) { responses.append(response) }
            } catch {
                return .failure("unreadable response: \(error.description)")
            }
        }
        return .success(responses)
    }
}
