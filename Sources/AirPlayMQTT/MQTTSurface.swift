import AirPlayNowPlaying
internal import CMosquitto
import Logging
import NIOConcurrencyHelpers

/// How to reach the broker.
public struct MQTTConnection: Sendable {
    /// Host name or address.
    public var host: String
    /// Port.
    public var port: Int
    /// The topic everything goes under.
    public var topic: String
    /// User name, when the broker wants one.
    public var username: String?
    /// Password.
    public var password: String?
    /// Certificate authorities for TLS; nil: plain TCP.
    public var tlsCAFile: String?
    /// Home Assistant's discovery prefix; nil: no discovery.
    public var discoveryPrefix: String?
    /// The MQTT client id (unique per daemon: the device id).
    public var clientID: String

    /// A connection from its parts.
    public init(host: String, port: Int, topic: String, username: String? = nil, password: String? = nil, tlsCAFile: String? = nil,
                discoveryPrefix: String? = "homeassistant", clientID: String) {
        self.host = host
        self.port = port
        self.topic = topic
        self.username = username
        self.password = password
        self.tlsCAFile = tlsCAFile
        self.discoveryPrefix = discoveryPrefix
        self.clientID = clientID
    }
}

/// Now playing over MQTT through libmosquitto: retained state under the topic, Home Assistant
/// discovery, commands from `TOPIC/remote`, and availability with a last will. libmosquitto's
/// own thread keeps the connection: when the broker goes away it connects again with back-off
/// (1 s doubling to 30 s), and on every connection everything is published anew.
public final class MQTTSurface: NowPlayingSurface, @unchecked Sendable {
    private let connection: MQTTConnection
    private let nowPlaying: NowPlaying
    private let deviceID: String
    private let name: String
    private let logger: Logger
    private let client: OpaquePointer
    private let coverShown = NIOLockedValueBox<Int?>(nil)
    /// What the broker holds of each retained topic: only changes are sent again.
    private let retained = NIOLockedValueBox<[String: [UInt8]]>([:])
    /// Whether the broker has us now.
    public let connected = NIOLockedValueBox(false)
    /// Messages published, for benchmarks.
    public let published = NIOLockedValueBox(0)

    /// Connects (in the background) and starts the connection's thread.
    public init(connection: MQTTConnection, deviceID: String, name: String, nowPlaying: NowPlaying, logger: Logger) throws(MQTTError) {
        self.connection = connection
        self.nowPlaying = nowPlaying
        self.deviceID = deviceID
        self.name = name
        self.logger = logger
        if let reason = cairplay_mosquitto_load() { throw MQTTError("libmosquitto.so.1 \(String(cString: reason)) (install libmosquitto1)") }
        mosquitto_lib_init()
        guard let client = mosquitto_new(connection.clientID, true, nil) else { throw MQTTError("cannot make an MQTT client") }
        self.client = client
        mosquitto_user_data_set(client, Unmanaged.passUnretained(self).toOpaque())
        try check(mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311), "protocol version")
        if let username = connection.username {
            try check(mosquitto_username_pw_set(client, username, connection.password), "credentials")
        }
        if let ca = connection.tlsCAFile {
            try check(mosquitto_tls_set(client, ca, nil, nil, nil, nil), "TLS")
        }
        let offline = Array("offline".utf8)
        try check(mosquitto_will_set(client, MQTTModel.availability(connection.topic), Int32(offline.count), offline, 1, true), "last will")
        try check(mosquitto_reconnect_delay_set(client, 1, 30, true), "reconnect delay")
        mosquitto_connect_callback_set(client) { _, user, code in
            guard let user else { return }
            Unmanaged<MQTTSurface>.fromOpaque(user).takeUnretainedValue().didConnect(code: code)
        }
        mosquitto_disconnect_callback_set(client) { _, user, code in
            guard let user else { return }
            Unmanaged<MQTTSurface>.fromOpaque(user).takeUnretainedValue().didDisconnect(code: code)
        }
        mosquitto_message_callback_set(client) { _, user, message in
            guard let user, let message else { return }
            Unmanaged<MQTTSurface>.fromOpaque(user).takeUnretainedValue().received(message.pointee)
        }
        // A broker that is not there yet is no error: the loop's thread keeps trying.
        let first = mosquitto_connect_async(client, connection.host, Int32(connection.port), 30)
        if first != MOSQ_ERR_SUCCESS.rawValue {
            logger.warning("MQTT broker not reachable yet; retrying", metadata: ["mqtt.host": "\(connection.host):\(connection.port)",
                                                                                  "reason": "\(String(cString: mosquitto_strerror(first)))"])
        }
        try check(mosquitto_loop_start(client), "network thread")
    }

    /// Says `offline`, disconnects and stops the connection's thread.
    public func stop() {
        publish(MQTTModel.Message(topic: MQTTModel.availability(connection.topic), text: "offline"))
        mosquitto_disconnect(client)
        mosquitto_loop_stop(client, false)
    }

    deinit {
        // Never a forced cancel: the loop's thread runs our callbacks and may hold a lock.
        mosquitto_disconnect(client)
        mosquitto_loop_stop(client, false)
        mosquitto_destroy(client)
    }

    /// Publishes what changed.
    public func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double) {
        guard connected.withLockedValue({ $0 }) else { return }
        publishState(state, at: time, forceCover: false)
    }

    // MARK: The connection's thread

    private func didConnect(code: Int32) {
        guard code == 0 else {
            logger.warning("MQTT broker refused the connection", metadata: ["reason": "\(String(cString: mosquitto_connack_string(code)))"])
            return
        }
        connected.withLockedValue { $0 = true }
        logger.info("MQTT connected", metadata: ["mqtt.host": "\(connection.host):\(connection.port)", "mqtt.topic": "\(connection.topic)"])
        mosquitto_subscribe(client, nil, MQTTModel.remote(connection.topic), 1)
        publish(MQTTModel.Message(topic: MQTTModel.availability(connection.topic), text: "online"))
        if let prefix = connection.discoveryPrefix {
            for message in MQTTModel.discovery(prefix: prefix, topic: connection.topic, deviceID: deviceID, name: name) { publish(message) }
        }
        // A broker that restarted without persistence has nothing: everything goes again.
        retained.withLockedValue { $0 = [:] }
        publishState(nowPlaying.state, at: nowPlaying.now(), forceCover: true)
    }

    private func didDisconnect(code: Int32) {
        connected.withLockedValue { $0 = false }
        if code != 0 { logger.warning("MQTT connection lost; reconnecting", metadata: ["reason": "\(String(cString: mosquitto_strerror(code)))"]) }
    }

    private func received(_ message: mosquitto_message) {
        // A retained command would run again at every connection: commands are for now only.
        guard !message.retain, String(cString: message.topic) == MQTTModel.remote(connection.topic), message.payloadlen <= 100 else { return }
        let bytes = UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))
        let text = String(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace })
        let resultTopic = MQTTModel.remote(connection.topic) + "/result"
        guard let command = RemoteCommand(name: text) else {
            var reply = MQTTModel.result(text, .failure(RemoteControlError("unknown command")))
            reply.topic = resultTopic
            return publish(reply)
        }
        nowPlaying.perform(command) { [weak self] outcome in
            var reply = MQTTModel.result(text, outcome)
            reply.topic = resultTopic
            self?.publish(reply)
        }
    }

    private func publishState(_ state: NowPlayingState, at time: Double, forceCover: Bool) {
        let number = state.item.artwork?.number
        let coverChanged = coverShown.withLockedValue { shown in
            defer { shown = number }
            return forceCover || shown != number
        }
        for message in MQTTModel.messages(state, topic: connection.topic, now: time, cover: coverChanged) where changed(message) {
            publish(message)
        }
    }

    /// Whether a retained message differs from what the broker has (and notes it as sent).
    private func changed(_ message: MQTTModel.Message) -> Bool {
        retained.withLockedValue { retained in
            guard retained[message.topic] != message.payload else { return false }
            retained[message.topic] = message.payload
            return true
        }
    }

    private func publish(_ message: MQTTModel.Message) {
        let result = message.payload.withUnsafeBytes {
            // Covers at QoS 0: the client keeps no copy for a broker that is slow to acknowledge.
            mosquitto_publish(client, nil, message.topic, Int32($0.count), $0.baseAddress, message.topic.hasSuffix("/cover") ? 0 : 1, message.retain)
        }
        if result == MOSQ_ERR_SUCCESS.rawValue { published.withLockedValue { $0 += 1 } }
    }

    private func check(_ code: Int32, _ what: String) throws(MQTTError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError("\(what): \(String(cString: mosquitto_strerror(code)))") }
    }
}

/// Why the MQTT surface cannot start.
public struct MQTTError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
