import AirPlayNowPlaying
import AirPlayPlist
import AirPlayWire

/// The receiver's side of one AirPlay 2 data stream (type 130), after decryption: reads the
/// sender's messages as their bytes come, answers every `sync` with its `rply`, and says what
/// each carried (the MediaRemote messages' types) for the log. Pure: bytes in, actions out.
///
/// airplayd reads no further than the messages' types (an iPhone sends DEVICE_INFO, then
/// SET_STATE and others; shairport-sync's maintainer found no use in them yet), except a
/// SEND_COMMAND: the command goes where the box's other remotes' go (what plays: the video
/// player, or the audio sender's event channel or DACP), and its SEND_COMMAND_RESULT follows
/// as a request of the box's own.
struct DataStreamExchange {
    /// What to do.
    enum Action: Equatable {
        /// Write these bytes (plaintext; the channel encrypts them).
        case write([UInt8])
        /// Note a message at debug level.
        case received(String)
        /// Close the stream: its bytes cannot be read.
        case close(String)
        /// Carry out a SEND_COMMAND (nil: not one the box takes) and answer it with `result`.
        case command(RemoteCommand?, number: Int, identifier: String?)
    }

    /// The box's remote commands for MediaRemote protocol commands (pyatv's numbering): play,
    /// pause, play/pause, stop, next, previous, and the skips.
    static func remoteCommand(_ number: Int) -> RemoteCommand? {
        switch number {
        case 1: .play
        case 2: .pause
        case 3: .playPause
        case 4: .stop
        case 5: .next
        case 6: .previous
        case 13: .seek(by: -15)
        case 14, 18: .seek(by: 15)
        case 15: .seek(by: -30)
        case 16: .seek(by: 30)
        case 19: .seek(by: -15)
        default: nil
        }
    }

    /// The next sequence number of the box's own requests (pyatv starts its own above 2^32).
    private var nextSequence: UInt64 = 1 << 32

    /// MediaRemote `ProtocolMessage` types by number, for the log (pyatv's definitions).
    static let typeNames: [Int: String] = [
        1: "SEND_COMMAND", 2: "SEND_COMMAND_RESULT", 3: "GET_STATE", 4: "SET_STATE", 5: "SET_ARTWORK", 15: "DEVICE_INFO",
        16: "CLIENT_UPDATES_CONFIG", 17: "VOLUME_CONTROL_AVAILABILITY", 32: "PLAYBACK_QUEUE_REQUEST", 34: "CRYPTO_PAIRING",
        37: "DEVICE_INFO_UPDATE", 38: "SET_CONNECTION_STATE", 42: "GENERIC", 46: "SET_NOW_PLAYING_CLIENT",
        47: "SET_NOW_PLAYING_PLAYER", 49: "GET_VOLUME", 51: "SET_VOLUME", 55: "UPDATE_CLIENT", 56: "UPDATE_CONTENT_ITEM",
        58: "UPDATE_PLAYER", 65: "UPDATE_OUTPUT_DEVICE", 72: "SET_DEFAULT_SUPPORTED_COMMANDS", 120: "CONFIGURE_CONNECTION",
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
            for command in Self.commands(in: message.payload) {
                actions.append(.command(Self.remoteCommand(command.command), number: command.command, identifier: command.identifier))
            }
        }
        return actions
    }

    /// The SEND_COMMAND_RESULT for a command carried out (`succeeded`), failed, or not taken
    /// (`taken` false: NotSupported), as a request of the box's own.
    mutating func result(identifier: String?, taken: Bool, succeeded: Bool) -> [UInt8] {
        let result = MediaRemoteProtocolMessages.commandResult(identifier: identifier, sendError: taken ? 0 : 10,
                                                              handlerStatus: taken && succeeded ? 0 : 2)
        let payload = PropertyList.dictionary(["params": .dictionary(["data": .data(MediaRemoteProtocolMessages.join([result]))])])
        defer { nextSequence += 1 }
        return DataStreamMessage.request(sequence: nextSequence, payload: payload.encoded(as: .binary)).encoded
    }

    /// The SEND_COMMANDs a payload carries.
    static func commands(in payload: [UInt8]) -> [(command: Int, identifier: String?)] {
        guard !payload.isEmpty, let plist = try? PropertyList(decoding: payload), case .data(let blob)? = plist["params"]?["data"] else { return [] }
        return MediaRemoteProtocolMessages.split(blob).compactMap(MediaRemoteProtocolMessages.command(in:))
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
