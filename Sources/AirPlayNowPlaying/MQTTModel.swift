import AirPlayWire

/// What airplayd publishes over MQTT, and the Home Assistant discovery that describes it;
/// pure, so topics and payloads are tested without a broker. Everything sits under one topic
/// (`airplayd/living-room`):
///
/// | topic | payload | retained |
/// |---|---|---|
/// | `TOPIC/availability` | `online`, `offline` (the last will) | yes |
/// | `TOPIC/state` | `playing`, `paused`, `idle` | yes |
/// | `TOPIC/title`, `/artist`, `/album`, `/genre`, `/sender` | text (empty when none) | yes |
/// | `TOPIC/now_playing` | the state as JSON (position, duration, volume, kind…) | yes |
/// | `TOPIC/cover` | the image bytes (empty when none) | yes |
/// | `TOPIC/remote` | a command from outside: `pause`, `next`, `volume:-12`… | (read) |
/// | `TOPIC/remote/result` | `ok COMMAND` or `error COMMAND: REASON` | no |
public enum MQTTModel {
    /// One message to publish.
    public struct Message: Hashable, Sendable {
        /// Its full topic.
        public var topic: String
        /// Its payload.
        public var payload: [UInt8]
        /// Whether the broker keeps it for later subscribers.
        public var retain: Bool

        /// A message from its parts.
        public init(topic: String, payload: [UInt8], retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.retain = retain
        }

        /// A text message.
        public init(topic: String, text: String, retain: Bool = true) {
            self.init(topic: topic, payload: Array(text.utf8), retain: retain)
        }
    }

    /// The availability topic (its last will says `offline`).
    public static func availability(_ topic: String) -> String { topic + "/availability" }
    /// The topic commands arrive on.
    public static func remote(_ topic: String) -> String { topic + "/remote" }

    /// The messages that describe `state`, at `now`; the cover only when `cover` (it is large:
    /// sent when it changed).
    public static func messages(_ state: NowPlayingState, topic: String, now: Double, cover: Bool) -> [Message] {
        var messages = [
            Message(topic: topic + "/state", text: state.status),
            Message(topic: topic + "/title", text: state.item.title ?? ""),
            Message(topic: topic + "/artist", text: state.item.artist ?? ""),
            Message(topic: topic + "/album", text: state.item.album ?? ""),
            Message(topic: topic + "/genre", text: state.item.genre ?? ""),
            Message(topic: topic + "/sender", text: state.sender?.name ?? ""),
            Message(topic: topic + "/now_playing", payload: JSONValue.object(state.json(now: now, artworkBytes: false)).bytes),
        ]
        if cover { messages.append(Message(topic: topic + "/cover", payload: state.item.artwork?.bytes ?? [])) }
        return messages
    }

    /// `ok pause` or `error pause: nothing is playing`, for `TOPIC/remote/result`.
    public static func result(_ command: String, _ outcome: Result<Void, RemoteControlError>) -> Message {
        switch outcome {
        case .success: Message(topic: "", text: "ok \(command)", retain: false)
        case .failure(let error): Message(topic: "", text: "error \(command): \(error.description)", retain: false)
        }
    }

    /// Home Assistant MQTT discovery: sensors for the state and the text, an image for the
    /// cover, buttons for the commands, all of one device that is available while the daemon
    /// is (`availability`). Retained, under `prefix` (`homeassistant`).
    public static func discovery(prefix: String, topic: String, deviceID: String, name: String) -> [Message] {
        let id = "airplayd_" + deviceID.filter { $0.isLetter || $0.isNumber }.lowercased()
        let device: JSONValue = ["identifiers": .array([.string(id)]), "name": .string(name), "manufacturer": "swift-airplay",
                                 "model": "airplayd"]
        func entity(_ component: String, _ key: String, _ title: String, _ extra: [String: JSONValue]) -> Message {
            var config: [String: JSONValue] = ["name": .string(title), "unique_id": .string("\(id)_\(key)"), "device": device,
                                               "availability_topic": .string(availability(topic))]
            config.merge(extra) { _, new in new }
            return Message(topic: "\(prefix)/\(component)/\(id)/\(key)/config", payload: JSONValue.object(config).bytes)
        }
        var messages = [
            entity("sensor", "state", "State", ["state_topic": .string(topic + "/state"), "icon": "mdi:cast-audio"]),
            entity("sensor", "title", "Title", ["state_topic": .string(topic + "/title"), "icon": "mdi:music"]),
            entity("sensor", "artist", "Artist", ["state_topic": .string(topic + "/artist"), "icon": "mdi:account-music"]),
            entity("sensor", "album", "Album", ["state_topic": .string(topic + "/album"), "icon": "mdi:album"]),
            entity("sensor", "sender", "Sender", ["state_topic": .string(topic + "/sender"), "icon": "mdi:cellphone"]),
            entity("image", "cover", "Cover", ["image_topic": .string(topic + "/cover"), "content_type": "image/jpeg"]),
        ]
        for (command, title, icon) in [("playpause", "Play/Pause", "mdi:play-pause"), ("next", "Next", "mdi:skip-next"),
                                       ("previous", "Previous", "mdi:skip-previous"), ("volumeup", "Volume up", "mdi:volume-plus"),
                                       ("volumedown", "Volume down", "mdi:volume-minus"), ("stop", "Stop", "mdi:stop")] {
            messages.append(entity("button", command, title, ["command_topic": .string(remote(topic)), "payload_press": .string(command),
                                                              "icon": .string(icon)]))
        }
        return messages
    }
}
