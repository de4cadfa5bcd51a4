import AirPlayWire

/// Whose PTP clock an AirPlay 2 receiver's session is timed by: ours (the sender's grandmaster,
/// what every receiver tried here follows), or the receiver's own.
///
/// A standalone HomePod on HomePod OS 27 (not in a stereo pair, not in a home theatre with an
/// Apple TV) keeps announcing its own grandmaster with priority1 248 whatever the sender
/// serves, and renders nothing on the sender's timeline; once the sender stops offering a clock
/// it sends the sender its own Syncs about 8 times a second, and plays on that clock (Music
/// Assistant's airplay-cli, September 2026). Grouped and paired HomePods follow the sender.
public enum ReceiverClockRule {
    /// Who keeps the time.
    public enum Role: String, Sendable {
        /// The sender serves its grandmaster and the receiver follows it.
        case sender
        /// The sender follows the receiver's clock.
        case receiver
    }

    /// The first HomePod OS that insists on its own clock, and the AirPlay version it ships
    /// (what a record without an OS version is judged by).
    static let (firstInsistingOS, firstInsistingSourceVersion) = (27, 980)

    /// The role the `_airplay._tcp` record implies: the receiver's own clock for a standalone
    /// HomePod on OS 27 or later (`model` or `am` AudioAccessory…, `igl=1`, no `pgid`, no
    /// `tsid`; `osvers` or `ov` 27 or more, else `srcvers` or `vs` 980 or more), ours for
    /// everything else, and for a receiver without a record (HOST:PORT).
    public static func role(airPlayTXT txt: TXTRecord?) -> Role {
        guard let txt, let model = txt["model"] ?? txt["am"], model.hasPrefix("AudioAccessory") else { return .sender }
        // `igl`: the receiver is its own group leader; `pgid`: a group it belongs to (an Apple
        // TV's); `tsid`: the stereo pair it is half of.
        guard txt["igl"]?.hasPrefix("1") == true, txt["pgid"] == nil, txt["tsid"] == nil else { return .sender }
        func major(_ keys: String...) -> Int? {
            keys.lazy.compactMap { txt[$0] }.first?.split(separator: ".").first.flatMap { Int($0) }
        }
        if let os = major("osvers", "ov") { return os >= firstInsistingOS ? .receiver : .sender }
        guard let version = major("srcvers", "vs") else { return .sender }
        return version >= firstInsistingSourceVersion ? .receiver : .sender
    }
}
