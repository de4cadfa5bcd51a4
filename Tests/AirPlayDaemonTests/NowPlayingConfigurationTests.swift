@testable import AirPlayDaemon
import AirPlayReceiver
import Testing

/// The now-playing surfaces' keys: off by default, strict about what they take.
@Suite struct NowPlayingConfigurationTests {
    @Test func everySurfaceIsOffByDefault() throws {
        let settings = try ReceiverConfiguration.parse(toml: "").nowPlaying
        #expect(settings.mpris == .off && settings.metadataPipe.isEmpty && settings.webListen.isEmpty && settings.mqtt == nil)
    }

    @Test func theSurfacesAreRead() throws {
        let configuration = try ReceiverConfiguration.parse(toml: """
            mpris = "session"
            metadata_pipe = "/tmp/airplayd-metadata"
            web_listen = "[::1]:8080"
            [mqtt]
            host = "broker.lan"
            port = 8883
            topic = "airplayd/kitchen"
            """)
        #expect(configuration.nowPlaying.mpris == .session)
        #expect(NowPlayingSettings.hostAndPort(configuration.nowPlaying.webListen)! == ("::1", 8080))
        #expect(configuration.nowPlaying.mqtt?.host == "broker.lan" && configuration.nowPlaying.mqtt?.port == 8883)
        #expect(configuration.nowPlaying.mqtt?.topic == "airplayd/kitchen" && configuration.nowPlaying.mqtt?.discoveryPrefix == "homeassistant")
    }

    @Test func badValuesNameTheirKey() {
        for (toml, key) in [("mpris = \"yes\"", "mpris"), ("metadata_pipe = \"relative\"", "metadata_pipe"),
                            ("web_listen = \"8080\"", "web_listen"), ("[mqtt]\nport = 0", "mqtt.port"),
                            ("[mqtt]\ntopic = \"a/#\"", "mqtt.topic"), ("[mqtt]\nqos = 1", "mqtt.qos"), ("mqtt = 1", "mqtt")] {
            #expect {
                try ReceiverConfiguration.parse(toml: toml)
            } throws: { error in
                (error as? ConfigurationError)?.key == key
            }
        }
    }
}
