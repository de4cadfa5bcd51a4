import AirPlayNowPlaying
import Foundation
import Testing

/// What goes over MQTT, without a broker.
@Suite struct MQTTModelTests {
    @Test func theStateIsRetainedUnderTheTopic() throws {
        var state = NowPlayingState().applying(.began(NowPlayingSender(kind: .audio, name: "iPhone"), format: nil), now: 0)
        state = state.applying(.metadata([.init(tag: "minm", text: "Song")]), now: 0)
        state = state.applying(.artwork(type: "image/jpeg", bytes: [0xFF, 0xD8, 0xFF]), now: 0)
        let messages = MQTTModel.messages(state, topic: "airplayd/room", now: 0, cover: true)
        let byTopic = Dictionary(uniqueKeysWithValues: messages.map { ($0.topic, $0) })
        #expect(byTopic["airplayd/room/title"]?.payload == Array("Song".utf8))
        #expect(byTopic["airplayd/room/state"]?.payload == Array("paused".utf8))
        #expect(byTopic["airplayd/room/cover"]?.payload == [0xFF, 0xD8, 0xFF])
        #expect(messages.allSatisfy { $0.retain })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(byTopic["airplayd/room/now_playing"]!.payload)) as? [String: Any])
        #expect(json["title"] as? String == "Song" && (json["artwork"] as? [String: Any])?["base64"] == nil, "no cover bytes in the JSON")
        #expect(!MQTTModel.messages(state, topic: "t", now: 0, cover: false).contains { $0.topic == "t/cover" }, "the cover only when it changed")
    }

    @Test func homeAssistantFindsOneDeviceWithSensorsACoverAndButtons() throws {
        let messages = MQTTModel.discovery(prefix: "homeassistant", topic: "airplayd/room", deviceID: "AA:BB:CC:DD:EE:FF", name: "Room")
        let topics = messages.map(\.topic)
        #expect(topics.contains("homeassistant/sensor/airplayd_aabbccddeeff/title/config"))
        #expect(topics.contains("homeassistant/image/airplayd_aabbccddeeff/cover/config"))
        #expect(topics.contains("homeassistant/button/airplayd_aabbccddeeff/playpause/config"))
        for message in messages {
            let config = try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
            #expect(config["availability_topic"] as? String == "airplayd/room/availability")
            #expect((config["device"] as? [String: Any])?["identifiers"] as? [String] == ["airplayd_aabbccddeeff"])
            #expect((config["unique_id"] as? String)?.hasPrefix("airplayd_aabbccddeeff_") == true)
        }
    }

    @Test func resultsSayWhatHappened() {
        #expect(MQTTModel.result("pause", .success(())).payload == Array("ok pause".utf8))
        #expect(MQTTModel.result("next", .failure(RemoteControlError("nothing is playing"))).payload == Array("error next: nothing is playing".utf8))
    }
}
