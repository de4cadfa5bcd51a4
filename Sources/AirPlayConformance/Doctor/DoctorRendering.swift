import AirPlaySender
import AirPlayWire

/// `airplay doctor`'s findings as people and scripts read them.
public enum DoctorRendering {
    /// Lines for a terminal: a mark per severity, the summary, then what was seen and the fix.
    public static func text(_ findings: [DoctorFinding], observations: DoctorObservations) -> String {
        let name = observations.infoName.map { "\"\($0)\" at " } ?? ""
        var lines = ["airplay doctor: \(name)\(observations.target)" + (observations.pairVerified ? " (its figures read over pair-verify)" : "")]
        for finding in findings {
            let mark = switch finding.severity {
            case .problem: "✘"
            case .warning: "!"
            case .note: "·"
            case .fine: "✔"
            }
            lines.append("\(mark) \(finding.summary)")
            if let evidence = finding.evidence { lines.append("    seen: \(evidence)") }
            if let fix = finding.fix { lines.append("    fix:  \(fix)") }
        }
        let problems = findings.filter { $0.severity == .problem }.count
        lines.append(problems == 0 ? "No problem found." : "\(problems) problem\(problems == 1 ? "" : "s") found.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// One JSON document: the target, whether any problem was found, every finding, and how the
    /// box's own figures were read ("on the box", "pair-verified", or null when they were not).
    public static func json(_ findings: [DoctorFinding], observations: DoctorObservations) -> String {
        let items: [JSONValue] = findings.map { finding in
            .object(["code": .string(finding.code), "severity": .string(finding.severity.rawValue), "summary": .string(finding.summary),
                     "evidence": .string(finding.evidence), "fix": .string(finding.fix)])
        }
        let document: JSONValue = .object([
            "target": .string(observations.target), "name": .string(observations.infoName),
            "ok": .bool(!findings.contains { $0.severity == .problem }), "findings": .array(items),
            "figures": .string(observations.report == nil ? nil : observations.pairVerified ? "pair-verified" : "on the box"),
        ])
        return String(decoding: document.bytes, as: UTF8.self) + "\n"
    }
}
