import AirPlayPairing
import FoundationEssentials

/// How drift is corrected (`audio_drift_correction`, `--audio-drift-correction`), by name.
public enum DriftCorrectionMode: String, Hashable, Sendable, CaseIterable {
    /// Single frames added or removed where the packet is quietest (default).
    case stuff
    /// Packets resampled a frame longer or shorter through libsoxr.
    case resample
    /// Only jumps past 20 ms are followed.
    case off
}

extension AudioOutput {
    /// The control device of the card an `alsa:` output plays to, for its mixer: `hw:1,0` and
    /// `plughw:1,0` are on `hw:1`, `hw:CARD=Device,DEV=0` on `hw:CARD=Device`; any other name
    /// (a device of the ALSA configuration, `default`) is taken as a control device too.
    public var mixerDevice: String? {
        guard case .alsa(let device) = self else { return nil }
        var name = device
        if name.hasPrefix("plughw:") { name.removeFirst(4) }
        guard name.hasPrefix("hw:") else { return name }
        return String(name.split(separator: ",", maxSplits: 1).first ?? Substring(name))
    }
}

/// Where the box's audio goes (`audio_output`, `--audio-output`).
public enum AudioOutput: Hashable, Sendable, CustomStringConvertible {
    /// A GStreamer sink description (`autoaudiosink`, `alsasink device=hw:0`, `fakesink sync=true`).
    case sink(String)
    /// Raw S16LE PCM written to a file or FIFO (`raw:PATH`).
    case raw(path: String)
    /// An ALSA device played through alsa-lib, following the card's own clock (`alsa:hw:CARD=Device`).
    case alsa(device: String)

    /// Reads the key's text: `raw:PATH`, `alsa:DEVICE`, or else a sink description.
    public init(parsing text: String) throws(ConfigurationError) {
        if text.hasPrefix("raw:") {
            guard !text.dropFirst(4).isEmpty else {
                throw ConfigurationError(key: "audio_output", message: "raw: needs a file or FIFO path, e.g. raw:/tmp/airplay.pcm")
            }
            self = .raw(path: String(text.dropFirst(4)))
        } else if text.hasPrefix("alsa:") {
            let device = String(text.dropFirst(5))
            guard !device.trimmingWhitespace().isEmpty, !device.contains(where: { $0.isNewline }) else {
                throw ConfigurationError(key: "audio_output", message: "alsa: needs an ALSA device name, e.g. alsa:hw:CARD=Device or alsa:default")
            }
            self = .alsa(device: device)
        } else {
            guard !text.trimmingWhitespace().isEmpty else {
                throw ConfigurationError(key: "audio_output", message: "must be a GStreamer sink description, alsa:DEVICE or raw:PATH, got an empty string")
            }
            self = .sink(text)
        }
    }

    /// The GStreamer sink description, when the output is one.
    public var sinkDescription: String? {
        if case .sink(let description) = self { description } else { nil }
    }

    /// The output a room really plays to, and what to say about it at start.
    ///
    /// GStreamer's `pipewiresink` (PipeWire 0.3, Debian 12's) is a plain sink without a clock:
    /// its pipeline runs on the system clock while PipeWire plays at the card's pace, so the room
    /// would drift from the others by the card's error (0.4 ms a second apart for cards 400 ppm
    /// apart). PipeWire's ALSA plugin reports PipeWire's own account of the card, which the room
    /// follows as a card's: with the plugin installed (`pipewireALSAPlugin`, asked only of a
    /// `pipewiresink`), a `pipewiresink` plays there, to the same node (`target-object`);
    /// without it, it plays as named and the note says how to follow the card.
    public func followingTheCard(pipewireALSAPlugin: () -> Bool) -> (output: AudioOutput, note: String?) {
        guard case .sink(let description) = self,
              let element = description.split(whereSeparator: { $0 == " " || $0 == "!" }).first, element == "pipewiresink" else { return (self, nil) }
        let words = description.split(separator: " ").dropFirst()
        let node = words.first { $0.hasPrefix("target-object=") }.map { String($0.dropFirst(14)) }
        let device = "pipewire" + (node.map { ":NODE=" + $0 } ?? "")
        guard pipewireALSAPlugin() else {
            return (self, "pipewiresink gives no clock of its card, so this room drifts from the others by the card's error; "
                + "install pipewire-alsa (PipeWire's ALSA plugin), through which airplayd follows the card, or name audio_output = \"alsa:\(device)\"")
        }
        let ignored = words.filter { !$0.hasPrefix("target-object=") }
        return (.alsa(device: device), "pipewiresink gives no clock of its card: playing to the same PipeWire node through PipeWire's ALSA plugin "
            + "(alsa:\(device)), which follows it" + (ignored.isEmpty ? "" : "; not used: \(ignored.joined(separator: " "))"))
    }

    /// The text the key takes (`raw:PATH`, `alsa:DEVICE` or the description).
    public var description: String {
        switch self {
        case .sink(let description): description
        case .raw(let path): "raw:" + path
        case .alsa(let device): "alsa:" + device
        }
    }
}

/// `video_language` and `video_subtitles`: language tags (letters, digits, `-`, `_`) joined by colons.
enum RenditionLanguages {
    /// The text when it is a valid list (empty included), else nil.
    static func valid(_ text: String) -> String? {
        guard text.utf8.count <= 200 else { return nil }
        let tags = text.split(separator: ":", omittingEmptySubsequences: false)
        guard text.isEmpty || tags.allSatisfy({ tag in !tag.isEmpty && tag.count <= 35
            && tag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } }) else { return nil }
        return text
    }
}

/// The pair-setup PIN (`pin`).
public enum PairingPIN: Hashable, Sendable {
    /// A new random PIN for every pair-setup (`random`).
    case random
    /// Always these four digits.
    case fixed(String)

    /// Reads `random` or four ASCII digits.
    public init?(parsing text: String) {
        if text == "random" {
            self = .random
        } else if text.count == 4, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            self = .fixed(text)
        } else {
            return nil
        }
    }

    /// What pairing does with it.
    public var source: PairingPolicy.PINSource {
        switch self {
        case .random: .random
        case .fixed(let digits): .fixed(digits)
        }
    }
}

/// Which D-Bus MPRIS is offered on (`mpris`).
public enum MPRISSetting: String, Hashable, Sendable {
    /// No MPRIS.
    case off
    /// The system bus (a box's service).
    case system
    /// The session bus (a desktop's).
    case session
}

/// How one key's TOML value becomes its typed value: the TOML type checked, then the key's rule.
/// The key turns a refusal into a `ConfigurationError` naming itself and what it allows.
struct ConfigurationReader<Value: Sendable>: Sendable {
    /// Why a value was refused.
    enum Refusal: Error {
        /// Not the TOML type the key takes.
        case wrongType
        /// The right type, but not a value the rule allows: `shown` as the error shows it.
        case notAllowed(shown: String)
        /// A problem of its own, said in full.
        case message(String)
        /// An error already naming its key (a table's inner key).
        case error(ConfigurationError)
    }

    /// The reading.
    let read: @Sendable (TOMLDocument.Value) throws(Refusal) -> Value

    /// A reader of text whose rule `parse` checks (nil: not allowed).
    static func text(_ parse: @escaping @Sendable (String) -> Value?) -> ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .string(let text) = value else { throw .wrongType }
            guard let parsed = parse(text) else { throw .notAllowed(shown: "\"\(text.prefix(60))\"") }
            return parsed
        }
    }
}

extension ConfigurationReader where Value == String {
    /// Any string.
    static var string: ConfigurationReader { .text { $0 } }

    /// A string of at most `maxBytes` bytes of UTF-8.
    static func string(maxBytes: Int) -> ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .string(let text) = value else { throw .wrongType }
            guard text.utf8.count <= maxBytes else { throw .message("must be at most \(maxBytes) bytes") }
            return text
        }
    }
}

extension ConfigurationReader where Value == String? {
    /// Any string, for a key that is unset by default.
    static var optionalString: ConfigurationReader { .text { $0 } }
}

extension ConfigurationReader where Value == Bool {
    /// true or false.
    static var bool: ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .bool(let flag) = value else { throw .wrongType }
            return flag
        }
    }
}

extension ConfigurationReader where Value == Int {
    /// An integer in `range`.
    static func integer(in range: ClosedRange<Int>) -> ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .integer(let number) = value else { throw .wrongType }
            guard range.contains(number) else { throw .notAllowed(shown: "\(number)") }
            return number
        }
    }
}

extension ConfigurationReader where Value == [String] {
    /// An array of strings.
    static var strings: ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .array(let array) = value else { throw .wrongType }
            var names: [String] = []
            for item in array {
                guard case .string(let text) = item else { throw .wrongType }
                names.append(text)
            }
            return names
        }
    }
}

extension ConfigurationReader where Value: RawRepresentable, Value.RawValue == String {
    /// One of the enumeration's names.
    static var choice: ConfigurationReader { .text { Value(rawValue: $0) } }
}

extension ConfigurationReader where Value == AudioOutput {
    /// `raw:PATH` or a sink description.
    static var audioOutput: ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .string(let text) = value else { throw .wrongType }
            do throws(ConfigurationError) { return try AudioOutput(parsing: text) } catch { throw .error(error) }
        }
    }
}

extension ConfigurationReader where Value == MQTTSettings? {
    /// The `[mqtt]` table.
    static var mqtt: ConfigurationReader {
        ConfigurationReader { value throws(Refusal) in
            guard case .table(let table) = value else { throw .wrongType }
            do throws(ConfigurationError) { return try MQTTSettings.parse(table) } catch { throw .error(error) }
        }
    }
}

extension TOMLDocument.Value {
    /// The value as an error message shows it: `the string "x"`, `the integer 5`.
    var shownInErrors: String {
        switch self {
        case .string(let text): "the string \"\(text)\""
        case .integer(let number): "the integer \(number)"
        case .bool(let flag): "\(flag)"
        case .float(let number): "the number \(number)"
        case .array: "an array"
        case .table: "a table"
        }
    }
}
