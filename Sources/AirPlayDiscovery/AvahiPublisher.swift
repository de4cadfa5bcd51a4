import AirPlayWire
internal import CAvahi
import Glibc
import Logging

/// Publishes a device's services through avahi-daemon and keeps them published.
///
/// It runs Avahi's threaded poll: every Avahi callback arrives on that thread with the poll
/// lock held, and every call from outside takes the lock. It survives the real world:
/// no daemon or no system bus at start (retries each second), the daemon restarting
/// (the client falls back to waiting and re-registers as soon as the daemon returns), and
/// name collisions (the device takes the alternative name Avahi proposes).
public final class AvahiPublisher: @unchecked Sendable {
    private let logger: Logger
    private let interfaceIndexes: [Int32]
    private let retryMilliseconds: Int
    private let onEvent: @Sendable (PublisherEvent) -> Void
    private let host: (name: String, address: String)?

    // Touched only on the poll thread or with the poll lock held.
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var advertisement: any DeviceAdvertisement
    private var deviceName: String
    private var registered: [ServiceRegistration] = []
    private var retryPending = false
    private var stopped = false
    private var waitingLogged = false

    /// A publisher for a device; nothing happens until `start()`.
    /// - Parameters:
    ///   - interfaces: network interface names to publish on; empty means all that avahi-daemon uses.
    ///   - host: a host name (`NAME.local`) and an IP address of this box to publish as its own
    ///     address record and point the services at, for a device that answers on one address
    ///     only (a zone of several on one box); nil points them at the box's own host name.
    ///   - retryMilliseconds: how long to wait before reconnecting when the system bus is missing.
    public init(deviceName: String, advertisement: any DeviceAdvertisement, interfaces: [String] = [],
                host: (name: String, address: String)? = nil, retryMilliseconds: Int = 1000, logger: Logger,
                onEvent: @escaping @Sendable (PublisherEvent) -> Void = { _ in }) throws {
        var indexes: [Int32] = []
        for name in interfaces {
            let index = if_nametoindex(name)
            guard index != 0 else { throw AvahiError(code: AVAHI_ERR_INVALID_INTERFACE, operation: "interface \(name)") }
            indexes.append(Int32(index))
        }
        self.interfaceIndexes = indexes
        self.host = host
        self.deviceName = deviceName
        self.advertisement = advertisement
        self.retryMilliseconds = retryMilliseconds
        self.logger = logger
        self.onEvent = onEvent
    }

    deinit { stop() }

    /// Starts the poll thread and the first connection attempt; returns at once.
    public func start() throws {
        guard poll == nil else { return }
        guard let newPoll = avahi_threaded_poll_new() else {
            throw AvahiError(code: AVAHI_ERR_NO_MEMORY, operation: "avahi_threaded_poll_new")
        }
        poll = newPoll
        avahi_threaded_poll_lock(newPoll)
        connect()
        avahi_threaded_poll_unlock(newPoll)
        try checkAvahi(avahi_threaded_poll_start(newPoll), "avahi_threaded_poll_start")
    }

    /// The device name currently published (it changes after a collision).
    public var currentDeviceName: String {
        withLock { deviceName }
    }

    /// Replaces the TXT records in place (`avahi_entry_group_update_service_txt_strlst`), without
    /// re-registering; services whose name, type or port changed are re-registered instead.
    public func update(advertisement newAdvertisement: any DeviceAdvertisement) {
        withLock {
            advertisement = newAdvertisement
            guard let group, !registered.isEmpty else { return }
            let wanted = newAdvertisement.services(deviceName: deviceName)
            let sameShape = wanted.count == registered.count && zip(wanted, registered).allSatisfy {
                $0.type == $1.type && $0.name == $1.name && $0.port == $1.port
            }
            guard sameShape else {
                avahi_entry_group_reset(group)
                registered = []
                register()
                return
            }
            for (service, old) in zip(wanted, registered) where service.txt != old.txt {
                do {
                    try forEachInterface { interface in
                        let list = makeStringList(service.txt)
                        defer { avahi_string_list_free(list) }
                        try checkAvahi(avahi_entry_group_update_service_txt_strlst(
                            group, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                            service.name, service.type, nil, list), "update TXT of \(service.type)")
                    }
                    onEvent(.txtUpdated(type: service.type))
                    logger.info("mDNS TXT updated", metadata: ["mdns.type": "\(service.type)"])
                } catch {
                    logger.warning("mDNS TXT update failed", metadata: ["error": "\(error)"])
                }
            }
            registered = wanted
        }
    }

    /// Withdraws the records (Avahi sends goodbye packets) and stops the poll thread.
    public func stop() {
        guard let poll else { return }
        avahi_threaded_poll_lock(poll)
        stopped = true
        if let group { avahi_entry_group_free(group) }
        group = nil
        registered = []
        if let client { avahi_client_free(client) }
        client = nil
        avahi_threaded_poll_unlock(poll)
        avahi_threaded_poll_stop(poll)
        avahi_threaded_poll_free(poll)
        self.poll = nil
    }

    private func withLock<T>(_ body: () -> T) -> T {
        guard let poll else { return body() }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return body()
    }

    // MARK: - Poll thread

    private var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Creates the client. `AVAHI_CLIENT_NO_FAIL` makes a missing daemon a waiting state
    /// instead of an error; a missing system bus still fails, and then we retry on a timer.
    private func connect() {
        guard !stopped, let poll else { return }
        var error: Int32 = 0
        let callback: AvahiClientCallback = { client, state, userData in
            guard let client, let userData else { return }
            Unmanaged<AvahiPublisher>.fromOpaque(userData).takeUnretainedValue().clientChanged(client, state)
        }
        guard let newClient = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
                                               callback, userData, &error) else {
            // A callback during the failed call may have stored the client Avahi has now freed.
            client = nil
            let reason = String(cString: avahi_strerror(error))
            reportWaiting(reason)
            scheduleReconnect()
            return
        }
        client = newClient
    }

    private func reportWaiting(_ reason: String) {
        if !waitingLogged {
            logger.warning("avahi-daemon not reachable; serving anyway and retrying",
                           metadata: ["mdns.reason": "\(reason)"])
            waitingLogged = true
        }
        onEvent(.waitingForDaemon(reason: reason))
    }

    private func scheduleReconnect() {
        guard !retryPending, !stopped, let poll else { return }
        retryPending = true
        let api = avahi_threaded_poll_get(poll)!
        var deadline = avahiDeadline(afterMilliseconds: retryMilliseconds)
        let fire: AvahiTimeoutCallback = { timeout, userData in
            guard let userData else { return }
            let publisher = Unmanaged<AvahiPublisher>.fromOpaque(userData).takeUnretainedValue()
            if let timeout, let poll = publisher.poll { avahi_threaded_poll_get(poll).pointee.timeout_free(timeout) }
            publisher.retryPending = false
            publisher.reconnect()
        }
        _ = api.pointee.timeout_new(api, &deadline, fire, userData)
    }

    /// Drops the failed client (outside its own callback) and makes a new one.
    private func reconnect() {
        if let group { avahi_entry_group_free(group) }
        group = nil
        registered = []
        if let client { avahi_client_free(client) }
        client = nil
        connect()
    }

    private func clientChanged(_ changedClient: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            client = changedClient
            if waitingLogged { logger.info("avahi-daemon is back; publishing again") }
            waitingLogged = false
            register()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)registered: services follow once it is running.
            if let group { avahi_entry_group_reset(group) }
            registered = []
        case AVAHI_CLIENT_CONNECTING:
            reportWaiting("avahi-daemon is not running")
        case AVAHI_CLIENT_FAILURE:
            let code = avahi_client_errno(changedClient)
            let reason = String(cString: avahi_strerror(code))
            reportWaiting(reason)
            onEvent(.failed(reason: reason))
            // Never free a client inside its own callback: do it from a timer.
            client = changedClient
            scheduleReconnect()
        default:
            break
        }
    }

    private func register() {
        guard !stopped, let client else { return }
        if group == nil {
            let callback: AvahiEntryGroupCallback = { group, state, userData in
                guard let group, let userData else { return }
                Unmanaged<AvahiPublisher>.fromOpaque(userData).takeUnretainedValue().groupChanged(group, state)
            }
            group = avahi_entry_group_new(client, callback, userData)
            guard group != nil else {
                let reason = String(cString: avahi_strerror(avahi_client_errno(client)))
                logger.error("cannot create mDNS entry group", metadata: ["mdns.reason": "\(reason)"])
                onEvent(.failed(reason: reason))
                return
            }
        }
        guard let group, avahi_entry_group_is_empty(group) != 0 else { return }
        let services = advertisement.services(deviceName: deviceName)
        do {
            if let host {
                var address = AvahiAddress()
                guard avahi_address_parse(host.address, AvahiProtocol(AVAHI_PROTO_UNSPEC), &address) != nil else {
                    throw AvahiError(code: AVAHI_ERR_INVALID_ADDRESS, operation: "address \(host.address)")
                }
                // No reverse (PTR) record: the address may also be the box's own, whose reverse avahi publishes.
                try forEachInterface { interface in
                    try checkAvahi(avahi_entry_group_add_address(
                        group, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(AVAHI_PUBLISH_NO_REVERSE.rawValue),
                        host.name, &address), "add address \(host.name)")
                }
            }
            for service in services {
                try forEachInterface { interface in
                    let list = makeStringList(service.txt)
                    defer { avahi_string_list_free(list) }
                    try checkAvahi(avahi_entry_group_add_service_strlst(
                        group, interface, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                        service.name, service.type, nil, host?.name, service.port, list), "add \(service.type)")
                }
            }
            try checkAvahi(avahi_entry_group_commit(group), "commit services")
            registered = services
            logger.info("mDNS services registering", metadata: [
                "mdns.name": "\(deviceName)", "mdns.types": "\(services.map(\.type).joined(separator: ","))",
            ])
            onEvent(.registering(deviceName: deviceName))
        } catch let error as AvahiError where error.code == AVAHI_ERR_COLLISION {
            rename()
        } catch {
            logger.error("mDNS registration failed", metadata: ["error": "\(error)"])
            onEvent(.failed(reason: "\(error)"))
            avahi_entry_group_reset(group)
            registered = []
        }
    }

    private func groupChanged(_ changedGroup: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            logger.info("mDNS services established", metadata: ["mdns.name": "\(deviceName)"])
            onEvent(.established(deviceName: deviceName))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
        case AVAHI_ENTRY_GROUP_FAILURE:
            let code = avahi_client_errno(avahi_entry_group_get_client(changedGroup))
            let reason = String(cString: avahi_strerror(code))
            logger.error("mDNS entry group failed", metadata: ["mdns.reason": "\(reason)"])
            onEvent(.failed(reason: reason))
        default:
            break
        }
    }

    /// Takes the alternative name Avahi proposes (`Name #2`, …) for the whole device.
    private func rename() {
        guard let alternative = avahi_alternative_service_name(deviceName) else { return }
        let newName = String(cString: alternative)
        avahi_free(alternative)
        logger.warning("mDNS name collision; publishing under the alternative name",
                       metadata: ["mdns.name": "\(deviceName)", "mdns.newName": "\(newName)"])
        onEvent(.renamed(from: deviceName, to: newName))
        deviceName = newName
        if let group { avahi_entry_group_reset(group) }
        registered = []
        register()
    }

    private func forEachInterface(_ body: (AvahiIfIndex) throws -> Void) throws {
        if interfaceIndexes.isEmpty {
            try body(AvahiIfIndex(AVAHI_IF_UNSPEC))
        } else {
            for index in interfaceIndexes { try body(AvahiIfIndex(index)) }
        }
    }
}
