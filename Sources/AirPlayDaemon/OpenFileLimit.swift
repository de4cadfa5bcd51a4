import AirPlayReceiver
import Glibc
import Logging

/// The daemon's limit on open files, raised to what `max_connections` needs.
///
/// systemd starts services with a soft limit of 1024 (and a hard one far above): at
/// `max_connections = 1024` a full house of senders, plus the sessions' UDP sockets, the
/// pipelines' files and the bus, would run out, and accept would fail for everyone. The soft
/// limit is raised to the hard one (at most 65,536), as Go and nginx do for their servers.
package enum OpenFileLimit {
    /// Descriptors kept for everything but control connections (sessions, media, bus, logs).
    static let reserve = 256

    /// Raises the soft limit so `connections` control connections fit beside the reserve;
    /// logs what it did, and warns when even the hard limit is too low.
    package static func raise(toServe connections: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        let wanted = rlim_t(connections + reserve)
        guard limit.rlim_cur < 65_536 else { return }
        let target = min(limit.rlim_max, 65_536)
        if target > limit.rlim_cur {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 {
                logger.debug("open file limit raised", metadata: ["from": "\(limit.rlim_cur)", "to": "\(target)"])
                limit = raised
            }
        }
        if limit.rlim_cur < wanted {
            logger.warning("the open file limit is too low for max_connections", metadata: [
                "limit": "\(limit.rlim_cur)", "needed": "\(wanted)",
                "fix": "LimitNOFILE=\(wanted) in the service, or a lower max_connections",
            ])
        }
    }

    /// `RLIMIT_NOFILE` as the functions take it (Glibc imports it as an enum case on Linux).
    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)) }
}
