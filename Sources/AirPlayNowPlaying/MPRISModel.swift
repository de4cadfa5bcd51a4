import AirPlayWire

/// A D-Bus value as MPRIS properties need them; the D-Bus wrapper turns it into a GVariant.
public indirect enum DBusValue: Hashable, Sendable {
    /// `s`
    case string(String)
    /// `o`
    case objectPath(String)
    /// `x`
    case int64(Int64)
    /// `d`
    case double(Double)
    /// `b`
    case bool(Bool)
    /// `as`
    case strings([String])
    /// `a{sv}`
    case dictionary([String: DBusValue])
}

/// What MPRIS 2 shows of the now-playing state, and what its methods ask for: pure, so the
/// property values, the change signals and the commands are tested without a bus.
public enum MPRISModel {
    /// The object path every MPRIS player is at.
    public static let objectPath = "/org/mpris/MediaPlayer2"
    /// The root interface.
    public static let rootInterface = "org.mpris.MediaPlayer2"
    /// The player interface.
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// The track id of "no track" (MPRIS's reserved path).
    public static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    /// The bus name: `org.mpris.MediaPlayer2.airplayd`, with `.instance` when several daemons run.
    public static func busName(instance: String?) -> String {
        let suffix = instance.map { "." + Self.busNameElement($0) } ?? ""
        return "org.mpris.MediaPlayer2.airplayd" + suffix
    }

    /// Introspection of both interfaces, as GDBus registers them.
    public static let introspection = """
    <node>
      <interface name="org.mpris.MediaPlayer2">
        <method name="Raise"/>
        <method name="Quit"/>
        <property name="CanQuit" type="b" access="read"/>
        <property name="CanRaise" type="b" access="read"/>
        <property name="HasTrackList" type="b" access="read"/>
        <property name="Identity" type="s" access="read"/>
        <property name="SupportedUriSchemes" type="as" access="read"/>
        <property name="SupportedMimeTypes" type="as" access="read"/>
      </interface>
      <interface name="org.mpris.MediaPlayer2.Player">
        <method name="Next"/>
        <method name="Previous"/>
        <method name="Pause"/>
        <method name="PlayPause"/>
        <method name="Stop"/>
        <method name="Play"/>
        <method name="Seek"><arg direction="in" name="Offset" type="x"/></method>
        <method name="SetPosition"><arg direction="in" name="TrackId" type="o"/><arg direction="in" name="Position" type="x"/></method>
        <method name="OpenUri"><arg direction="in" name="Uri" type="s"/></method>
        <signal name="Seeked"><arg name="Position" type="x"/></signal>
        <property name="PlaybackStatus" type="s" access="read"/>
        <property name="Rate" type="d" access="readwrite"/>
        <property name="Metadata" type="a{sv}" access="read"/>
        <property name="Volume" type="d" access="readwrite"/>
        <property name="Position" type="x" access="read"/>
        <property name="MinimumRate" type="d" access="read"/>
        <property name="MaximumRate" type="d" access="read"/>
        <property name="CanGoNext" type="b" access="read"/>
        <property name="CanGoPrevious" type="b" access="read"/>
        <property name="CanPlay" type="b" access="read"/>
        <property name="CanPause" type="b" access="read"/>
        <property name="CanSeek" type="b" access="read"/>
        <property name="CanControl" type="b" access="read"/>
      </interface>
    </node>
    """

    /// The root interface's properties.
    public static func rootProperties(identity: String) -> [String: DBusValue] {
        ["CanQuit": .bool(false), "CanRaise": .bool(false), "HasTrackList": .bool(false), "Identity": .string(identity),
         "SupportedUriSchemes": .strings([]), "SupportedMimeTypes": .strings([])]
    }

    /// The player's properties for `state` at `now`; `artURL` is where the cover was written.
    /// What a session can do is told truthfully: an audio sender is controlled through AirPlay
    /// 2's event channel or DACP (play, pause, next, previous, volume; never seek; only what it
    /// said it takes, when it said), a video through the box's player (play, pause, seek; no
    /// next or previous).
    public static func playerProperties(_ state: NowPlayingState, now: Double, artURL: String?) -> [String: DBusValue] {
        let kind = state.sender?.kind
        let controllable = state.sender?.isControllable ?? false
        return [
            "PlaybackStatus": .string(state.sender == nil ? "Stopped" : (state.playback.rate != 0 ? "Playing" : "Paused")),
            "Rate": .double(1), "MinimumRate": .double(1), "MaximumRate": .double(1),
            "Metadata": .dictionary(metadata(state, artURL: artURL)),
            "Volume": .double(linearVolume(decibels: state.volumeDecibels)),
            "Position": .int64(microseconds(state.sender == nil ? 0 : state.playback.position(at: now))),
            "CanGoNext": .bool(kind == .audio && controllable && state.senderTakes(4)),
            "CanGoPrevious": .bool(kind == .audio && controllable && state.senderTakes(5)),
            "CanPlay": .bool(controllable && state.senderTakes(0)), "CanPause": .bool(controllable && state.senderTakes(1)),
            "CanSeek": .bool(kind == .video && state.playback.duration != nil),
            "CanControl": .bool(true),
        ]
    }

    /// `Metadata`: track id, text, length and cover.
    public static func metadata(_ state: NowPlayingState, artURL: String?) -> [String: DBusValue] {
        guard state.sender != nil else { return ["mpris:trackid": .objectPath(noTrack)] }
        var metadata: [String: DBusValue] = ["mpris:trackid": .objectPath(trackID(state.item.number))]
        if let title = state.item.title { metadata["xesam:title"] = .string(title) }
        if let artist = state.item.artist { metadata["xesam:artist"] = .strings([artist]) }
        if let album = state.item.album { metadata["xesam:album"] = .string(album) }
        if let genre = state.item.genre { metadata["xesam:genre"] = .strings([genre]) }
        if let duration = state.playback.duration { metadata["mpris:length"] = .int64(microseconds(duration)) }
        if let artURL, state.item.artwork != nil { metadata["mpris:artUrl"] = .string(artURL) }
        return metadata
    }

    /// The track id of item `number`.
    public static func trackID(_ number: Int) -> String { "/org/mpris/MediaPlayer2/airplayd/track/\(number)" }

    /// MPRIS volume (0...1) from AirPlay dB: linear over -30...0, as the sender's slider is; muted is 0.
    public static func linearVolume(decibels: Double?) -> Double {
        decibels.map(AirPlayVolume.linear) ?? 1
    }

    /// AirPlay dB from MPRIS volume; 0 mutes.
    public static func decibels(linearVolume volume: Double) -> Double { AirPlayVolume.decibels(linear: volume) }

    /// The properties that differ between two sets (Position is left out: MPRIS clients
    /// extrapolate it from the rate, and a jump is told by `Seeked`).
    public static func changed(from old: [String: DBusValue], to new: [String: DBusValue]) -> [String: DBusValue] {
        new.filter { $0.key != "Position" && old[$0.key] != $0.value }
    }

    /// Whether the position jumped (more than half a second off what playing on would give):
    /// MPRIS's `Seeked` signal.
    public static func seeked(from old: NowPlayingState, oldTime: Double, to new: NowPlayingState, now: Double) -> Bool {
        guard new.sender != nil, old.sender != nil, old.item.number == new.item.number else { return false }
        return abs(new.playback.position(at: now) - old.playback.position(at: now)) > 0.5
            && (old.playback.updatedAt != new.playback.updatedAt || oldTime != now)
    }

    /// The command a player method asks for; nil for methods that do nothing here (`Raise`,
    /// `Quit`) or are refused (`OpenUri`).
    public static func command(method: String, offsetMicroseconds: Int64? = nil) -> RemoteCommand? {
        switch method {
        case "Play": .play
        case "Pause": .pause
        case "PlayPause": .playPause
        case "Stop": .stop
        case "Next": .next
        case "Previous": .previous
        case "Seek": offsetMicroseconds.map { .seek(by: Double($0) / 1_000_000) }
        case "SetPosition": offsetMicroseconds.flatMap { $0 >= 0 ? .setPosition(Double($0) / 1_000_000) : nil }
        default: nil
        }
    }

    /// Seconds as MPRIS's microseconds: NaN as 0, and no further than a year of them, so a
    /// position a sender pushed out of range (a live stream has no duration to bound it) never
    /// traps on its way to an Int64.
    static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return seconds.isNaN ? 0 : (seconds > 0 ? maximumMicroseconds : -maximumMicroseconds) }
        return Int64((min(max(seconds * 1_000_000, -Double(maximumMicroseconds)), Double(maximumMicroseconds))).rounded())
    }

    /// The largest time `microseconds` gives: 2^53 µs (285 years), exact in a Double.
    static let maximumMicroseconds: Int64 = 1 << 53

    /// A bus name element: letters, digits and `_` (a leading digit gets a `_`).
    static func busNameElement(_ text: String) -> String {
        var element = String(text.unicodeScalars.map { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? Character($0) : "_" })
        if element.first?.isNumber ?? true { element = "_" + element }
        return element
    }
}
