// swift-tools-version:6.0
import PackageDescription

/// The libFuzzer executables, one per parser (`tools/fuzz --list`). Their bodies live in the
/// main package's `AirPlayFuzzTargets`, where the unit tests also run the seeds and past
/// crashes; this package only wraps each in libFuzzer's driver. Build it through `tools/fuzz`,
/// which adds `-sanitize=fuzzer,address`.
let package = Package(
    name: "swift-airplay-fuzz",
    dependencies: [.package(name: "swift-airplay", path: "..")],
    targets: [
        .target(name: "FuzzDriver", dependencies: [.product(name: "AirPlayFuzzTargets", package: "swift-airplay")]),
        fuzzer("control-request"),
        fuzzer("sender-response"),
        fuzzer("sdp"),
        fuzzer("rtsp-transport"),
        fuzzer("raop-packet"),
        fuzzer("ptp"),
        fuzzer("dmap"),
        fuzzer("txt-record"),
        fuzzer("remote-command"),
        fuzzer("plist"),
        fuzzer("airplay2-setup"),
        fuzzer("rtsp-session"),
        fuzzer("play-request"),
        fuzzer("video-action"),
        fuzzer("config"),
        fuzzer("tlv8"),
        fuzzer("pair-setup"),
        fuzzer("pair-verify"),
        fuzzer("pairing-client"),
        fuzzer("encrypted-frames"),
        fuzzer("data-stream"),
        fuzzer("hls-playlist"),
        fuzzer("hls-attributes"),
        fuzzer("variant-qualifier"),
        fuzzer("alac"),
    ]
)

/// An executable `NAME` whose `main` hands the target `NAME` to libFuzzer. lld links it: gold
/// stops on the sanitizer runtime's symbols.
func fuzzer(_ name: String) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzDriver"], path: "Sources/\(name)",
                      linkerSettings: [.unsafeFlags(["-use-ld=lld"])])
}
