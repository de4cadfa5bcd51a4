import AirPlayTesting
import Foundation
import Testing

/// The house rules the build enforces (`tools/module-graph --check`, README "Module rules"):
/// imports go down the layers only, a C library has one wrapper, and the session libraries
/// link no media engine or C library. Each rule is shown breaking in a small tree of its own.
@Suite(.timeLimit(.minutes(10))) struct ModuleRulesTests {
    /// A tree with a README whose graph is `graph` and whose rules are these, and a Swift file
    /// per module importing what `graph` says (`CZ` is a C library).
    static func check(_ graph: [String: [String]]) throws -> CommandResult {
        let root = Products.scratchDirectory("module-rules")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (module, imports) in graph {
            let folder = root + "/Sources/" + module
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if module.hasPrefix("C") {
                try "module \(module) {}\n".write(toFile: folder + "/module.modulemap", atomically: true, encoding: .utf8)
            } else {
                try (imports.map { "import \($0)\n" }.joined() + "enum \(module)Thing {}\n")
                    .write(toFile: folder + "/\(module).swift", atomically: true, encoding: .utf8)
            }
        }
        let lines = graph.keys.sorted().map { "\($0) → \(graph[$0]!.isEmpty ? "(none)" : graph[$0]!.sorted().joined(separator: ", "))" }
        try """
            ## Modules

            ```
            \(lines.joined(separator: "\n"))
            ```

            ### Module rules

            ```
            layer C: C*
            layer 1: Wire
            layer 2: Media, Wrapper, OtherWrapper
            layer 3: Engine, Sender
            layer 4: app
            no engine or C library: Sender
            engines: Engine
            ```
            """.write(toFile: root + "/README.md", atomically: true, encoding: .utf8)
        return try runCommand("/usr/bin/python3", [Products.repositoryRoot + "/tools/module-graph", "--root", root, "--check"], timeout: 30)
    }

    static let sound: [String: [String]] = [
        "CZ": [], "Wire": [], "Media": ["Wire"], "Engine": ["Media"], "Wrapper": ["CZ"], "OtherWrapper": [],
        "Sender": ["Media", "Wire", "Wrapper"], "app": ["Sender", "Engine"],
    ]

    @Test func aTreeThatKeepsTheRulesPasses() throws {
        let result = try Self.check(Self.sound)
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// The sender takes its AAC encoder as a protocol of AirPlayMedia, handed in by `airplay`.
    @Test func aSessionLibraryImportingAnEngineOrACLibraryIsNamed() throws {
        var graph = Self.sound
        graph["Sender"]! += ["Engine"]
        let result = try Self.check(graph)
        #expect(result.status == 1)
        #expect(result.stderr.contains("Sender imports Engine: it links no media engine or C library"), "\(result.stderr)")
    }

    @Test func anImportUpTheLayersIsNamed() throws {
        var graph = Self.sound
        graph["Wire"] = ["Sender"]
        let result = try Self.check(graph)
        #expect(result.stderr.contains("Wire (layer 1) imports Sender (layer 3): only layers above its own"), "\(result.stderr)")
    }

    @Test func aCLibraryWithTwoWrappersIsNamed() throws {
        var graph = Self.sound
        graph["OtherWrapper"] = ["CZ"]
        let result = try Self.check(graph)
        #expect(result.stderr.contains("CZ is imported by OtherWrapper, Wrapper: a C library has one wrapper"), "\(result.stderr)")
    }

    @Test func aModuleInNoLayerIsNamed() throws {
        var graph = Self.sound
        graph["Stray"] = []
        let result = try Self.check(graph)
        #expect(result.stderr.contains("Stray is in no layer of the README's module rules"), "\(result.stderr)")
    }

    /// The project's own tree keeps its rules (`tools/test` checks this before it builds).
    @Test func thisTreeKeepsItsRules() throws {
        let result = try runCommand("/usr/bin/python3", [Products.repositoryRoot + "/tools/module-graph", "--check"], timeout: 30)
        #expect(result.status == 0, "\(result.stderr)")
    }
}
