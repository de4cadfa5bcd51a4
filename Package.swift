// swift-tools-version:6.0
import PackageDescription

/// swift-airplay: `airplayd` (AirPlay receiver daemon for Linux) and `airplay` (sender CLI).
/// Module layout and dependency direction follow DESIGN.md: executables are thin, each C
/// library is imported by exactly one Swift module.
/// How the two programs link. lld packs the relative relocations (DT_RELR, glibc >= 2.36) that
/// gold writes as 2 MB of RELA entries the loader walks and dirties at every start, and only
/// the symbols the dynamic loader needs are exported (not all 16,000 of ours). Measured on the
/// idle daemon: 35.8 -> 32.1 MiB resident (BENCHMARKS.md).
let leanExecutable: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic"]),
]

/// GLib's, GIO's and GStreamer's headers (what pkg-config --cflags gives on Debian), without
/// their libraries: CGLibLazy opens those on the first call, so an idle box, or one playing
/// AirPlay audio to a file, never maps them (BENCHMARKS.md, issue 28).
#if arch(arm64)
let debianMultiarch = "aarch64-linux-gnu"
#else
let debianMultiarch = "x86_64-linux-gnu"
#endif
let glibIncludes = ["/usr/include/gstreamer-1.0", "/usr/include/glib-2.0", "/usr/lib/\(debianMultiarch)/glib-2.0/include",
                    "/usr/include/libmount", "/usr/include/blkid"]
let glibSwiftSettings: [SwiftSetting] = [.unsafeFlags(glibIncludes.flatMap { ["-Xcc", "-I" + $0] })]

let package = Package(
    name: "swift-airplay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "airplayd", targets: ["airplayd"]),
        .executable(name: "airplay", targets: ["airplay"]),
        // The parsers' fuzz bodies, for the nested fuzz package (Fuzz/), which builds one libFuzzer
        // executable per target with `-sanitize=fuzzer,address`.
        .library(name: "AirPlayFuzzTargets", targets: ["AirPlayFuzzTargets"]),
        // Test-only: the simulated sound card, an alsa-lib plugin a test's asoundrc loads by path
        // (its file name is what alsa-lib expects of a `type simcard` PCM).
        .library(name: "asound_module_pcm_simcard", type: .dynamic, targets: ["SimulatedSoundCard"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // C layer: system libraries found through pkg-config.
        // No pkgConfig: avahi-client.pc's only flag is -D_REENTRANT, which SwiftPM refuses with a
        // warning on every build; the headers are in /usr/include and the modulemap links.
        .systemLibrary(name: "CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(name: "CPlist", pkgConfig: "libplist-2.0",
                       providers: [.apt(["libplist-dev"])]),
        .systemLibrary(name: "CGStreamer", providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CGio", providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),

        // libcrypto and libmosquitto, opened on their first call rather than at exec (headers from
        // libssl-dev and libmosquitto-dev): an idle daemon maps neither, nor the libssl behind them.
        .target(name: "CLazyLink"),
        .target(name: "COpenSSL", dependencies: ["CLazyLink"]),
        .target(name: "CMosquitto", dependencies: ["CLazyLink"]),
        // GLib, GIO and GStreamer opened on first use (the headers come through CGStreamer and CGio).
        .target(name: "CGLibLazy", dependencies: ["CLazyLink"], cSettings: [.unsafeFlags(glibIncludes.map { "-I" + $0 })]),

        // libcurl, loaded on the first fetch rather than at start (its header from libcurl4-openssl-dev).
        .target(name: "CCurl"),

        // Linux calls the Glibc module hides (batched datagram reads, eventfd, thread names,
        // kernel time stamps, getrandom): the C shim, and LinuxIO, its only importer.
        .target(name: "CLinuxIO"),
        .target(name: "LinuxIO", dependencies: ["CLinuxIO"]),

        // Wrappers: the only importers of their C library.
        .target(name: "AirPlayPlist", dependencies: ["AirPlayWire", "CPlist"]),
        .target(name: "AirPlayCrypto", dependencies: ["COpenSSL", "LinuxIO"]),
        // HAP pairing: TLV8, pair-setup and pair-verify for both roles, the encrypted channel, stored pairings.
        .target(name: "AirPlayPairing", dependencies: ["AirPlayCrypto", "AirPlayWire", .product(name: "NIOCore", package: "swift-nio")]),
        .target(name: "AirPlayDiscovery", dependencies: [
            "CAvahi", "AirPlayWire",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "AirPlayMedia"),
        .target(name: "GStreamerMedia", dependencies: ["LinuxIO", "CGStreamer", "CGLibLazy", "AirPlayMedia"], swiftSettings: glibSwiftSettings),
        .target(name: "FLACMedia", dependencies: ["CFLAC", "AirPlayMedia"]),
        // alsa-lib, opened on its first call (headers from libasound2-dev): the native ALSA output.
        .target(name: "CALSA", dependencies: ["CLazyLink"]),
        .target(name: "ALSAMedia", dependencies: ["LinuxIO", "CALSA", "AirPlayMedia"]),
        // libsoxr, opened on its first call (headers from libsoxr-dev): drift correction by resampling.
        .target(name: "CSoxr", dependencies: ["CLazyLink"]),
        .target(name: "SoxrMedia", dependencies: ["CSoxr", "AirPlayMedia"]),

        // Stateless wire codecs.
        .target(name: "AirPlayWire", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"),
        ]),

        // Clock estimation: the PTP follower (and, later, the NTP path's timeline).
        .target(name: "AirPlayTiming", dependencies: [
            "AirPlayWire", "AirPlayMedia", "LinuxIO",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // The box's now-playing state, its remote-control commands, and the surfaces that need no
        // C library (the shairport-sync metadata pipe).
        .target(name: "AirPlayNowPlaying", dependencies: [
            "AirPlayWire", "LinuxIO", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ]),

        // MPRIS 2 on D-Bus through GDBus: the only importer of CGio.
        .target(name: "AirPlayDBus", dependencies: [
            "LinuxIO", "CGio", "CGLibLazy", "AirPlayNowPlaying", "AirPlayMedia",
            .product(name: "Logging", package: "swift-log"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ], swiftSettings: glibSwiftSettings),

        // Now playing over MQTT through libmosquitto: the only importer of CMosquitto.
        .target(name: "AirPlayMQTT", dependencies: [
            "CMosquitto", "AirPlayNowPlaying",
            .product(name: "Logging", package: "swift-log"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ]),

        // Receiver and sender logic.
        .target(name: "AirPlayReceiver", dependencies: [
            "AirPlayHLS", "AirPlayTiming", "AirPlayNowPlaying",
            "AirPlayWire", "AirPlayPlist", "AirPlayCrypto", "AirPlayPairing", "AirPlayMedia", "LinuxIO",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // What the box fetches over HTTP on a sender's behalf: the HLS gateway the player reads
        // playlists and keys from, and the redirect screen; behind AirPlayReceiver's protocols.
        .target(name: "AirPlayHLSGateway", dependencies: [
            "AirPlayReceiver", "AirPlayHLS", "AirPlayHTTP", "AirPlayWire",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The daemon's composition root, a library so tests build it: configuration, identity,
        // systemd, the journal, the page, the media engine and probe, and the wiring.
        .target(name: "AirPlayDaemon", dependencies: [
            "LinuxIO", "AirPlayReceiver", "AirPlayHLSGateway", "AirPlayHLS", "AirPlayDiscovery", "AirPlayTiming", "AirPlayNowPlaying", "AirPlayCrypto",
            "AirPlayWire", "AirPlayPlist", "AirPlayPairing", "AirPlayMedia", "AirPlayDBus", "AirPlayMQTT", "GStreamerMedia", "ALSAMedia", "SoxrMedia",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        .target(name: "AirPlayHLS"),
        .target(name: "AirPlayHTTP", dependencies: ["CCurl", "CZlib"]),
        .target(name: "AirPlaySender", dependencies: [
            "LinuxIO", "AirPlayHLS", "AirPlayHTTP", "AirPlayWire", "AirPlayDiscovery", "AirPlayPlist", "AirPlayCrypto", "AirPlayPairing", "AirPlayMedia",
            "AirPlayTiming",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Tools that judge a receiver: `airplay conformance` (Protocol/ as checks) and `airplay doctor`.
        .target(name: "AirPlayConformance", dependencies: [
            "LinuxIO", "AirPlaySender", "AirPlayWire", "AirPlayPlist", "AirPlayCrypto", "AirPlayPairing", "AirPlayMedia",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),

        // Thin executables.
        .executableTarget(name: "airplayd", dependencies: [
            "AirPlayDaemon", "AirPlayReceiver", "AirPlayWire", "AirPlayPairing",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], linkerSettings: leanExecutable),
        .executableTarget(name: "airplay", dependencies: [
            "AirPlaySender", "AirPlayConformance", "AirPlayHLS", "AirPlayHTTP", "AirPlayCrypto", "AirPlayDiscovery", "AirPlayWire", "AirPlayPlist",
            "GStreamerMedia", "FLACMedia", "AirPlayMedia", "AirPlayTiming",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], linkerSettings: leanExecutable),

        // Every parser that reads bytes from a peer or a user's file, as a fuzz body: the fuzz
        // package runs them under libFuzzer, the unit tests run their seeds and past crashes.
        .target(name: "AirPlayFuzzTargets", dependencies: [
            "AirPlayWire", "AirPlayHLS", "AirPlayPlist", "AirPlayCrypto", "AirPlayPairing", "AirPlayMedia", "AirPlayNowPlaying",
            "AirPlayTiming", "AirPlayReceiver", "AirPlayDaemon", "AirPlaySender",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),

        // Test support: real peers and private mDNS, started the way users start them.
        // The in-memory tier: the sender's and the receiver's real machines, talking without sockets.
        .target(name: "AirPlayInMemory", dependencies: [
            "AirPlaySender", "AirPlayReceiver", "AirPlayTiming", "AirPlayWire", "AirPlayPlist",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // A sound card whose crystal runs fast or slow, recording when each frame left it (tests only).
        .target(name: "SimulatedSoundCard", path: "Tests/SimulatedSoundCard", cSettings: [.define("PIC")], linkerSettings: [.linkedLibrary("asound")]),
        .target(name: "AirPlayTesting", dependencies: [
            "LinuxIO", "AirPlayMedia", "AirPlayWire",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),

        .testTarget(name: "AirPlayWireTests", dependencies: [
            "AirPlayWire", "AirPlayPlist", "AirPlayTesting",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOTestUtils", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "AirPlayPlistTests", dependencies: ["AirPlayPlist", "AirPlayWire"]),
        .testTarget(name: "AirPlayNowPlayingTests", dependencies: ["AirPlayNowPlaying", "AirPlayWire"]),
        .testTarget(name: "AirPlayMediaTests", dependencies: ["AirPlayMedia", "AirPlayTesting", "FLACMedia", "GStreamerMedia", "SoxrMedia"]),
        .testTarget(name: "AirPlayCryptoTests", dependencies: ["AirPlayCrypto", "AirPlayTesting"]),
        .testTarget(name: "AirPlayPairingTests", dependencies: [
            "AirPlayPairing", "AirPlayCrypto", "AirPlayTesting", .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "AirPlayReceiverTests", dependencies: [
            "AirPlayReceiver", "AirPlayNowPlaying", "AirPlayWire", "AirPlayPlist", "AirPlayCrypto", "AirPlayPairing", "AirPlayMedia", "AirPlayTiming", "GStreamerMedia", "AirPlayTesting",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "AirPlayDaemonTests", dependencies: [
            "AirPlayDaemon", "AirPlayHLSGateway", "AirPlayReceiver", "AirPlayHLS", "AirPlayWire", "AirPlayTesting",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ]),
        .testTarget(name: "AirPlayTimingTests", dependencies: ["AirPlayTiming", "AirPlayWire", "AirPlayTesting"]),
        .testTarget(name: "AirPlayHLSTests", dependencies: ["AirPlayHLS"], exclude: ["Fixtures"]),
        .testTarget(name: "AirPlayInMemoryTests", dependencies: ["AirPlayInMemory", "AirPlaySender", "AirPlayReceiver", "AirPlayTiming", "AirPlayWire",
                                                               "AirPlayPlist", "AirPlayMedia"]),
        .testTarget(name: "AirPlaySenderTests", dependencies: ["AirPlaySender", "AirPlayWire", "AirPlayPlist", "AirPlayHTTP", "GStreamerMedia"]),
        .testTarget(name: "AirPlayConformanceTests", dependencies: ["AirPlayConformance"]),
        .testTarget(name: "AirPlayFuzzTargetsTests", dependencies: ["AirPlayFuzzTargets"]),
        .testTarget(name: "IntegrationTests", dependencies: [
            "AirPlayTesting", "AirPlayWire", "AirPlayPlist", "AirPlayPairing", "AirPlayCrypto", "AirPlayMedia",
        ], exclude: ["peers", "scripts"]),
    ]
)
