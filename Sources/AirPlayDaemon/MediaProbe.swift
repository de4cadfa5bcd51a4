import AirPlayHLSGateway
import AirPlayReceiver
import FoundationEssentials
import GStreamerMedia

/// What the installed GStreamer can do, asked once in a child process (`airplayd
/// --probe-media`), so that the daemon itself initialises GStreamer only when a session needs
/// it: GStreamer's registry, its plugins and the sinks they load cost an idle box most of its
/// memory, and the capabilities published in the TXT records must still tell the truth.
package struct MediaProbe: Codable, Hashable, Sendable {
    /// `GStreamer 1.22.0`.
    var version: String
    /// Element factories asked about, and whether each is installed.
    var elements: [String: Bool]
    /// Sink descriptions checked.
    var checkedSinks: [String]
    /// Why a checked sink failed to build (absent: it builds).
    var sinkErrors: [String: String]

    /// Every element the engine asks about: players, demuxers and each decoder HLS variants may need.
    static let elementNames: [String] = Array(Set(["playbin", "hlsdemux", "hlsdemux2", "avdec_aac"]
        + VariantPolicy.decoders.values.flatMap { $0 })).sorted()

    /// Asks this process's GStreamer (initialising it): what the child does.
    package static func here(sinks: [String]) -> MediaProbe {
        var errors: [String: String] = [:]
        for sink in sinks {
            do {
                try PlaybinPlayer.checkSink(sink)
            } catch {
                errors[sink] = error.message
            }
        }
        return MediaProbe(version: GStreamerRuntime.version,
                          elements: Dictionary(uniqueKeysWithValues: elementNames.map { ($0, GStreamerRuntime.hasElement($0)) }),
                          checkedSinks: sinks, sinkErrors: errors)
    }

    /// Runs `airplayd --probe-media` and reads its answer; nil when the child could not be run
    /// or did not answer within 30 s (the caller then asks in-process).
    static func inChild(sinks: [String]) -> MediaProbe? {
        // This very binary, whatever path or name it was started by.
        guard let output = ChildProcess.output(of: "/proc/self/exe", arguments: ["--probe-media"] + sinks.flatMap { ["--probe-sink", $0] },
                                               timeout: 30) else { return nil }
        return try? JSONDecoder().decode(MediaProbe.self, from: Data(output))
    }

    /// The probe as the child prints it.
    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }
}
