import AirPlayWire
internal import CAvahi
import Glibc

/// A service found and resolved on the network.
public struct ResolvedService: Hashable, Sendable {
    /// The service type, e.g. `_raop._tcp`.
    public var type: String
    /// The instance name.
    public var name: String
    /// The host name the service points at (`box.local`).
    public var hostName: String
    /// The addresses it resolved to, IPv4 first.
    public var addresses: [String]
    /// The port.
    public var port: UInt16
    /// The TXT record.
    public var txt: TXTRecord
    /// The interface names it was seen on.
    public var interfaces: [String]

    /// A resolved service from its parts.
    public init(type: String, name: String, hostName: String, addresses: [String], port: UInt16,
                txt: TXTRecord, interfaces: [String]) {
        self.type = type
        self.name = name
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
        self.interfaces = interfaces
    }
}

/// Browses and resolves DNS-SD service types through avahi-daemon, for a bounded time.
///
/// Runs Avahi's simple poll on the calling thread; returns when every browser has reported
/// "all for now" and every resolver has answered, or when the time limit is reached.
public final class AvahiBrowser {
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var browsers: [OpaquePointer] = []
    private var browsersDone = 0
    private var pendingResolvers = 0
    private var found: [String: ResolvedService] = [:]
    private var failure: AvahiError?

    /// A browser; nothing happens until `browse`.
    public init() {}

    /// Browses the given types and resolves what it finds.
    /// - Throws: `AvahiError` with `isDaemonUnavailable` when avahi-daemon or the system bus is absent.
    public func browse(types: [String], timeoutSeconds: Double) throws -> [ResolvedService] {
        guard let newPoll = avahi_simple_poll_new() else {
            throw AvahiError(code: AVAHI_ERR_NO_MEMORY, operation: "avahi_simple_poll_new")
        }
        poll = newPoll
        defer { cleanUp() }
        var error: Int32 = 0
        let callback: AvahiClientCallback = { client, state, userData in
            guard let userData, state == AVAHI_CLIENT_FAILURE, let client else { return }
            let browser = Unmanaged<AvahiBrowser>.fromOpaque(userData).takeUnretainedValue()
            browser.failure = AvahiError(code: Int(avahi_client_errno(client)), operation: "avahi-daemon connection")
        }
        guard let newClient = avahi_client_new(avahi_simple_poll_get(newPoll), AvahiClientFlags(0), callback,
                                               userData, &error) else {
            throw AvahiError(code: Int(error), operation: "connect to avahi-daemon")
        }
        client = newClient
        for type in types {
            let browserCallback: AvahiServiceBrowserCallback = {
                _, interface, proto, event, name, type, domain, _, userData in
                guard let userData else { return }
                let browser = Unmanaged<AvahiBrowser>.fromOpaque(userData).takeUnretainedValue()
                browser.browserEvent(interface: interface, proto: proto, event: event,
                                     name: name, type: type, domain: domain)
            }
            guard let browser = avahi_service_browser_new(
                newClient, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, nil,
                AvahiLookupFlags(0), browserCallback, userData) else {
                throw AvahiError(code: Int(avahi_client_errno(newClient)), operation: "browse \(type)")
            }
            browsers.append(browser)
        }

        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let start = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9
        while true {
            if let failure { throw failure }
            if browsersDone >= browsers.count && pendingResolvers == 0 { break }
            clock_gettime(CLOCK_MONOTONIC, &clock)
            let now = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9
            if now - start >= timeoutSeconds { break }
            let waitMilliseconds = Int32(max(1, min(100, (timeoutSeconds - (now - start)) * 1000)))
            guard avahi_simple_poll_iterate(newPoll, waitMilliseconds) >= 0 else { break }
        }
        return found.values.sorted { ($0.type, $0.name) < ($1.type, $1.name) }
    }

    private var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func browserEvent(interface: AvahiIfIndex, proto: AvahiProtocol, event: AvahiBrowserEvent,
                              name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?,
                              domain: UnsafePointer<CChar>?) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let client, let name, let type else { return }
            let resolverCallback: AvahiServiceResolverCallback = {
                resolver, interface, _, event, name, type, _, host, address, port, txt, _, userData in
                guard let userData else { return }
                let browser = Unmanaged<AvahiBrowser>.fromOpaque(userData).takeUnretainedValue()
                if event == AVAHI_RESOLVER_FOUND, let name, let type {
                    browser.resolved(interface: interface, name: String(cString: name), type: String(cString: type),
                                     host: host.map { String(cString: $0) } ?? "", address: address,
                                     port: port, txt: txt)
                }
                browser.pendingResolvers -= 1
                if let resolver { avahi_service_resolver_free(resolver) }
            }
            // Resolve over IPv4 and IPv6 alike; each answer adds its address.
            if avahi_service_resolver_new(client, interface, proto, name, type, domain,
                                          AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiLookupFlags(0),
                                          resolverCallback, userData) != nil {
                pendingResolvers += 1
            }
        case AVAHI_BROWSER_REMOVE:
            guard let name, let type else { return }
            found.removeValue(forKey: Self.key(type: String(cString: type), name: String(cString: name)))
        case AVAHI_BROWSER_ALL_FOR_NOW:
            browsersDone += 1
        case AVAHI_BROWSER_FAILURE:
            browsersDone += 1
        default:
            break
        }
    }

    private func resolved(interface: AvahiIfIndex, name: String, type: String, host: String,
                          address: UnsafePointer<AvahiAddress>?, port: UInt16,
                          txt: UnsafeMutablePointer<AvahiStringList>?) {
        var addressText = ""
        if let address {
            var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
            avahi_address_snprint(&buffer, buffer.count, address)
            addressText = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // Link-local IPv6 needs its scope to be usable.
            if address.pointee.proto == AVAHI_PROTO_INET6, addressText.lowercased().hasPrefix("fe80"),
               let scope = Self.interfaceName(interface) {
                addressText += "%" + scope
            }
        }
        let key = Self.key(type: type, name: name)
        var service = found[key] ?? ResolvedService(type: type, name: name, hostName: host, addresses: [],
                                                    port: port, txt: TXTRecord(strings: readStringList(txt)),
                                                    interfaces: [])
        if !addressText.isEmpty, !service.addresses.contains(addressText) {
            service.addresses.append(addressText)
            service.addresses.sort { ($0.contains(":") ? 1 : 0, $0) < ($1.contains(":") ? 1 : 0, $1) }
        }
        if let interfaceName = Self.interfaceName(interface), !service.interfaces.contains(interfaceName) {
            service.interfaces.append(interfaceName)
        }
        found[key] = service
    }

    private static func key(type: String, name: String) -> String { type + "\u{0}" + name }

    private static func interfaceName(_ index: AvahiIfIndex) -> String? {
        guard index >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func cleanUp() {
        for browser in browsers { avahi_service_browser_free(browser) }
        browsers = []
        if let client { avahi_client_free(client) }
        client = nil
        if let poll { avahi_simple_poll_free(poll) }
        poll = nil
    }
}
