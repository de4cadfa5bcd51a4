import AirPlaySender
import AirPlayWire
import Foundation
import NIOCore

/// How one conformance check ended, with what was seen or why.
public enum ConformanceOutcome: Hashable, Sendable {
    /// The receiver did what the section says.
    case passed(String)
    /// It did not: what it did instead.
    case failed(String)
    /// The check does not apply (a feature the receiver does not advertise, or an earlier step failed).
    case skipped(String)

    /// `pass`, `fail` or `skip`.
    public var word: String {
        switch self {
        case .passed: "pass"
        case .failed: "fail"
        case .skipped: "skip"
        }
    }

    /// What was seen, or why.
    public var detail: String {
        switch self {
        case .passed(let text), .failed(let text), .skipped(let text): text
        }
    }

    /// Passed when the answer's status is in `expected`, with the status and the start of its body.
    static func expecting(_ answer: Result<AirPlayResponse, ConformanceIssue>, _ expected: Range<Int>) -> ConformanceOutcome {
        switch answer {
        case .failure(let issue): return .failed(issue.reason)
        case .success(let response):
            let text = String(buffer: response.body).trimmingCharacters(in: .whitespacesAndNewlines).prefix(80)
            let seen = "\(response.status)\(text.isEmpty ? "" : ": \(text)")"
            return expected.contains(response.status) ? .passed(seen) : .failed("answered \(seen)")
        }
    }
}

/// One exchange written in `Protocol/`, as a check any receiver can be put to.
public struct ConformanceCheck: Sendable {
    /// A stable id, `SECTION.what` (`raop.announce`).
    public let id: String
    /// Where in `Protocol/` the exchange is written (`raop.md §2 ANNOUNCE`).
    public let reference: String
    /// What the check asks, in a line.
    public let summary: String
    let run: @Sendable (ConformanceProbe) async -> ConformanceOutcome

    /// A check.
    public init(_ id: String, _ reference: String, _ summary: String, run: @escaping @Sendable (ConformanceProbe) async -> ConformanceOutcome) {
        self.id = id
        self.reference = reference
        self.summary = summary
        self.run = run
    }

    /// The part of the id before the dot: `discovery`, `info`, `control`, `raop`, `video`, `pairing`, `airplay2`, `apple`.
    public var section: String { String(id.prefix { $0 != "." }) }
}

/// One check's result.
public struct ConformanceResult: Sendable {
    /// The check.
    public let check: ConformanceCheck
    /// How it ended.
    public let outcome: ConformanceOutcome
    /// How long it took.
    public let milliseconds: Int
}

/// Every check, in the order they run (sessions build on earlier steps within a section).
public enum ConformanceSuite {
    /// All checks.
    public static let all: [ConformanceCheck] = DiscoveryChecks.all + InfoChecks.all + ControlPortChecks.all + RAOPChecks.all
        + VideoChecks.all + PairingChecks.all + AirPlay2Checks.all

    /// Which checks a run makes.
    public enum Profile: String, CaseIterable, Sendable {
        /// Every exchange of `Protocol/`, section by section.
        case standard
        /// An iPhone's AirPlay 2 session, step by step in Apple's order, on one connection.
        case apple
        /// An iPhone's YouTube video handed over (`mlhls://`, the playlists over FCUP).
        case appleVideo = "apple-video"
    }

    /// The checks of a profile (the Apple profile's share one walk: a fresh one each time).
    public static func checks(of profile: Profile) -> [ConformanceCheck] {
        switch profile {
        case .standard: all
        case .apple: AppleProfileChecks.all()
        case .appleVideo: VideoHandOverChecks.all()
        }
    }

    /// Runs the checks of `profile` whose section is in `sections` (all when empty) against `host:port`.
    public static func run(host: String, port: Int, sections: Set<String> = [], browseSeconds: Double = 3,
                           profile: Profile = .standard) async -> [ConformanceResult] {
        let probe = ConformanceProbe(host: host, port: port, browseSeconds: browseSeconds)
        var results: [ConformanceResult] = []
        for check in checks(of: profile) where sections.isEmpty || sections.contains(check.section) {
            let started = Date()
            let outcome = await check.run(probe)
            results.append(ConformanceResult(check: check, outcome: outcome, milliseconds: Int(Date().timeIntervalSince(started) * 1000)))
        }
        await probe.close()
        return results
    }

    /// The results as one JSON document: counts, then each check.
    public static func json(_ results: [ConformanceResult], receiver: String) -> JSONValue {
        func count(_ word: String) -> JSONValue { .integer(results.filter { $0.outcome.word == word }.count) }
        return .object([
            "receiver": .string(receiver), "passed": count("pass"), "failed": count("fail"), "skipped": count("skip"),
            "checks": .array(results.map { result in
                .object(["id": .string(result.check.id), "reference": .string(result.check.reference),
                         "summary": .string(result.check.summary), "result": .string(result.outcome.word),
                         "detail": .string(result.outcome.detail), "ms": .integer(result.milliseconds)])
            }),
        ])
    }
}
