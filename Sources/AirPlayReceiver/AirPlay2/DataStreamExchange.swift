import AirPlayPlist
import AirPlayWire

/// The receiver's side of one AirPlay 2 data stream (type 130), after decryption: reads the
/// sender's messages as their bytes come, answers every `sync` with its `rply`, and says what
/// each carried (the MediaRemote messages' types) for the log. Pure: bytes in, actions out.
///
/// airplayd takes these messages and reads no further than their types (an iPhone sends
/// DEVICE_INFO, then SET_STATE and others; shairport-sync's maintainer found no use in them
/// yet): the stream is kept open and answered, so a sender that needs it goes on.
struct DataStreamExchange {
    /// What to do.
    enum Action: Equatable {
        /// Write these bytes (plaintext; the channel encrypts them).
        case write([UInt8])
        /// Note a message at debug level.
        case received(String)
        /// Close the stream: its bytes cannot be read.
        case close(String)
    }

    /// MediaRemote `ProtocolMessage` types by number, for the log (pyatv's numbering).
    static let typeNames: [Int: String] = [
        1: "SEND_COMMAND", 2: "SEND_COMMAND_RESULT", 3: "GET_STATE", 4: "SET_STATE", 5: "SET_ARTWORK",
        6: "REGISTER_HID_DEVICE", 15: "DEVICE_INFO", 16: "CLIENT_UPDATES_CONFIG", 17: "VOLUME_CONTROL_AVAILABILITY",
        32: "SET_CONNECTION_STATE", 34: "CONFIGURE_CONNECTION", 35: "SET_NOW_PLAYING_CLIENT", 46: "UPDATE_CLIENT",
        47: "UPDATE_CONTENT_ITEM", 55: "SET_DEFAULT_SUPPORTED_COMMANDS", 56: "ORIGIN_CLIENT_PROPERTIES", 59: "UPDATE_OUTPUT_DEVICE",
    ]

    private var reader = DataStreamMessage.Reader()
    /// Messages read.
    private(set) var messagesRead = 0

    /// The actions for bytes that arrived.
    mutating func received(_ bytes: [UInt8]) -> [Action] {
        let messages: [DataStreamMessage]
        do {
            messages = try reader.read(bytes)
        } catch {
            return [.close(error.description)]
        }
        var actions: [Action] = []
        for message in messages {
            messagesRead += 1
            actions.append(.received("\(message.typeName) #\(message.sequence): \(Self.summary(of: message.payload))"))
            if message.isRequest { actions.append(.write(DataStreamMessage.reply(to: message.sequence).encoded)) }
        }
        return actions
    }

    /// What a payload carries: the MediaRemote messages' types, or what it is instead.
    static func summary(of payload: [UInt8]) -> String {
        guard !payload.isEmpty else { return "no payload" }
        guard let plist = try? PropertyList(decoding: payload) else { return "\(payload.count) bytes, not a property list" }
        guard case .data(let blob)? = plist["params"]?["data"] else { return "a property list without params.data" }
        let types = MediaRemoteProtocolMessages.split(blob).map { message -> String in
            guard let type = MediaRemoteProtocolMessages.type(of: message) else { return "?" }
            return typeNames[type] ?? "type \(type)"
        }
        return "MediaRemote " + types.joined(separator: ", ")
    }
}
