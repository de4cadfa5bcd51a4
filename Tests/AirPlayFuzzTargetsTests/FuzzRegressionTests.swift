import AirPlayFuzzTargets
import Foundation
import Testing

/// Every fuzz target's seed corpus (`Fuzz/Corpus/NAME`) and every input that ever crashed it
/// (`Fuzz/Regressions/NAME`) run through the parser on each test run, so that a fixed crash
/// stays fixed without a fuzzer; and the fuzz package builds one executable per target.
@Suite struct FuzzRegressionTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func files(in folder: String, of target: String) -> [URL] {
        let directory = fuzzFolder.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { directory.appendingPathComponent($0) }
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func seedsAndPastCrashesRunClean(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = Self.files(in: "Corpus", of: name)
        #expect(!seeds.isEmpty, "Fuzz/Corpus/\(name) has no seeds")
        for file in seeds + Self.files(in: "Regressions", of: name) {
            target.body(Array(try Data(contentsOf: file)))
        }
    }

    @Test func everyTargetHasAnExecutableAndADictionary() throws {
        let sources = try FileManager.default.contentsOfDirectory(atPath: Self.fuzzFolder.appendingPathComponent("Sources").path)
        let executables = Set(sources.filter { $0 != "FuzzDriver" })
        #expect(executables == Set(FuzzTargets.all.map(\.name)), "Fuzz/Sources and FuzzTargets.all disagree")
        for target in FuzzTargets.all {
            let main = Self.fuzzFolder.appendingPathComponent("Sources/\(target.name)/main.swift")
            #expect(try String(contentsOf: main, encoding: .utf8).contains("\"\(target.name)\""), "\(main.path) runs another target")
            #expect(FileManager.default.fileExists(atPath: Self.fuzzFolder.appendingPathComponent("Dictionaries/\(target.name).dict").path),
                    "no dictionary for \(target.name)")
        }
    }

    @Test func namesAreUniqueAndReadable() {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } })
    }
}
