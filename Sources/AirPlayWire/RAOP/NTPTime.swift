import FoundationEssentials
import Glibc

/// NTP timestamps as RAOP carries them: 32.32 fixed point, seconds since 1900.
public enum NTPTime {
    /// Seconds between the NTP era (1900) and the Unix epoch (1970).
    public static let unixOffset: Double = 2_208_988_800

    /// A timestamp as seconds.
    public static func seconds(_ ntp: UInt64) -> Double { Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296 }

    /// Seconds as a timestamp.
    public static func timestamp(_ seconds: Double) -> UInt64 {
        let whole = seconds.rounded(.down)
        return UInt64(whole) << 32 | UInt64((seconds - whole) * 4_294_967_296)
    }

    /// The wall clock now, in NTP seconds.
    public static func wallClock() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + unixOffset + Double(time.tv_nsec) / 1e9
    }
}

/// IP addresses as the bytes RAOP signs (`Apple-Response`): 4 for IPv4, also written as
/// IPv4-mapped IPv6, else 16; empty for text that is no address.
public enum IPAddressBytes {
    /// An IPv4-mapped IPv6 address (`::ffff:10.0.0.5`) as plain IPv4, so either form names one
    /// host; any other text as it is.
    public static func plain(_ text: String) -> String {
        text.hasPrefix("::ffff:") && text.contains(".") ? String(text.dropFirst(7)) : text
    }

    /// The host an address names, for comparing addresses in text from different sources (a
    /// sender's `timingPeerInfo`, a datagram's source): IPv4-mapped IPv6 as IPv4, an IPv6 scope
    /// (`%eth0`) dropped and IPv6 in its canonical form (`FE80:0::1` is `fe80::1`); any other
    /// text as it is.
    public static func host(_ text: String) -> String {
        let address = plain(String(text.prefix { $0 != "%" }))
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        var canonical = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &v6, &canonical, socklen_t(canonical.count)) != nil else { return address }
        return plain(String(decoding: canonical.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The bytes of an address in text form.
    public static func of(_ text: String) -> [UInt8] {
        let address = plain(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return []
    }
}
