import AirPlayMedia
import AirPlayNowPlaying
internal import CGio
import Glibc
import Logging
import NIOConcurrencyHelpers
import LinuxIO

/// What a D-Bus object does with the calls it gets, on the service's thread.
protocol DBusObjectHandler: AnyObject, Sendable {
    /// A method call; answer it through `DBusService.reply` or `fail`, now or later.
    func call(interface: String, method: String, parameters: OpaquePointer?, invocation: OpaquePointer)
    /// A property's value, or nil for an unknown one.
    func property(interface: String, name: String) -> DBusValue?
    /// A property write; nil when taken, else why not.
    func setProperty(interface: String, name: String, value: OpaquePointer?) -> String?
}

/// Which bus.
public enum DBusBus: String, Sendable {
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket).
    case system
    /// The session bus (`DBUS_SESSION_BUS_ADDRESS`).
    case session
}

/// One name on a bus with the objects under it, served by GDBus on a thread of its own (a
/// GLib main context pushed there, so every call arrives on it). When the bus is not there or
/// goes away (dbus-daemon restarts), it connects again every 2 s and registers everything anew.
final class DBusService: @unchecked Sendable {
    private let bus: DBusBus
    private let name: String
    private let xml: String
    private let objectPath: String
    private let handler: any DBusObjectHandler
    private let logger: Logger
    // Touched on the service's thread, except `connection` (read under the lock for signals).
    private let connection = NIOLockedValueBox<OpaquePointer?>(nil)
    private let stopped = NIOLockedValueBox(false)
    private let context: OpaquePointer
    private var trampoline: UnsafeMutablePointer<cairplay_dbus_object>?

    /// Serves `handler` at `objectPath` under `name`, with the interfaces in `xml`.
    init(bus: DBusBus, name: String, objectPath: String, introspection xml: String, handler: any DBusObjectHandler, logger: Logger) {
        self.bus = bus
        self.name = name
        self.xml = xml
        self.objectPath = objectPath
        self.handler = handler
        self.logger = logger
        context = g_main_context_new()
        DedicatedThread.start(name: "dbus") { [self] in run() }
    }

    deinit { g_main_context_unref(context) }

    /// Whether the name is held on a live connection now.
    var isConnected: Bool { connection.withLockedValue { $0 != nil } }

    /// Leaves the bus.
    func stop() {
        stopped.withLockedValue { $0 = true }
        g_main_context_wakeup(context)
    }

    /// Emits a signal on the object (from any thread); nothing when not connected.
    func emit(interface: String, signal: String, parameters: OpaquePointer) {
        let parameters = g_variant_ref_sink(parameters)
        defer { g_variant_unref(parameters) }
        connection.withLockedValue { connection in
            guard let connection else { return }
            g_dbus_connection_emit_signal(connection, nil, objectPath, interface, signal, parameters, nil)
        }
    }

    /// Answers a method call with no return value (from any thread).
    static func reply(_ invocation: OpaquePointer) { g_dbus_method_invocation_return_value(invocation, nil) }

    /// Fails a method call with a D-Bus error (from any thread).
    static func fail(_ invocation: OpaquePointer, name: String = "org.mpris.MediaPlayer2.airplayd.Error", _ message: String) {
        cairplay_dbus_fail(invocation, name, message)
    }

    // MARK: The service's thread

    private func run() {
        g_main_context_push_thread_default(context)
        defer { g_main_context_pop_thread_default(context) }
        var waitingLogged = false
        while !stopped.withLockedValue({ $0 }) {
            switch connect() {
            case .success(let live):
                waitingLogged = false
                logger.info("D-Bus name owned", metadata: ["dbus.name": "\(name)", "dbus.bus": "\(bus.rawValue)"])
                connection.withLockedValue { $0 = live }
                while !stopped.withLockedValue({ $0 }), g_dbus_connection_is_closed(live) == 0 {
                    g_main_context_iteration(context, 1)
                }
                connection.withLockedValue { $0 = nil }
                if g_dbus_connection_is_closed(live) != 0 {
                    logger.warning("D-Bus connection lost; connecting again", metadata: ["dbus.bus": "\(bus.rawValue)"])
                } else {
                    g_dbus_connection_close_sync(live, nil, nil)
                }
                g_object_unref(UnsafeMutableRawPointer(live))
            case .failure(let reason):
                if !waitingLogged {
                    logger.warning("D-Bus unavailable; retrying every 2 s", metadata: ["dbus.bus": "\(bus.rawValue)", "reason": "\(reason)"])
                    waitingLogged = true
                }
                // Wait 2 s, or less when told to stop.
                for _ in 0..<20 where !stopped.withLockedValue({ $0 }) { usleep(100_000) }
            }
        }
        if let trampoline { trampoline.deallocate() }
    }

    private enum Outcome { case success(OpaquePointer), failure(String) }

    /// Connects, registers the object's interfaces and takes the name.
    private func connect() -> Outcome {
        var error: UnsafeMutablePointer<GError>?
        guard let address = g_dbus_address_get_for_bus_sync(bus == .system ? G_BUS_TYPE_SYSTEM : G_BUS_TYPE_SESSION, nil, &error) else {
            return .failure(Self.take(&error))
        }
        defer { g_free(address) }
        let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
            | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let live = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error) else {
            return .failure(Self.take(&error))
        }
        g_dbus_connection_set_exit_on_close(live, 0)
        if let problem = register(on: live) ?? requestName(on: live) {
            g_dbus_connection_close_sync(live, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(live))
            return .failure(problem)
        }
        return .success(live)
    }

    private func register(on live: OpaquePointer) -> String? {
        var error: UnsafeMutablePointer<GError>?
        guard let node = g_dbus_node_info_new_for_xml(xml, &error) else { return Self.take(&error) }
        defer { g_dbus_node_info_unref(node) }
        if trampoline == nil {
            let object = UnsafeMutablePointer<cairplay_dbus_object>.allocate(capacity: 1)
            object.initialize(to: cairplay_dbus_object())
            object.pointee.user_data = Unmanaged.passUnretained(self).toOpaque()
            object.pointee.method = { interface, method, parameters, invocation, user in
                let service = Unmanaged<DBusService>.fromOpaque(user!).takeUnretainedValue()
                service.handler.call(interface: String(cString: interface!), method: String(cString: method!),
                                     parameters: parameters, invocation: invocation!)
            }
            object.pointee.get = { interface, property, user in
                let service = Unmanaged<DBusService>.fromOpaque(user!).takeUnretainedValue()
                return service.handler.property(interface: String(cString: interface!), name: String(cString: property!))
                    .map(GVariantConversion.variant)
            }
            object.pointee.set = { interface, property, value, error, user in
                let service = Unmanaged<DBusService>.fromOpaque(user!).takeUnretainedValue()
                guard let refusal = service.handler.setProperty(interface: String(cString: interface!), name: String(cString: property!),
                                                                value: value) else { return 1 }
                cairplay_dbus_set_error(error, refusal)
                return 0
            }
            trampoline = object
        }
        var index = 0
        while let interface = node.pointee.interfaces?[index] {
            index += 1
            guard cairplay_dbus_register(live, objectPath, interface, trampoline, &error) != 0 else { return Self.take(&error) }
        }
        return nil
    }

    /// `RequestName` with DO_NOT_QUEUE: another owner means another daemon is this one.
    private func requestName(on live: OpaquePointer) -> String? {
        var error: UnsafeMutablePointer<GError>?
        let arguments = GVariantConversion.tuple([g_variant_new_string(name), g_variant_new_uint32(4)])
        guard let reply = g_dbus_connection_call_sync(live, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                      "RequestName", arguments, g_variant_type_checked_("(u)"), G_DBUS_CALL_FLAGS_NONE,
                                                      5000, nil, &error) else {
            return Self.take(&error)
        }
        defer { g_variant_unref(reply) }
        let child = g_variant_get_child_value(reply, 0)
        defer { g_variant_unref(child) }
        let result = g_variant_get_uint32(child)
        return result == 1 || result == 4 ? nil : "the name \(name) is owned by another program"
    }

    /// The message of a GError, freeing it.
    private static func take(_ error: inout UnsafeMutablePointer<GError>?) -> String {
        defer { g_clear_error(&error) }
        return error.map { String(cString: $0.pointee.message) } ?? "unknown error"
    }
}
