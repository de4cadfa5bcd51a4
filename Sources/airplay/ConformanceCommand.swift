import AirPlaySender
import AirPlayConformance
import ArgumentParser
import Foundation

extension ConformanceSuite.Profile: ExpressibleByArgument {}

/// `airplay conformance HOST[:PORT]`: the exchanges written in Protocol/ as checks against any
/// receiver, each naming its section, with pass, fail or skip.
struct ConformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance",
        abstract: "Check a receiver against the protocol as Protocol/ writes it.",
        discussion: """
            Runs every check (or those of --section: discovery, info, control, rtsp, raop, video, pairing) \
            against HOST[:PORT] (port 7000 when none is given). Each line names the check, the Protocol/ \
            section it comes from, and pass, fail or skip with what was seen. Exits 0 when nothing failed, \
            1 when a check failed, 2 when the receiver cannot be reached. --profile apple instead walks an \
            iPhone's AirPlay 2 session in Apple's order on one connection (GET /info, transient pairing, \
            both fp-setup messages, SETUP phase 1 and 2, RECORD, SETPEERS, SETRATEANCHORTIME, /feedback, volume, \
            FLUSHBUFFERED, TEARDOWN, /configure, a remote-control-only session), each step as STATUS {reply keys}.             --profile apple-video hands a video over as an iPhone's YouTube app does (/reverse, /server-info, /play of             mlhls://localhost/master.m3u8, the playlist requests on the event channel answered with POST /action, an             unknown request id, setProperty, /playback-info, /fp-setup2, /stop) and names each deviation.
            """)

    @Argument(help: "The receiver, HOST[:PORT].") var receiver: String
    @Option(name: .long, help: "Only the checks of this section (repeatable).") var section: [String] = []
    @Option(name: .long, help: "Seconds to browse for the receiver's mDNS records.") var browseSeconds: Double = 3
    @Flag(name: .long, help: "One JSON document instead of lines.") var json = false
    @Flag(name: .long, help: "List the checks and exit.") var list = false
    @Option(name: .long, help: "standard (every section), apple (an iPhone's AirPlay 2 session, in order) or apple-video (an iPhone's YouTube hand-over).")
    var profile: ConformanceSuite.Profile = .standard

    func run() async throws {
        if list {
            for check in ConformanceSuite.checks(of: profile) { print("\(check.id)\t\(check.reference)\t\(check.summary)") }
            return
        }
        guard let (host, port) = ReceiverResolver.parseHostPort(receiver.contains(":") || receiver.hasPrefix("[") ? receiver : receiver + ":7000") else {
            throw ValidationError("give the receiver as HOST[:PORT]")
        }
        let results = await ConformanceSuite.run(host: host, port: port, sections: Set(section), browseSeconds: browseSeconds,
                                                profile: profile)
        if json {
            print(String(decoding: ConformanceSuite.json(results, receiver: "\(host):\(port)").bytes, as: UTF8.self))
        } else {
            for result in results {
                print("\(result.outcome.word.uppercased().padding(toLength: 5, withPad: " ", startingAt: 0)) "
                      + "\(result.check.id.padding(toLength: 26, withPad: " ", startingAt: 0)) \(result.outcome.detail)")
            }
            let count = { (word: String) in results.filter { $0.outcome.word == word }.count }
            print("\(count("pass")) passed, \(count("fail")) failed, \(count("skip")) skipped")
        }
        if results.allSatisfy({ $0.outcome.word != "pass" }), results.contains(where: { $0.outcome.detail.contains("cannot connect") }) {
            throw ExitCode(2)
        }
        if results.contains(where: { $0.outcome.word == "fail" }) { throw ExitCode(1) }
    }
}
