import AirPlayMedia
import AirPlayNowPlaying
import AirPlayWire
import Dispatch
import Glibc
import NIOConcurrencyHelpers
import LinuxIO

/// Sends DACP commands to the sender of the audio that plays: finds its `_dacp._tcp` service
/// (`iTunes_Ctrl_<DACP-ID>`) through avahi-daemon, then `GET /ctrl-int/1/<command>` with the
/// session's `Active-Remote`, one connection per command. The sender is reached at the address
/// its RTSP connection came from (as shairport-sync does), else at the addresses the service
/// resolves to. Commands go one at a time on a queue of the client's own (at most
/// `maxPending` wait; more are refused at once), so a flood of remote presses cannot pile up
/// threads; nothing else waits for them.
/// Finds the `_dacp._tcp` service (`iTunes_Ctrl_<DACP-ID>`) of a DACP-ID: its port and the
/// addresses it resolved to, or nil. It browses the network, so the daemon hands one in.
public typealias DACPServiceFinder = @Sendable (_ dacpID: String) -> (port: UInt16, addresses: [String])?

final class DACPClient: Sendable {
    /// Commands that may wait for the sender at once.
    static let maxPending = 8
    /// Seconds a "not found" is remembered, so a flood does not browse for each press.
    static let notFoundSeconds = 5.0

    /// Finds the port of the DACP service for a DACP-ID, with the addresses it resolved to.
    typealias Finder = DACPServiceFinder

    private let find: Finder
    private let ports = NIOLockedValueBox<[String: (port: UInt16, addresses: [String])]>([:])
    private let notFound = NIOLockedValueBox<[String: Double]>([:])
    private let pending = NIOLockedValueBox(0)
    private let worker = DispatchQueue(label: "airplayd.dacp")
    /// Seconds a command may take to connect and be answered.
    let timeout: Double

    /// A client finding senders' services with `find` (the daemon browses avahi-daemon).
    init(timeout: Double = 2, find: @escaping Finder) {
        self.timeout = timeout
        self.find = find
    }

    /// Sends `command` to `sender`; `completion` hears the outcome once, from the command's thread.
    func send(_ command: DACPCommand, to sender: NowPlayingSender,
              completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        guard let dacpID = sender.dacpID, let activeRemote = sender.activeRemote else {
            return completion(.failure(RemoteControlError("the sender offers no remote control (no DACP-ID and Active-Remote)")))
        }
        let admitted = pending.withLockedValue { count -> Bool in
            guard count < Self.maxPending else { return false }
            count += 1
            return true
        }
        guard admitted else { return completion(.failure(RemoteControlError("too many remote commands are waiting for the sender"))) }
        worker.async { [self] in
            let outcome = deliver(command, dacpID: dacpID, activeRemote: activeRemote, address: sender.address)
            pending.withLockedValue { $0 -= 1 }
            completion(outcome)
        }
    }

    /// Looks `sender`'s DACP service up ahead of the first press (on the client's queue), as
    /// shairport-sync does: the first look-up browses avahi-daemon for about a second.
    func prepare(for sender: NowPlayingSender) {
        guard let dacpID = sender.dacpID, sender.activeRemote != nil, ports.withLockedValue({ $0[dacpID] }) == nil else { return }
        worker.async { [self] in
            guard ports.withLockedValue({ $0[dacpID] }) == nil, let found = find(dacpID) else { return }
            ports.withLockedValue { $0[dacpID] = found }
        }
    }

    private func deliver(_ command: DACPCommand, dacpID: String, activeRemote: String, address: String?) -> Result<Void, RemoteControlError> {
        var fresh = false
        var service = ports.withLockedValue { $0[dacpID] }
        let missing = RemoteControlError("the sender's remote control (\(DACPCommand.serviceName(dacpID: dacpID)) on _dacp._tcp) was not found")
        if service == nil {
            let now = SystemClock().now()
            if let since = notFound.withLockedValue({ $0[dacpID] }), now - since < Self.notFoundSeconds { return .failure(missing) }
            service = find(dacpID)
            fresh = true
            if service == nil { notFound.withLockedValue { $0 = $0.filter { now - $0.value < Self.notFoundSeconds }; $0[dacpID] = now } }
        }
        guard var found = service else { return .failure(missing) }
        ports.withLockedValue { $0[dacpID] = found }
        var outcome = request(command, activeRemote: activeRemote, service: found, address: address)
        // A cached port may be stale (the sender restarted its remote): look once more.
        if case .failure = outcome, !fresh, let again = find(dacpID), again.port != found.port {
            found = again
            ports.withLockedValue { $0[dacpID] = again }
            outcome = request(command, activeRemote: activeRemote, service: found, address: address)
        }
        return outcome
    }

    private func request(_ command: DACPCommand, activeRemote: String, service: (port: UInt16, addresses: [String]),
                         address: String?) -> Result<Void, RemoteControlError> {
        var lastError = "no address to reach it at"
        for host in ([address].compactMap { $0 } + service.addresses).uniqued() {
            switch Self.get(host: host, port: service.port, path: command.path,
                            headers: ["Active-Remote": activeRemote], timeout: timeout) {
            case .success(let status) where (200..<300).contains(status):
                return .success(())
            case .success(let status):
                return .failure(RemoteControlError("the sender answered \(status) to \(command.path)"))
            case .failure(let error):
                lastError = error.description
            }
        }
        return .failure(RemoteControlError("the sender's remote control cannot be reached: \(lastError)"))
    }

    /// One HTTP/1.1 GET on a connection of its own; the response's status code.
    static func get(host: String, port: UInt16, path: String, headers: [String: String], timeout: Double) -> Result<Int, RemoteControlError> {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            return .failure(RemoteControlError("\(host) is not an address"))
        }
        defer { freeaddrinfo(list) }
        let descriptor = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(RemoteControlError("socket: \(String(cString: strerror(errno)))")) }
        defer { close(descriptor) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            return .failure(RemoteControlError("connect to \(host):\(port): \(String(cString: strerror(errno)))"))
        }
        let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var text = "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        text += "Connection: close\r\n\r\n"
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            return .failure(RemoteControlError("send to \(host):\(port) failed"))
        }
        // Only the status line matters; it comes first, within the first kilobyte.
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while reply.count < 1024, !reply.contains(UInt8(ascii: "\n")) {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            reply += buffer[..<count]
        }
        let statusLine = String(decoding: reply.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            return .failure(RemoteControlError("no HTTP answer from \(host):\(port)"))
        }
        return .success(status)
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
