import AirPlayNowPlaying
internal import CGio
import FoundationEssentials
import Glibc
import Logging
import NIOConcurrencyHelpers

/// MPRIS 2 for the box: `org.mpris.MediaPlayer2.airplayd` on the system or session bus, so
/// `playerctl`, desktop widgets and home dashboards see what plays and control it. Properties
/// come from `MPRISModel`; a change is signalled (PropertiesChanged, and Seeked on a jump) as
/// the now-playing event arrives; methods become remote-control commands. Covers are written
/// to `STATE_DIR/now-playing/` for `mpris:artUrl`.
public final class MPRISService: NowPlayingSurface, DBusObjectHandler, @unchecked Sendable {
    private struct Shown {
        var properties: [String: DBusValue] = [:]
        var state = NowPlayingState()
        var time: Double = 0
        var artNumber: Int?
        var artURL: String?
    }

    private let nowPlaying: NowPlaying
    private let identity: String
    private let artDirectory: String
    private let logger: Logger
    private let shown = NIOLockedValueBox(Shown())
    private var service: DBusService?
    /// Signals emitted, for benchmarks.
    public let signalsEmitted = NIOLockedValueBox(0)

    /// Serves MPRIS for `nowPlaying` on `bus`; `instance` suffixes the bus name.
    public init(bus: DBusBus, instance: String?, identity: String, stateDirectory: String, nowPlaying: NowPlaying, logger: Logger) {
        self.nowPlaying = nowPlaying
        self.identity = identity
        self.logger = logger
        artDirectory = stateDirectory + "/now-playing"
        service = nil
        shown.withLockedValue { $0.properties = MPRISModel.playerProperties(NowPlayingState(), now: 0, artURL: nil) }
        service = DBusService(bus: bus, name: MPRISModel.busName(instance: instance), objectPath: MPRISModel.objectPath,
                              introspection: MPRISModel.introspection, handler: self, logger: logger)
    }

    deinit { service?.stop() }

    /// Whether the bus name is held now.
    public var isConnected: Bool { service?.isConnected ?? false }

    /// Leaves the bus.
    public func stop() { service?.stop() }

    // MARK: Now-playing events

    /// Signals the properties that changed, and a jump in position.
    public func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double) {
        let artURL = coverURL(for: state)
        let properties = MPRISModel.playerProperties(state, now: time, artURL: artURL)
        let (changed, seeked) = shown.withLockedValue { shown -> ([String: DBusValue], Bool) in
            let changed = MPRISModel.changed(from: shown.properties, to: properties)
            let seeked = MPRISModel.seeked(from: shown.state, oldTime: shown.time, to: state, now: time)
            shown = Shown(properties: properties, state: state, time: time, artNumber: state.item.artwork?.number, artURL: artURL)
            return (changed, seeked)
        }
        guard let service else { return }
        if !changed.isEmpty {
            service.emit(interface: "org.freedesktop.DBus.Properties", signal: "PropertiesChanged", parameters: GVariantConversion.tuple([
                g_variant_new_string(MPRISModel.playerInterface), GVariantConversion.dictionary(changed),
                g_variant_new_strv(nil, 0),
            ]))
            signalsEmitted.withLockedValue { $0 += 1 }
        }
        if seeked, case .int64(let position)? = properties["Position"] {
            service.emit(interface: MPRISModel.playerInterface, signal: "Seeked",
                         parameters: GVariantConversion.tuple([g_variant_new_int64(gint64(position))]))
        }
    }

    /// The cover's file URL, writing the file when the cover changed (the old one goes).
    private func coverURL(for state: NowPlayingState) -> String? {
        guard let artwork = state.item.artwork else { return nil }
        let (number, url) = shown.withLockedValue { ($0.artNumber, $0.artURL) }
        if number == artwork.number, let url { return url }
        let path = artDirectory + "/cover-\(artwork.number).\(artwork.fileExtension)"
        do {
            try FileManager.default.createDirectory(atPath: artDirectory, withIntermediateDirectories: true)
            for old in (try? FileManager.default.contentsOfDirectory(atPath: artDirectory)) ?? [] where old.hasPrefix("cover-") {
                unlink(artDirectory + "/" + old)
            }
            try Data(artwork.bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.warning("cover not written for MPRIS", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
        return "file://" + path
    }

    // MARK: D-Bus calls

    func call(interface: String, method: String, parameters: OpaquePointer?, invocation: OpaquePointer) {
        if interface == MPRISModel.rootInterface { return DBusService.reply(invocation) }  // Raise, Quit: nothing to do
        if method == "OpenUri" { return DBusService.fail(invocation, "airplayd plays what senders send; it opens no URIs") }
        if method == "SetPosition" {
            // MPRIS: a position for another track than the current one is ignored.
            let current = shown.withLockedValue { $0.state.item.number }
            if let child = parameters.flatMap({ g_variant_get_child_value($0, 0) }) {
                let path = String(cString: g_variant_get_string(child, nil))
                g_variant_unref(child)
                if path != MPRISModel.trackID(current) { return DBusService.reply(invocation) }
            }
        }
        let offset = GVariantConversion.int64(in: parameters, at: method == "SetPosition" ? 1 : 0)
        guard let command = MPRISModel.command(method: method, offsetMicroseconds: offset) else {
            return DBusService.fail(invocation, "\(method) is not supported")
        }
        // GDBus lets any thread answer an invocation; the answer comes when the command is done.
        let pending = PendingInvocation(pointer: invocation)
        nowPlaying.perform(command) { result in
            switch result {
            case .success: DBusService.reply(pending.pointer)
            case .failure(let error): DBusService.fail(pending.pointer, error.description)
            }
        }
    }

    func property(interface: String, name: String) -> DBusValue? {
        if interface == MPRISModel.rootInterface { return MPRISModel.rootProperties(identity: identity)[name] }
        let artURL = shown.withLockedValue { $0.artURL }
        return MPRISModel.playerProperties(nowPlaying.state, now: nowPlaying.now(), artURL: artURL)[name]
    }

    func setProperty(interface: String, name: String, value: OpaquePointer?) -> String? {
        switch name {
        case "Volume":
            guard let volume = GVariantConversion.double(value), volume.isFinite else { return "Volume takes a double" }
            // MPRIS gives no way to report a failure later: it is logged, and Volume stays as it was.
            let logger = self.logger
            nowPlaying.perform(.setVolume(decibels: MPRISModel.decibels(linearVolume: max(0, volume)))) { result in
                if case .failure(let error) = result { logger.notice("MPRIS volume not set", metadata: ["reason": "\(error)"]) }
            }
            return nil
        case "Rate":
            return GVariantConversion.double(value) == 1 ? nil : "only rate 1 is played"
        default:
            return "\(name) is read-only"
        }
    }
}

/// A method call waiting for its answer, handed to the thread that gives it.
private struct PendingInvocation: @unchecked Sendable {
    let pointer: OpaquePointer
}
