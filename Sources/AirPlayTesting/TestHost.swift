import Foundation

/// A private test host: its own network namespace (only a loopback interface, so no mDNS can
/// reach a real network), its own system D-Bus, and an avahi-daemon limited to that loopback,
/// started the way DESIGN.md describes. Several can run at once without seeing each other.
public final class TestHost: @unchecked Sendable {
    /// The network namespace name.
    public let namespace: String
    /// A scratch directory for sockets, configs and logs.
    public let directory: String
    /// The D-Bus address clients use (`DBUS_SYSTEM_BUS_ADDRESS`).
    public let busAddress: String

    private var bus: ManagedProcess?
    private var avahi: ManagedProcess?
    private var children: [ManagedProcess] = []
    private let lock = NSLock()

    private static let counter = NSLock()
    nonisolated(unsafe) private static var next = 0

    /// Creates the namespace and starts the bus; avahi starts with `startAvahi()`.
    public init(label: String) throws {
        let index = Self.counter.withLock { () -> Int in
            Self.next += 1
            return Self.next
        }
        namespace = "apt\(getpid())-\(index)"
        directory = NSTemporaryDirectory() + "airplay-it-\(namespace)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/avahi-run", withIntermediateDirectories: true)
        busAddress = "unix:path=\(directory)/system_bus_socket"
        try Self.require(["ip", "dbus-daemon", "avahi-daemon", "avahi-browse", "avahi-publish"])
        let add = try runCommand(Self.which("ip")!, ["netns", "add", namespace], timeout: 10)
        guard add.status == 0 else { throw TestHostError("ip netns add failed: \(add.stderr)") }
        CleanupAtExit.register(namespace: namespace)
        _ = try runCommand(Self.which("ip")!, ["netns", "exec", namespace, "ip", "link", "set", "lo", "up"], timeout: 10)
        try startBus()
    }

    /// The environment a client of this host's bus needs.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    /// Starts (or restarts) the system bus.
    public func startBus() throws {
        try? FileManager.default.removeItem(atPath: directory + "/system_bus_socket")
        bus = try ManagedProcess(Self.which("dbus-daemon")!, ["--system", "--nofork", "--nopidfile", "--address=\(busAddress)"],
                                 directory: directory, label: "dbus")
        guard poll(timeout: 10, { FileManager.default.fileExists(atPath: directory + "/system_bus_socket") }) else {
            throw TestHostError("dbus-daemon did not start: \(bus?.stderr ?? "")")
        }
    }

    /// Stops the bus.
    public func stopBus() {
        bus?.stop()
        bus = nil
    }

    /// Starts avahi-daemon in the namespace, on loopback only (or on `interfaces`, links of this
    /// namespace made by `link(to:…)`), and waits until it answers on the bus.
    public func startAvahi(interfaces: [String] = ["lo"]) throws {
        let config = directory + "/avahi-daemon.conf"
        try """
            [server]
            host-name=\(namespace)
            allow-interfaces=\(interfaces.joined(separator: ","))
            use-ipv4=yes
            use-ipv6=no
            enable-dbus=yes
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-hinfo=no
            publish-workstation=no
            [reflector]
            enable-reflector=no
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // `ip netns exec` gives the child a private mount namespace: bind a private run directory
        // over /run/avahi-daemon so the daemon's pid file and socket stay ours.
        let script = "mkdir -p /run/avahi-daemon && mount --bind '\(directory)/avahi-run' /run/avahi-daemon && "
            + "rm -f /run/avahi-daemon/pid && exec avahi-daemon -f '\(config)' --no-drop-root --no-chroot --no-rlimits"
        avahi = try ManagedProcess(Self.which("ip")!, ["netns", "exec", namespace, "sh", "-c", script],
                                   environment: environment, directory: directory, label: "avahi")
        let ready = poll(timeout: 15, interval: 0.1) {
            guard avahi?.isRunning == true else { return true }
            let state = try? runCommand(Self.which("dbus-send")!, [
                "--system", "--print-reply", "--dest=org.freedesktop.Avahi", "/",
                "org.freedesktop.Avahi.Server.GetState",
            ], environment: environment, timeout: 5)
            return state?.stdout.contains("int32 2") == true
        }
        guard ready, avahi?.isRunning == true else {
            throw TestHostError("avahi-daemon did not become ready: \(avahi?.stderr ?? "")")
        }
    }

    /// Stops avahi-daemon (SIGTERM, as systemd would).
    public func stopAvahi() {
        avahi?.stop()
        avahi = nil
    }

    /// Starts a program inside the namespace with this host's bus.
    public func spawn(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                      label: String) throws -> ManagedProcess {
        var env = environment
        env.merge(extra) { _, new in new }
        let child = try ManagedProcess(Self.which("ip")!, ["netns", "exec", namespace, executable] + arguments,
                                       environment: env, directory: directory, label: label)
        lock.withLock { children.append(child) }
        return child
    }

    /// Runs a program inside the namespace to completion.
    public func run(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                    timeout: Double = 30) throws -> CommandResult {
        var env = environment
        env.merge(extra) { _, new in new }
        return try runCommand(Self.which("ip")!, ["netns", "exec", namespace, executable] + arguments,
                              environment: env, timeout: timeout, directory: directory)
    }

    /// Joins this namespace to `other` with a veth pair, as two hosts on one link: this end gets
    /// `addresses` (the first is its main address), the other end `peerAddress`, all in a /24.
    /// Multicast (mDNS) then flows between the two namespaces and never leaves them.
    /// - Returns: the name of this end's interface, for `startAvahi(interfaces:)`.
    @discardableResult
    public func link(to other: TestHost, addresses: [String], peerAddress: String) throws -> String {
        let ip = Self.which("ip")!
        // Names unique on the machine (interfaces are made in the root namespace, then moved), under 16 bytes.
        let link = Self.counter.withLock { () -> Int in
            Self.next += 1
            return Self.next
        }
        let (here, there) = ("v\(getpid() % 100_000)l\(link)h", "v\(getpid() % 100_000)l\(link)p")
        for arguments in [["link", "add", here, "type", "veth", "peer", "name", there],
                          ["link", "set", here, "netns", namespace], ["link", "set", there, "netns", other.namespace]] {
            let result = try runCommand(ip, arguments, timeout: 10)
            guard result.status == 0 else { throw TestHostError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
        }
        var steps: [(TestHost, [String])] = addresses.map { (self, ["addr", "add", "\($0)/24", "dev", here]) }
        steps += [(other, ["addr", "add", "\(peerAddress)/24", "dev", there]), (self, ["link", "set", here, "up"]), (other, ["link", "set", there, "up"])]
        for (host, arguments) in steps {
            let result = try host.run(ip, arguments, timeout: 10)
            guard result.status == 0 else { throw TestHostError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
        }
        return here
    }

    /// `avahi-browse -rpt TYPE` on this host: the resolved (`=`) lines (those resolved within
    /// `timeout` seconds, when it has to be stopped).
    public func browse(_ type: String, timeout: Double = 20) throws -> [BrowsedService] {
        let result = try runCommand(Self.which("avahi-browse")!, ["-rpt", type], environment: environment,
                                    timeout: timeout, directory: directory)
        return result.stdout.split(separator: "\n").compactMap { BrowsedService(parsableLine: String($0)) }
    }

    /// Publishes an extra service with `avahi-publish` (a stand-in for another device) until the host is closed.
    public func publish(name: String, type: String, port: Int, txt: [String]) throws -> ManagedProcess {
        let child = try ManagedProcess(Self.which("avahi-publish")!, ["-s", name, type, String(port)] + txt,
                                       environment: environment, directory: directory, label: "publish")
        lock.withLock { children.append(child) }
        return child
    }

    /// Stops everything and removes the namespace.
    public func close() {
        let all = lock.withLock { () -> [ManagedProcess] in
            defer { children = [] }
            return children
        }
        for child in all { child.stop(grace: 2) }
        stopAvahi()
        stopBus()
        _ = try? runCommand(Self.which("ip")!, ["netns", "del", namespace], timeout: 10)
        CleanupAtExit.forget(namespace: namespace)
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { close() }

    /// The full path of a program on PATH (or in /usr/sbin, /sbin), nil when missing.
    public static func which(_ name: String) -> String? {
        if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Fails (never skips) when a component the tests need is not installed.
    public static func require(_ programs: [String]) throws {
        let missing = programs.filter { which($0) == nil }
        guard missing.isEmpty else {
            throw TestHostError("missing programs: \(missing.joined(separator: ", ")); run tools/setup-deps")
        }
    }
}

/// A service line of `avahi-browse -p` in resolved form.
public struct BrowsedService: Hashable, Sendable {
    /// Interface name.
    public var interface: String
    /// Instance name, unescaped.
    public var name: String
    /// Service type.
    public var type: String
    /// Host name.
    public var host: String
    /// Address.
    public var address: String
    /// Port.
    public var port: Int
    /// TXT strings.
    public var txt: [String]

    /// The value of a TXT key.
    public func txtValue(_ key: String) -> String? {
        txt.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// Parses `=;lo;IPv4;Name;Type;local;host;addr;port;"k=v" "k=v"`; nil for other lines.
    public init?(parsableLine line: String) {
        let fields = line.split(separator: ";", maxSplits: 9, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 10, fields[0] == "=" else { return nil }
        interface = fields[1]
        name = Self.unescape(fields[3])
        type = fields[4]
        host = fields[6]
        address = fields[7]
        port = Int(fields[8]) ?? 0
        txt = Self.splitTXT(fields[9])
    }

    /// avahi-browse escapes bytes in names as `\DDD` (decimal).
    static func unescape(_ text: String) -> String {
        var bytes: [UInt8] = []
        var characters = Array(text.utf8)[...]
        while let byte = characters.first {
            characters = characters.dropFirst()
            if byte == UInt8(ascii: "\\"), characters.count >= 3,
               let value = UInt8(String(decoding: characters.prefix(3), as: UTF8.self)) {
                bytes.append(value)
                characters = characters.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func splitTXT(_ text: String) -> [String] {
        var result: [String] = []
        var current = ""
        var inside = false
        for character in text {
            if character == "\"" {
                if inside { result.append(current); current = "" }
                inside.toggle()
            } else if inside {
                current.append(character)
            }
        }
        return result
    }
}

/// A test host could not be set up.
public struct TestHostError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// An error with a message.
    public init(_ description: String) { self.description = description }
}
