import Foundation

/// PulseAudio's `module-raop-sink` (Debian's pulseaudio 16.1 with pulseaudio-module-raop) as a
/// RAOP sender: a private `pulseaudio` with its own runtime directories (no system or user
/// daemon is touched, nothing is announced), a sink pointed at a receiver, and `paplay`.
public final class PulseAudioRAOPSender: @unchecked Sendable {
    private let directory: String
    private let daemon: ManagedProcess
    private let environment: [String: String]

    /// Starts the private PulseAudio; throws when it or its RAOP module is missing.
    public init() throws {
        try TestHost.require(["pulseaudio", "pactl", "paplay"])
        directory = Products.scratchDirectory("pulse")
        let runtime = directory + "/xdg"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        environment = ["XDG_RUNTIME_DIR": runtime, "PULSE_RUNTIME_PATH": directory + "/pulse", "HOME": directory,
                       "XDG_CONFIG_HOME": directory + "/config", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]
        // A null sink keeps the daemon's clock running; only the native protocol is loaded.
        let script = "load-module module-null-sink sink_name=idle\nload-module module-native-protocol-unix\n"
        try script.write(toFile: directory + "/default.pa", atomically: true, encoding: .utf8)
        daemon = try ManagedProcess(try Self.path("pulseaudio"), [
            "-n", "-F", directory + "/default.pa", "--daemonize=no", "--exit-idle-time=-1", "--log-target=stderr", "-v",
        ], environment: environment, directory: directory, label: "pulseaudio")
        let ready = poll(timeout: 10) { FileManager.default.fileExists(atPath: self.directory + "/pulse/native") || !self.daemon.isRunning }
        guard ready, daemon.isRunning else { throw TestHostError("pulseaudio did not start: \(daemon.stderr)") }
    }

    deinit {
        daemon.stop(grace: 2)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Plays a WAV file to the receiver at 127.0.0.1:`port` with `encryption` (`RSA` or `none`)
    /// and ALAC, then unloads the sink (which ends the RTSP session). Returns paplay's result.
    /// `sinkReady` tells when the receiver has answered the sink's first OPTIONS: a stream
    /// started before that can leave the sink waiting for ever.
    public func play(_ wav: String, port: Int, encryption: String, timeout: Double = 60,
                     sinkReady: () -> Bool = { true }) throws -> CommandResult {
        let load = try runCommand(try Self.path("pactl"), [
            "load-module", "module-raop-sink", "server=127.0.0.1:\(port)", "protocol=UDP", "encryption=\(encryption)",
            "codec=ALAC", "sink_name=raop",
        ], environment: environment, timeout: 10)
        guard load.status == 0 else { throw TestHostError("module-raop-sink: \(load.stderr)") }
        let module = load.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard poll(timeout: 10, sinkReady) else { throw TestHostError("the RAOP sink never asked the receiver for OPTIONS") }
        Thread.sleep(forTimeInterval: 0.5)
        // 50 ms of buffer, as a desktop's players ask for, not paplay's 2 s: PulseAudio's sink
        // connects only when the stream starts, and 2 s of the file queued as messages to its I/O
        // thread left that thread behind its RTSP side (see `abortedOnItsOwnRace`: it aborted
        // in about one play of four here; with 50 ms, in none of 18).
        let played = try runCommand(try Self.path("paplay"), ["-d", "raop", "--latency-msec=50", wav], environment: environment, timeout: timeout)
        _ = try runCommand(try Self.path("pactl"), ["unload-module", module], environment: environment, timeout: 10)
        return played
    }

    /// The daemon's log so far.
    public var log: String { daemon.stderr }

    /// Whether the RAOP sink aborted on PulseAudio 16.1's own race: its I/O thread handles one
    /// queued message a turn and checks whether the RTSP side is recording after each, so with
    /// the client's audio queued ahead of the message that registers the stream's sockets, a
    /// receiver that answers SETUP and RECORD at once (loopback) makes `raop-sink.c` assert on
    /// the poll item not yet made.
    public var abortedOnItsOwnRace: Bool { log.contains("Assertion 'pollfd' failed") }

    static func path(_ program: String) throws -> String {
        guard let path = TestHost.which(program) else { throw TestHostError("\(program) is missing: tools/setup-deps --test installs it") }
        return path
    }
}

/// A sweep with silence around it, as a WAV file: Linux senders lose their first ~70 ms while
/// they start, so 1.5 s of silence goes in front and 3 s behind.
public enum PaddedSweep {
    /// Writes `silence(1.5 s) + wav + silence(3 s)` next to `wav` and returns its path.
    public static func make(from wav: String) throws -> String {
        guard let ffmpeg = TestHost.which("ffmpeg") else { throw TestHostError("ffmpeg is missing") }
        let padded = (wav as NSString).deletingPathExtension + "-padded.wav"
        let result = try runCommand(ffmpeg, [
            "-loglevel", "error", "-y", "-i", wav, "-af", "adelay=1500|1500,apad=pad_dur=3", "-c:a", "pcm_s16le", padded,
        ], timeout: 60)
        guard result.status == 0 else { throw TestHostError("ffmpeg: \(result.stderr)") }
        return padded
    }
}

/// PipeWire's `libpipewire-module-raop-sink` (Debian's pipewire 0.3.65) as a RAOP sender: a
/// private `pipewire` with no session manager, no D-Bus and a dummy driver, whose RAOP sink
/// points at one receiver; `pw-play` is linked to it by hand with `pw-link`.
///
/// What it takes, found the hard way: `module-access` (without it every client waits for
/// permissions that never come), `adapter.auto-port-config` on both nodes (no session manager
/// makes ports), and a 352-frame quantum (0.3.65 otherwise rounds the sink's packets to 256
/// frames and sends them in bursts). The sink only connects to the receiver once audio flows.
public final class PipeWireRAOPSender: @unchecked Sendable {
    /// The modules a private PipeWire server needs for clients to play into nodes it creates
    /// (lines of a `context.modules` list): the native protocol, access, client and adapter
    /// nodes, node factories, metadata and links.
    public static let coreModules = """
        { name = libpipewire-module-protocol-native }
        { name = libpipewire-module-access args = { } }
        { name = libpipewire-module-client-node }
        { name = libpipewire-module-adapter }
        { name = libpipewire-module-spa-node-factory }
        { name = libpipewire-module-metadata }
        { name = libpipewire-module-link-factory }
        """

    private let directory: String
    private let daemon: ManagedProcess
    private let environment: [String: String]
    private static let sink = "raop_sink"
    private static let autoPorts = "{ mode = dsp monitor = false control = false position = preserve }"

    /// Starts the private PipeWire with its sink aimed at 127.0.0.1:`port`, encrypting with
    /// `encryption` (`RSA` or `none`); returns once the sink's ports exist.
    public init(port: Int, encryption: String) throws {
        try TestHost.require(["pipewire", "pw-play", "pw-link"])
        directory = Products.scratchDirectory("pipewire")
        let runtime = directory + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment = ["XDG_RUNTIME_DIR": runtime, "PIPEWIRE_RUNTIME_DIR": runtime, "DBUS_SESSION_BUS_ADDRESS": "disabled:",
                       "DBUS_SYSTEM_BUS_ADDRESS": "disabled:", "HOME": directory]
        let config = """
            context.properties = {
                core.daemon = true
                core.name = pipewire-0
                support.dbus = false
                default.clock.rate = 44100
                default.clock.allowed-rates = [ 44100 ]
                default.clock.quantum = 352
                default.clock.min-quantum = 352
                default.clock.max-quantum = 352
                clock.power-of-two-quantum = false
            }
            context.spa-libs = {
                audio.convert.* = audioconvert/libspa-audioconvert
                support.* = support/libspa-support
            }
            context.modules = [
                { name = libpipewire-module-rt args = { nice.level = -11 rt.prio = 88 } flags = [ ifexists nofail ] }
                \(PipeWireRAOPSender.coreModules)
                { name = libpipewire-module-raop-sink
                  args = {
                      raop.hostname = "127.0.0.1"
                      raop.port = \(port)
                      raop.transport = "udp"
                      raop.encryption.type = "\(encryption)"
                      raop.audio.codec = "ALAC"
                      stream.props = { node.name = "\(Self.sink)" media.class = "Audio/Sink" adapter.auto-port-config = \(Self.autoPorts) }
                  }
                }
            ]
            context.objects = [
                { factory = spa-node-factory
                  args = { factory.name = support.node.driver node.name = Dummy-Driver node.group = pipewire.dummy priority.driver = 20000 } }
            ]
            """
        // A file name of its own: no drop-in directory under /etc or /usr applies to it.
        let path = directory + "/airplay-test-raop.conf"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        daemon = try ManagedProcess(try PulseAudioRAOPSender.path("pipewire"), ["-c", path], environment: environment,
                                    directory: directory, label: "pipewire")
        guard poll(timeout: 10, interval: 0.1, { self.ports(inputs: true, of: Self.sink).count >= 2 || !self.daemon.isRunning }),
              daemon.isRunning else {
            throw TestHostError("pipewire's RAOP sink did not appear: \(daemon.stderr.suffix(2000))")
        }
    }

    deinit {
        daemon.stop(grace: 3)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The log so far.
    public var log: String { daemon.stderr }

    /// The input (or output) ports of a node, as `pw-link` names them.
    private func ports(inputs: Bool, of node: String) -> [String] {
        guard let link = try? PulseAudioRAOPSender.path("pw-link"),
              let result = try? runCommand(link, [inputs ? "-i" : "-o"], environment: environment, timeout: 5) else { return [] }
        return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix(node + ":") }
    }

    /// Plays a WAV file through the sink to its end (left to left, right to right).
    public func play(_ wav: String, timeout: Double = 60) throws {
        let name = "raop_test_play"
        let player = try ManagedProcess(try PulseAudioRAOPSender.path("pw-play"), [
            "--target", "0", "-P", "{ node.name = \(name) node.autoconnect = false adapter.auto-port-config = \(Self.autoPorts) }", wav,
        ], environment: environment, directory: directory, label: "pw-play")
        guard poll(timeout: 10, interval: 0.1, { self.ports(inputs: false, of: name).count >= 2 || !player.isRunning }) else {
            throw TestHostError("pw-play's ports did not appear: \(player.stderr)")
        }
        let link = try PulseAudioRAOPSender.path("pw-link")
        for port in ports(inputs: false, of: name) {
            let channel = port.split(separator: "_").last.map(String.init) ?? ""
            let result = try runCommand(link, [port, "\(Self.sink):playback_\(channel)"], environment: environment, timeout: 5)
            guard result.status == 0 else { throw TestHostError("pw-link \(port): \(result.stderr)") }
        }
        guard let status = player.waitForExit(timeout: timeout) else {
            player.stop()
            throw TestHostError("pw-play did not finish in \(timeout) s")
        }
        guard status == 0 else { throw TestHostError("pw-play exited with \(status): \(player.stderr)") }
    }
}
