import AirPlayHLS
import Foundation

/// A master playlist described for people (a table with the seeds' badges) and for scripts (JSON).
public struct PlaylistReport: Sendable {
    /// The playlist.
    public let master: MasterPlaylist
    /// Its variants, described.
    public let variants: [VariantDescription]

    /// A report of a master playlist.
    public init(_ master: MasterPlaylist) {
        self.master = master
        variants = VariantDescription.all(master)
    }

    /// The table.
    public var text: String {
        var rows = [["#", "PEAK", "AVERAGE", "RESOLUTION", "FPS", "RANGE", "VIDEO", "AUDIO", "BADGES", "URI"]]
        for variant in variants {
            var audio = "-"
            if let described = variant.audio {
                let codecs: String = described.codecs.isEmpty ? "?" : described.codecs.joined(separator: "+")
                let channels: String = described.channels.map { "\($0)ch" }.joined(separator: "/")
                let languages: String = described.languages.isEmpty ? "" : " " + described.languages.joined(separator: ",")
                audio = codecs + " " + channels + languages
            }
            rows.append([String(variant.index), Self.rate(variant.peakBitRate), variant.averageBitRate.map(Self.rate) ?? "-",
                         variant.video?.resolution?.description ?? "-", variant.video?.frameRate.map { String(format: "%g", $0) } ?? "-",
                         variant.video?.range.rawValue ?? "-", variant.video?.codecString ?? "-", audio,
                         variant.badges.joined(separator: ", "), variant.variant.uri])
        }
        var lines = Self.align(rows)
        if !master.renditions.isEmpty {
            lines.append("")
            lines.append("Renditions:")
            lines += Self.align([["TYPE", "GROUP", "NAME", "LANGUAGE", "CHANNELS", "DEFAULT", "URI"]] + master.renditions.map {
                [$0.type, $0.groupID, $0.name, $0.language ?? "-", $0.channels ?? "-", $0.isDefault ? "yes" : "no", $0.uri ?? "(in variant)"]
            }).map { "  " + $0 }
        }
        if !master.iFrameVariants.isEmpty {
            lines.append("")
            lines.append("I-frame playlists (fast scrubbing):")
            lines += master.iFrameVariants.map { "  \(Self.rate($0.integer("BANDWIDTH") ?? 0))  \($0["RESOLUTION"] ?? "-")  \($0["URI"] ?? "")" }
        }
        if !master.sessionKeys.isEmpty {
            lines.append("")
            lines.append("Session keys:")
            lines += master.sessionKeys.map { "  \($0["METHOD"] ?? "?")  \($0["KEYFORMAT"] ?? "identity")  \($0["URI"] ?? "")" }
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON object.
    public var json: [String: Any] {
        [
            "variants": variants.map { variant -> [String: Any] in
                var object: [String: Any] = ["index": variant.index, "peakBitRate": variant.peakBitRate,
                                             "averageBitRate": variant.averageBitRate ?? NSNull(), "uri": variant.variant.uri,
                                             "badges": variant.badges, "subtitleLanguages": variant.subtitleLanguages]
                if let video = variant.video {
                    object["video"] = ["codec": video.codec, "codecString": video.codecString,
                                       "resolution": video.resolution?.description ?? NSNull(),
                                       "frameRate": video.frameRate ?? NSNull(), "range": video.range.rawValue] as [String: Any]
                }
                if let audio = variant.audio {
                    object["audio"] = ["codecs": audio.codecs, "channels": audio.channels, "atmos": audio.atmos, "languages": audio.languages]
                }
                return object
            },
            "renditions": master.renditions.map { rendition -> [String: Any] in
                ["type": rendition.type, "group": rendition.groupID, "name": rendition.name, "language": rendition.language ?? NSNull(),
                 "channels": rendition.channels ?? NSNull(), "default": rendition.isDefault, "uri": rendition.uri ?? NSNull()]
            },
            "iFramePlaylists": master.iFrameVariants.map { $0["URI"] ?? "" },
            "sessionKeys": master.sessionKeys.map { ["method": $0["METHOD"] ?? "", "uri": $0["URI"] ?? "", "keyFormat": $0["KEYFORMAT"] ?? "identity"] },
        ]
    }

    /// A bit rate for people: kb/s below a megabit, Mb/s above.
    public static func rate(_ bits: Int) -> String {
        bits >= 1_000_000 ? String(format: "%.1f Mb/s", Double(bits) / 1e6) : "\(bits / 1000) kb/s"
    }

    static func align(_ rows: [[String]]) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
