import AirPlaySender
import Glibc

/// Whether a TCP port takes a connection, told apart the way a diagnosis needs: refused at once
/// (nothing listens), no answer (a firewall drops it), or no route or name at all.
public enum TCPProbe {
    /// Tries `host`:`port` for at most `timeout` seconds; blocks the caller meanwhile.
    public static func probe(host: String, port: Int, timeout: Double) -> DoctorObservations.Reach {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .unreachable("\(host) does not resolve (\(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(list) }
        let descriptor = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .unreachable("no socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        if connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return .answered }
        guard errno == EINPROGRESS else { return outcome(of: errno) }
        var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&waiting, 1, Int32(max(1, timeout * 1000)))
        guard ready > 0 else { return .noAnswer(seconds: timeout) }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0 ? .answered : outcome(of: error)
    }

    static func outcome(of error: Int32) -> DoctorObservations.Reach {
        switch error {
        case ECONNREFUSED: .refused
        case ETIMEDOUT: .noAnswer(seconds: 0)
        default: .unreachable(String(cString: strerror(error)))
        }
    }
}
