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
            "-n", "-F", directory + "/default.pa", "--daemonize=no", "--exit-idle-time=-1", "--log-target=stderr",
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
    public func play(_ wav: String, port: Int, encryption: String, timeout: Double = 60) throws -> CommandResult {
        let load = try runCommand(try Self.path("pactl"), [
            "load-module", "module-raop-sink", "server=127.0.0.1:\(port)", "protocol=UDP", "encryption=\(encryption)",
            "codec=ALAC", "sink_name=raop",
        ], environment: environment, timeout: 10)
        guard load.status == 0 else { throw TestHostError("module-raop-sink: \(load.stderr)") }
        let module = load.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let played = try runCommand(try Self.path("paplay"), ["-d", "raop", wav], environment: environment, timeout: timeout)
        _ = try runCommand(try Self.path("pactl"), ["unload-module", module], environment: environment, timeout: 10)
        return played
    }

    /// The daemon's log so far.
    public var log: String { daemon.stderr }

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
