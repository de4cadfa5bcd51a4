import AirPlayHLS
import AirPlayReceiver
import AirPlayWire

/// The box's languages for a video's alternate renditions (`video_language`,
/// `video_subtitles`): YouTube's masters carry a dubbed audio track per language, and the
/// player would take whichever the master marks DEFAULT. A preference is a language tag; it
/// matches a rendition's LANGUAGE case-insensitively, `_` and `-` alike, and a tag with a region
/// is matched by its language alone (`pt` matches `pt-BR`; `pt-BR` does not match `pt`). The
/// first preference some rendition matches wins. Without configured audio languages the
/// system's (`LANGUAGE`, else `LC_ALL`, `LC_MESSAGES`, `LANG`) are tried on the renditions the
/// master lets be chosen automatically (AUTOSELECT not NO); without a match, the master's own
/// DEFAULT plays. A sender's own choice (`selectedMediaArray`) goes before all of these.
public struct RenditionPreferences: Hashable, Sendable {
    /// Audio languages, most wanted first.
    public var audio: [String]
    /// Subtitle languages, most wanted first (none: subtitles as the master says).
    public var subtitles: [String]
    /// The system's languages, tried for audio when `audio` is empty.
    public var system: [String]

    /// Preferences from the keys' colon lists (`de:en`) and the process environment.
    public init(audio: String, subtitles: String, environment: [String: String]) {
        self.audio = Self.list(audio)
        self.subtitles = Self.list(subtitles)
        system = Self.systemLanguages(environment)
    }

    /// The renditions to choose in `master`, by TYPE.
    public func choices(for master: MasterPlaylist) -> [String: HLSRenditionChoice] {
        var result: [String: HLSRenditionChoice] = [:]
        let audio = master.renditions.filter { $0.type == "AUDIO" }
        if let language = Self.first(of: self.audio, in: audio)
            ?? Self.first(of: system, in: audio.filter { $0.attributes.flag("AUTOSELECT") != false }) {
            result["AUDIO"] = HLSRenditionChoice(language: language, name: nil)
        }
        if let language = Self.first(of: subtitles, in: master.renditions.filter { $0.type == "SUBTITLES" }) {
            result["SUBTITLES"] = HLSRenditionChoice(language: language, name: nil)
        }
        return result
    }

    /// The LANGUAGE of the first rendition the first matching preference picks.
    static func first(of preferences: [String], in renditions: [Rendition]) -> String? {
        for preference in preferences {
            if let match = renditions.first(where: { $0.language.map { matches(preference, $0) } ?? false }) { return match.language }
        }
        return nil
    }

    /// Whether a preference picks a rendition's language tag.
    static func matches(_ preference: String, _ language: String) -> Bool {
        let wanted = normalized(preference), offered = normalized(language)
        return offered == wanted || offered.hasPrefix(wanted + "-")
    }

    static func normalized(_ tag: String) -> String {
        String(tag.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    static func list(_ text: String) -> [String] {
        text.split(separator: ":").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    /// `LANGUAGE` (a colon list), else the first of `LC_ALL`, `LC_MESSAGES`, `LANG`, without its
    /// codeset or modifier; `C` and `POSIX` say nothing.
    static func systemLanguages(_ environment: [String: String]) -> [String] {
        let locale: [String]
        if let list = environment["LANGUAGE"], !list.isEmpty {
            locale = Self.list(list)
        } else if let value = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) {
            locale = [value]
        } else {
            locale = []
        }
        return locale.map { String($0.prefix { $0 != "." && $0 != "@" }) }.filter { !$0.isEmpty && $0 != "C" && $0 != "POSIX" }
    }
}
