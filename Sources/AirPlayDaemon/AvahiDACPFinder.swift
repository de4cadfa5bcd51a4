import AirPlayDiscovery
import AirPlayWire

/// Finds senders' DACP services through avahi-daemon, for the remote control.
enum AvahiDACPFinder {
    /// Browses `_dacp._tcp` for up to 2 s for the service of `dacpID`.
    @Sendable static func find(dacpID: String) -> (port: UInt16, addresses: [String])? {
        let services = (try? AvahiBrowser().browse(types: ["_dacp._tcp"], timeoutSeconds: 2)) ?? []
        return services.first { DACPCommand.serviceMatches($0.name, dacpID: dacpID) }.map { ($0.port, $0.addresses) }
    }
}
