import AirPlaySender
import AirPlayConformance
import ArgumentParser

/// `airplay doctor [HOST[:PORT]]`: why a box is unreachable or "connected but silent", in
/// words, each finding with its fix. On the box itself (the default, 127.0.0.1) it reads the
/// daemon's `/diagnostics`: its mDNS records, the PTP clocks it hears, the session playing and
/// how the last ones ended. From elsewhere it checks the port and the mDNS records, and reads the
/// same figures over pair-verify when this machine paired with the box as its admin.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Explain why a receiver is silent or unreachable, and what to do about it.",
        discussion: "Exits 1 when a problem is found, 0 otherwise. The daemon's own figures are read on the box, or from "
            + "elsewhere after `airplay pair` (as the box's admin).")

    @Argument(help: "The box as HOST[:PORT] (default 127.0.0.1:7000, the box this runs on).")
    var receiver = "127.0.0.1:7000"

    @Flag(name: .long, help: "One JSON document: {target, name, ok, findings: [{code, severity, summary, evidence, fix}]}.")
    var json = false

    @Option(name: .long, help: "Seconds to wait for the box to answer.")
    var timeout: Double = 3

    @Option(name: .long, help: "Seconds to browse mDNS for the box (0 skips the browse).")
    var browseSeconds: Double = 3

    func validate() throws {
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be between 0 and 60 seconds") }
        guard browseSeconds >= 0, browseSeconds <= 60 else { throw ValidationError("--browse-seconds must be between 0 and 60") }
    }

    func run() async throws {
        let text = receiver.contains(":") || receiver.hasPrefix("[") ? receiver : receiver + ":7000"
        guard let (host, port) = ReceiverResolver.parseHostPort(text) else { throw ValidationError("give the receiver as HOST[:PORT]") }
        // A box elsewhere shows its figures to its admin: the pairing `airplay pair` stored, if any.
        let observations = await BoxDoctor.observe(host: host, port: port, timeout: timeout, browse: browseSeconds > 0 ? browseSeconds : nil,
                                                   credentials: try? SenderCredentials())
        let findings = BoxDiagnosis.findings(observations)
        print(json ? DoctorRendering.json(findings, observations: observations)
                   : DoctorRendering.text(findings, observations: observations), terminator: "")
        if findings.contains(where: { $0.severity == .problem }) { throw ExitCode(1) }
    }
}
