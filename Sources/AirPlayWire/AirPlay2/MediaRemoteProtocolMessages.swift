/// MediaRemote protocol messages as a data stream (or a DEVICE_INFO `POST /command`) carries
/// them: each a varint length then a protobuf `ProtocolMessage`, whose field 1 is its type
/// (15 DEVICE_INFO, 4 SET_STATE, 1 SEND_COMMAND, …) and field 2 its identifier. airplayd reads
/// the type of each, and of a SEND_COMMAND its command, to carry it out and answer it with a
/// SEND_COMMAND_RESULT; nothing else of the protocol (field numbers as pyatv's definitions).
public enum MediaRemoteProtocolMessages {
    /// The most messages read from one blob.
    public static let maximumCount = 64
    /// `ProtocolMessage.type` of a command.
    public static let sendCommand = 1
    /// `ProtocolMessage.type` of a command's result.
    public static let sendCommandResult = 2

    /// The messages of a blob (varint length + protobuf, repeated); a truncated one ends the list.
    public static func split(_ blob: [UInt8]) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        var index = 0
        while index < blob.count, messages.count < maximumCount {
            guard let (length, next) = varint(blob, at: index), length <= UInt64(blob.count - next) else { break }
            messages.append(Array(blob[next..<(next + Int(length))]))
            index = next + Int(length)
        }
        return messages
    }

    /// The blob carrying `messages`.
    public static func join(_ messages: [[UInt8]]) -> [UInt8] {
        messages.flatMap { encodeVarint(UInt64($0.count)) + $0 }
    }

    /// A `ProtocolMessage`'s type (field 1, a varint), when its first field is that.
    public static func type(of message: [UInt8]) -> Int? {
        guard message.first == 0x08, let (value, _) = varint(message, at: 1), value < 1 << 31 else { return nil }
        return Int(value)
    }

    /// A SEND_COMMAND's command (`sendCommandMessage`, field 6, its field 1: pyatv's `Command`
    /// numbering, 1 play, 2 pause, 3 play/pause, 4 stop, 5 next, 6 previous, 13-16 skip ±15/30 s,
    /// 18/19 skip forward/back) and the message's identifier; nil for another message.
    public static func command(in message: [UInt8]) -> (command: Int, identifier: String?)? {
        let fields = self.fields(of: message)
        guard fields.first(where: { $0.number == 1 })?.value == UInt64(sendCommand),
              let inner = fields.first(where: { $0.number == 6 })?.bytes,
              let command = self.fields(of: inner).first(where: { $0.number == 1 })?.value, command < 1 << 31 else { return nil }
        let identifier = fields.first { $0.number == 2 }?.bytes.map { String(decoding: $0.prefix(128), as: UTF8.self) }
        return (Int(command), identifier)
    }

    /// A SEND_COMMAND carrying `command` (what a sender writes; tests).
    public static func commandMessage(_ command: Int, identifier: String) -> [UInt8] {
        varintField(1, UInt64(sendCommand)) + bytesField(2, Array(identifier.utf8)) + bytesField(6, varintField(1, UInt64(command)))
    }

    /// The SEND_COMMAND_RESULT answering `identifier`: `sendError` (0 none, 8 no command
    /// handlers, 10 not supported) and `handlerReturnStatus` (0 success, 2 command failed).
    public static func commandResult(identifier: String?, sendError: Int, handlerStatus: Int) -> [UInt8] {
        var message = varintField(1, UInt64(sendCommandResult))
        if let identifier { message += bytesField(2, Array(identifier.utf8)) }
        return message + bytesField(7, varintField(1, UInt64(sendError)) + varintField(2, UInt64(handlerStatus)))
    }

    /// A result's `sendError` and `handlerReturnStatus` (tests, and what a sender reads).
    public static func result(in message: [UInt8]) -> (sendError: Int, handlerStatus: Int)? {
        let fields = self.fields(of: message)
        guard fields.first(where: { $0.number == 1 })?.value == UInt64(sendCommandResult),
              let inner = fields.first(where: { $0.number == 7 })?.bytes else { return nil }
        let innerFields = self.fields(of: inner)
        return (Int(innerFields.first { $0.number == 1 }?.value ?? 0), Int(innerFields.first { $0.number == 2 }?.value ?? 0))
    }

    /// One top-level protobuf field: a varint's value or a length-delimited field's bytes.
    struct Field {
        var number: Int
        var value: UInt64?
        var bytes: [UInt8]?
    }

    /// The fields of a protobuf message, up to the first it cannot read (64 at most); fixed
    /// 32- and 64-bit fields are skipped over.
    static func fields(of message: [UInt8]) -> [Field] {
        var fields: [Field] = []
        var index = 0
        while index < message.count, fields.count < 64 {
            guard let (key, afterKey) = varint(message, at: index), key >> 3 > 0, key >> 3 < 1 << 29 else { break }
            let number = Int(key >> 3)
            switch key & 7 {
            case 0:
                guard let (value, next) = varint(message, at: afterKey) else { return fields }
                fields.append(Field(number: number, value: value))
                index = next
            case 2:
                guard let (length, next) = varint(message, at: afterKey), length <= UInt64(message.count - next) else { return fields }
                fields.append(Field(number: number, bytes: Array(message[next..<(next + Int(length))])))
                index = next + Int(length)
            case 1 where afterKey + 8 <= message.count: index = afterKey + 8
            case 5 where afterKey + 4 <= message.count: index = afterKey + 4
            default: return fields
            }
        }
        return fields
    }

    static func varintField(_ number: Int, _ value: UInt64) -> [UInt8] { encodeVarint(UInt64(number) << 3) + encodeVarint(value) }

    static func bytesField(_ number: Int, _ bytes: [UInt8]) -> [UInt8] {
        encodeVarint(UInt64(number) << 3 | 2) + encodeVarint(UInt64(bytes.count)) + bytes
    }

    /// A protobuf varint at `index`: its value and the index after it.
    static func varint(_ bytes: [UInt8], at index: Int) -> (UInt64, Int)? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var position = index
        while position < bytes.count, shift < 64 {
            let byte = bytes[position]
            value |= UInt64(byte & 0x7F) << shift
            position += 1
            if byte & 0x80 == 0 { return (value, position) }
            shift += 7
        }
        return nil
    }

    static func encodeVarint(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            let low = UInt8(rest & 0x7F)
            rest >>= 7
            bytes.append(rest == 0 ? low : low | 0x80)
        } while rest != 0
        return bytes
    }
}
