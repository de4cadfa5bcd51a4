import AirPlayMedia
import AirPlaySender
import Foundation

extension StreamCommand {
    /// `airplay stream --json`'s last line: what played, to whom, how well, and on which
    /// timeline; `sent` is a buffered stream's format (`converted` from the file's), `group`
    /// whether several rooms played (their step bound is then reported).
    static func summaryJSON(_ summary: RAOPStreamSession.Summary, codec: BufferedCodec, sent: PCMFormat?, converted: Bool,
                            group: Bool) -> [String: Any] {
        let milliseconds = { (seconds: Double) in (seconds * 100_000).rounded() / 100 }
        var result: [String: Any] = [
            "seconds": (summary.seconds * 10).rounded() / 10, "quit": summary.quit,
            "resent": summary.receivers.reduce(0) { $0 + $1.resent },
            "receivers": summary.receivers.map { receiver -> [String: Any] in
                ["receiver": receiver.name, "codec": receiver.codec, "encrypted": receiver.encrypted, "protocol": receiver.airPlay2 ? 2 : 1,
                 "resent": receiver.resent, "ptpClock": receiver.ptpClock ?? NSNull(),
                 "roundTripMs": receiver.bestRoundTrip.map(milliseconds) ?? NSNull()]
            },
        ]
        if let sent {
            // What went out, and whether it was converted from the file's format to get there.
            result["format"] = ["codec": codec == .aac ? "AAC-LC" : "ALAC", "sampleRate": sent.sampleRate,
                                "bitsPerSample": sent.bitsPerSample, "converted": converted] as [String: Any]
        }
        if group { result["skewBoundMs"] = summary.skewBound.map(milliseconds) ?? NSNull() }
        if let timeline = summary.timeline {
            // The one timeline: the first frame's moment on the PTP clock and, in a mixed
            // group, on our NTP clock (the clock relation every room's anchor or sync rests on).
            result["timeline"] = ["ptpClock": String(format: "0x%016llX", timeline.clockIdentity), "ptpClockOwner": timeline.owner,
                                  "firstFrameHeardAtPTPNs": timeline.ptpNanoseconds,
                                  "firstFrameHeardAtNTP": timeline.ntp.map { String(format: "0x%016llX", $0) } ?? NSNull()] as [String: Any]
        }
        return result
    }
}
