import Foundation

/// Paths of the programs under test and of the peers nobody here wrote.
public enum Products {
    /// The repository root (found from this file's location at build time).
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The build directory holding the test runner, where SwiftPM also puts the executables.
    public static let buildDirectory: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The runner may sit inside `X.xctest/` bundles on some platforms.
        while url.pathExtension == "xctest" || url.lastPathComponent == "MacOS" { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A built executable of this package; throws with a hint when it was not built.
    public static func executable(_ name: String) throws -> String {
        let path = buildDirectory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestHostError("\(path) is missing: build the package first (tools/test does `swift build --build-tests`)")
        }
        return path
    }

    /// A program of the peers' virtual environment (pyatv's `atvremote`); throws when it is not installed.
    public static func peerTool(_ name: String) throws -> String {
        let venv = ProcessInfo.processInfo.environment["AIRPLAY_PEERS_VENV"] ?? (repositoryRoot + "/.venv-peers")
        let path = venv + "/bin/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestHostError("\(path) is missing: tools/setup-deps installs pyatv into \(venv)")
        }
        return path
    }

    /// A fresh scratch directory.
    public static func scratchDirectory(_ label: String) -> String {
        let path = NSTemporaryDirectory() + "airplay-\(label)-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
