import AirPlayTesting
import Foundation

/// A private PipeWire desktop playing to simulated cards, started as a desktop starts it: a
/// session bus of its own, `pipewire` with one ALSA sink node per card (`cardN`, the card its
/// graph's driver), and WirePlumber, which links each new stream to the sink it names. Nothing
/// is announced and no other daemon is touched: its runtime, configuration and bus live in the
/// cards' folder, and WirePlumber loads no device monitor (no real card is opened).
///
/// The rooms reach it through PipeWire's ALSA plugin (package pipewire-alsa), which Debian 12
/// will not install beside pulseaudio: `tools/setup-deps --test` unpacks it into the peers'
/// cache, and the rooms' ALSA configuration names it there with the package's own definition
/// of PCM `pipewire` (which is how airplayd finds the plugin, as on a desktop with it installed).
///
/// What it takes, found the hard way: WirePlumber 0.4 leaves at once without a session bus it
/// can reach, and its Bluetooth component needs logind (left out); the sim card takes
/// read/write access only (`api.alsa.disable-mmap`).
final class CardsPipeWire: CardSoundServer, @unchecked Sendable {
    /// What a room needs to reach it: `PIPEWIRE_RUNTIME_DIR`, and the cards' ALSA configuration
    /// with PipeWire's plugin in it.
    let environment: [String: String]
    private let bus: ManagedProcess
    private let pipewire: ManagedProcess
    private let wireplumber: ManagedProcess

    init(cards: SimulatedCards) throws {
        try TestHost.require(["dbus-daemon", "pipewire", "wireplumber"])
        let directory = cards.directory + "/pipewire"
        let runtime = directory + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let busAddress = "unix:path=" + directory + "/bus"
        let bus = try ManagedProcess(TestHost.which("dbus-daemon")!, ["--session", "--nofork", "--nopidfile", "--address=" + busAddress],
                                     directory: directory, label: "session-bus")
        self.bus = bus
        guard poll(timeout: 5, { FileManager.default.fileExists(atPath: directory + "/bus") || !bus.isRunning }), bus.isRunning else {
            throw TestHostError("dbus-daemon did not start: \(bus.stderr)")
        }
        let own = ["XDG_RUNTIME_DIR": runtime, "PIPEWIRE_RUNTIME_DIR": runtime, "HOME": directory,
                   "XDG_CONFIG_HOME": directory + "/config", "DBUS_SESSION_BUS_ADDRESS": busAddress,
                   "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"].merging(cards.environment) { $1 }
        let sinks = cards.ppm.indices.map { index in
            """
                { factory = adapter
                  args = { factory.name = api.alsa.pcm.sink node.name = card\(index) media.class = Audio/Sink
                           api.alsa.path = "card\(index)" api.alsa.disable-mmap = true
                           audio.format = S16LE audio.rate = 44100 audio.channels = 2 audio.position = [ FL FR ]
                           priority.driver = \(2000 - index) priority.session = \(2000 - index) } }
            """
        }.joined(separator: "\n")
        let server = """
            context.properties = { core.daemon = true core.name = pipewire-0 default.clock.rate = 44100 default.clock.allowed-rates = [ 44100 ] }
            context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert api.alsa.* = alsa/libspa-alsa support.* = support/libspa-support }
            context.modules = [
                \(PipeWireRAOPSender.coreModules)
                { name = libpipewire-module-session-manager }
            ]
            context.objects = [
            \(sinks)
            ]
            """
        // Only the session's own scripts: no device monitors beyond what the spa-libs allow
        // (none match), no Bluetooth.
        let manager = """
            context.properties = { log.level = 2 wireplumber.script-engine = lua-scripting }
            context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
            context.modules = [
                { name = libpipewire-module-protocol-native }
                { name = libpipewire-module-client-node }
                { name = libpipewire-module-adapter }
                { name = libpipewire-module-metadata }
                { name = libpipewire-module-session-manager }
            ]
            wireplumber.components = [
                { name = libwireplumber-module-lua-scripting, type = module }
                { name = main.lua, type = config/lua }
                { name = policy.lua, type = config/lua }
            ]
            """
        // File names of their own: no drop-in directory under /etc or /usr applies to them.
        try server.write(toFile: directory + "/airplay-test-cards.conf", atomically: true, encoding: .utf8)
        try manager.write(toFile: directory + "/airplay-test-session.conf", atomically: true, encoding: .utf8)
        let pipewire = try ManagedProcess(TestHost.which("pipewire")!, ["-c", directory + "/airplay-test-cards.conf"],
                                          environment: own, directory: directory, label: "pipewire")
        self.pipewire = pipewire
        let socket = runtime + "/pipewire-0"
        guard poll(timeout: 10, { FileManager.default.fileExists(atPath: socket) || !pipewire.isRunning }), pipewire.isRunning else {
            throw TestHostError("pipewire did not start: \(pipewire.stderr.suffix(2000))")
        }
        wireplumber = try ManagedProcess(TestHost.which("wireplumber")!, ["-c", directory + "/airplay-test-session.conf"],
                                         environment: own, directory: directory, label: "wireplumber")
        Thread.sleep(forTimeInterval: 1)   // wireplumber's second to take the cards, or to fail at it (nothing to poll for)
        guard wireplumber.isRunning else { throw TestHostError("wireplumber did not start: \(wireplumber.stderr.suffix(2000))") }
        environment = cards.environment.merging(["PIPEWIRE_RUNTIME_DIR": runtime, "XDG_RUNTIME_DIR": runtime, "HOME": directory,
                                                 "ALSA_CONFIG_PATH": try Self.alsaConfiguration(cards: cards, in: directory)]) { $1 }
    }

    /// Where `tools/setup-deps --test` unpacks the pipewire-alsa package.
    static var pluginRoot: String {
        (ProcessInfo.processInfo.environment["AIRPLAY_PEERS"] ?? "/var/cache/airplay-peers") + "/pipewire-alsa"
    }

    /// The cards' ALSA configuration, then the package's definition of PCM `pipewire`, then where
    /// its plugin lies (alsa-lib looks in its own folder otherwise).
    private static func alsaConfiguration(cards: SimulatedCards, in directory: String) throws -> String {
        let definition = pluginRoot + "/usr/share/alsa/alsa.conf.d/50-pipewire.conf"
        let plugins = (try? FileManager.default.contentsOfDirectory(atPath: pluginRoot + "/usr/lib"))?
            .map { pluginRoot + "/usr/lib/" + $0 + "/alsa-lib" }
            .first { FileManager.default.fileExists(atPath: $0 + "/libasound_module_pcm_pipewire.so") }
        guard FileManager.default.fileExists(atPath: definition), let plugins else {
            throw TestHostError("PipeWire's ALSA plugin is not at \(pluginRoot): tools/setup-deps --test unpacks it")
        }
        let pluginFile = directory + "/pipewire-plugin.conf"
        try "pcm_type.pipewire { lib \"\(plugins)/libasound_module_pcm_pipewire.so\" }\nctl_type.pipewire { lib \"\(plugins)/libasound_module_ctl_pipewire.so\" }\n"
            .write(toFile: pluginFile, atomically: true, encoding: .utf8)
        return [cards.environment["ALSA_CONFIG_PATH"] ?? "/usr/share/alsa/alsa.conf", definition, pluginFile].joined(separator: ":")
    }

    /// Stops it (its cards close and flush their records).
    func stop() {
        wireplumber.stop(grace: 2)
        pipewire.stop(grace: 3)
        bus.stop(grace: 1)
    }

    deinit { stop() }
}
