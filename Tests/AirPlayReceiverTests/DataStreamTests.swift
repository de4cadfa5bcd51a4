@testable import AirPlayReceiver
import AirPlayPairing
import AirPlayPlist
import AirPlayTesting
import AirPlayWire
import Testing

/// AirPlay 2 data streams (SETUP `streams: [{type: 130}]`), against Protocol/vectors/datastream.json,
/// which pyatv's own code made: the keys from the pairing's secret and the seed, HAP's frames,
/// the 32-byte message header and the `rply` every `sync` gets. `Protocol/airplay2.md` §18.
@Suite struct DataStreamTests {
    struct File: Decodable {
        struct Vector: Decodable {
            var seed, senderToReceiverKey, receiverToSenderKey, setup, requestFrames, replyFrames: String
        }
        var request, reply, longRequest, protobuf: String
        var vectors: [Vector]
    }

    static func file() throws -> File { try ProtocolVectors.load(File.self, from: "datastream.json") }
    static func bytes(_ hex: String) throws -> [UInt8] { try #require(VectorDocument.bytes(hex: hex)) }
    static let secret = (0..<64).map { UInt8($0) }

    /// The SETUP reads as a data stream whose seed (even one past 2^63, as senders draw them)
    /// gives pyatv's keys.
    @Test func theSetupsSeedGivesPyatvsKeys() throws {
        for vector in try Self.file().vectors {
            guard case .dataStream(let setup) = try AirPlay2Setup(plist: try PropertyList(decoding: try Self.bytes(vector.setup))) else {
                Issue.record("not a data stream: seed \(vector.seed)")
                continue
            }
            #expect(String(setup.seed) == vector.seed && setup.clientTypeUUID == DataStreamSetup.mediaRemoteClientType)
            let keys = try DataStreamKeys(sharedSecret: Self.secret, seed: setup.seed)
            #expect(keys.senderToReceiver == (try Self.bytes(vector.senderToReceiverKey)), "seed \(vector.seed)")
            #expect(keys.receiverToSender == (try Self.bytes(vector.receiverToSenderKey)))
            #expect(AirPlay2Setup.dataStream(setup).plist == (try PropertyList(decoding: try Self.bytes(vector.setup))), "written back as read")
        }
    }

    /// pyatv's frames open with the sender's key into its two requests; the exchange answers
    /// each with its `rply`, which sealed with the receiver's key is pyatv's reply frame.
    @Test func theExchangeAnswersPyatvsRequestsAsPyatvExpects() throws {
        let file = try Self.file()
        for vector in file.vectors {
            var opener = try EncryptedFrames.Opener(key: try Self.bytes(vector.senderToReceiverKey))
            let plain = try opener.open(try Self.bytes(vector.requestFrames))
            #expect(plain == (try Self.bytes(file.request)) + (try Self.bytes(file.longRequest)))
            var exchange = DataStreamExchange()
            // The bytes as TCP may cut them: in pieces of 7.
            var actions: [DataStreamExchange.Action] = []
            for start in stride(from: 0, to: plain.count, by: 7) { actions += exchange.received(Array(plain[start..<min(start + 7, plain.count)])) }
            let writes = actions.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
            let reply = try Self.bytes(file.reply)
            #expect(writes.count == 2 && writes.first == reply)
            #expect(actions.contains(.received("sync #4886718345: MediaRemote DEVICE_INFO")), "\(actions.prefix(1))")
            var sealer = try EncryptedFrames.Sealer(key: try Self.bytes(vector.receiverToSenderKey))
            #expect(try sealer.seal(writes[0]) == (try Self.bytes(vector.replyFrames)))
        }
    }

    /// The header both ways: what pyatv writes reads back, and is written back, byte for byte.
    @Test func messagesRoundTrip() throws {
        let file = try Self.file()
        var reader = DataStreamMessage.Reader()
        let messages = try reader.read(try Self.bytes(file.request) + (try Self.bytes(file.reply)))
        #expect(messages.count == 2 && reader.pendingCount == 0)
        #expect(messages[0].isRequest && messages[0].sequence == 0x1_2345_6789 && messages[0].typeName == "sync")
        #expect(messages[1] == .reply(to: 0x1_2345_6789) && !messages[1].isRequest)
        let request = try Self.bytes(file.request), reply = try Self.bytes(file.reply)
        #expect(messages[0].encoded == request && messages[1].encoded == reply)
        let blob = MediaRemoteProtocolMessages.join([try Self.bytes(file.protobuf), [0x08, 0x04]])
        #expect(MediaRemoteProtocolMessages.split(blob).map(MediaRemoteProtocolMessages.type(of:)) == [15, 4])
    }

    /// A SEND_COMMAND is carried out as the box's remotes' commands are, and answered with a
    /// SEND_COMMAND_RESULT of the box's own (a `sync`, its own sequence numbers); a command the
    /// box does not take is answered NotSupported.
    @Test func aSendCommandIsCarriedOutAndAnswered() throws {
        var exchange = DataStreamExchange()
        let blob = MediaRemoteProtocolMessages.join([MediaRemoteProtocolMessages.commandMessage(2, identifier: "cmd-1"),
                                                     MediaRemoteProtocolMessages.commandMessage(21, identifier: "cmd-2")])
        let payload = PropertyList.dictionary(["params": .dictionary(["data": .data(blob)])]).encoded(as: .binary)
        let actions = exchange.received(DataStreamMessage.request(sequence: 9, payload: payload).encoded)
        #expect(actions.contains(.command(.pause, number: 2, identifier: "cmd-1")))
        #expect(actions.contains(.command(nil, number: 21, identifier: "cmd-2")), "rating a track is not the box's to do")
        #expect(actions.contains(.write(DataStreamMessage.reply(to: 9).encoded)))

        var reader = DataStreamMessage.Reader()
        let answers = try reader.read(exchange.result(identifier: "cmd-1", taken: true, succeeded: true)
                                      + exchange.result(identifier: "cmd-2", taken: false, succeeded: false))
        #expect(answers.count == 2 && answers.allSatisfy(\.isRequest) && answers[1].sequence == answers[0].sequence + 1)
        func result(_ message: DataStreamMessage) throws -> (Int, Int)? {
            guard case .data(let blob)? = try PropertyList(decoding: message.payload)["params"]?["data"],
                  let only = MediaRemoteProtocolMessages.split(blob).first else { return nil }
            return MediaRemoteProtocolMessages.result(in: only).map { ($0.sendError, $0.handlerStatus) }
        }
        #expect(try result(answers[0]) ?? (-1, -1) == (0, 0) && result(answers[1]) ?? (-1, -1) == (10, 2))
    }

    /// Hostile sizes close the stream (it cannot be resynchronised); a truncated MediaRemote
    /// blob ends its list; a payload that is no plist is named, not trusted.
    @Test func hostileBytesCloseTheStream() {
        var tooSmall = DataStreamExchange()
        #expect(tooSmall.received([0, 0, 0, 8] + [UInt8](repeating: 0, count: 28)).first.map { if case .close = $0 { true } else { false } } == true)
        var tooLarge = DataStreamExchange()
        #expect(tooLarge.received([0x7F, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 28)).count == 1)
        #expect(MediaRemoteProtocolMessages.split([0x05, 0x08, 0x01]).isEmpty)
        #expect(MediaRemoteProtocolMessages.split([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).isEmpty)
        #expect(DataStreamExchange.summary(of: [1, 2, 3]) == "3 bytes, not a property list")
        #expect(DataStreamMessage.request(sequence: 1, payload: []).encoded.count == DataStreamMessage.headerLength)
    }

    /// The reply names the stream and its port, as pyatv reads it (`streams[0].dataPort`).
    @Test func theReplyNamesThePort() {
        let reply = DataStreamSetup.reply(streamID: 1, dataPort: 40123)
        guard case .array(let streams)? = reply["streams"] else { Issue.record("no streams: \(reply)"); return }
        #expect(streams.first?["dataPort"]?.integerValue == 40123 && streams.first?["type"]?.integerValue == 130)
    }
}
