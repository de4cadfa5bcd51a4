import AirPlayPairing
import NIOCore
import NIOEmbedded
import Testing

/// The encrypted control channel at the NIO level: clear until enabled, then HAP frames both
/// ways with each role's keys; a frame that does not authenticate closes the connection.
@Suite struct EncryptedChannelHandlerTests {
    let keys: ControlChannelKeys
    init() throws { keys = try ControlChannelKeys(sharedSecret: [UInt8](repeating: 3, count: 32)) }

    private func channel(_ role: EncryptedChannelHandler.Role) throws -> (EmbeddedChannel, EncryptedChannelHandler) {
        let handler = EncryptedChannelHandler(role: role)
        let channel = EmbeddedChannel(handler: handler)
        return (channel, handler)
    }

    private func bytes(_ buffer: ByteBuffer?) -> [UInt8] { buffer.map { Array($0.readableBytesView) } ?? [] }

    @Test func clearUntilEnabledThenSealedAndOpenedBetweenTheTwoRoles() throws {
        let (receiver, receiverCipher) = try channel(.receiver)
        let (sender, senderCipher) = try channel(.sender)
        // Before enable: bytes pass as they are (the M4 response itself leaves in clear).
        try receiver.writeOutbound(ByteBuffer(string: "M4"))
        #expect(bytes(try receiver.readOutbound(as: ByteBuffer.self)) == Array("M4".utf8))

        try receiverCipher.enable(keys: keys)
        try senderCipher.enable(keys: keys)
        try sender.writeOutbound(ByteBuffer(string: "GET /info RTSP/1.0\r\n\r\n"))
        let frame = bytes(try sender.readOutbound(as: ByteBuffer.self))
        #expect(frame.count == 2 + 22 + 16 && frame[0] == 22 && frame[1] == 0)
        // The receiver reads it, even delivered in two pieces.
        try receiver.writeInbound(ByteBuffer(bytes: frame.prefix(5)))
        #expect(try receiver.readInbound(as: ByteBuffer.self) == nil)
        try receiver.writeInbound(ByteBuffer(bytes: frame.dropFirst(5)))
        #expect(bytes(try receiver.readInbound(as: ByteBuffer.self)) == Array("GET /info RTSP/1.0\r\n\r\n".utf8))
        // And the other way.
        try receiver.writeOutbound(ByteBuffer(string: "RTSP/1.0 200 OK\r\n\r\n"))
        try sender.writeInbound(try #require(try receiver.readOutbound(as: ByteBuffer.self)))
        #expect(bytes(try sender.readInbound(as: ByteBuffer.self)) == Array("RTSP/1.0 200 OK\r\n\r\n".utf8))
    }

    @Test func aFrameThatDoesNotAuthenticateClosesTheConnection() throws {
        let (receiver, receiverCipher) = try channel(.receiver)
        let (sender, senderCipher) = try channel(.sender)
        try receiverCipher.enable(keys: keys)
        try senderCipher.enable(keys: keys)
        try sender.writeOutbound(ByteBuffer(string: "POST /play"))
        var frame = bytes(try sender.readOutbound(as: ByteBuffer.self))
        frame[4] ^= 0x20
        try receiver.writeInbound(ByteBuffer(bytes: frame))
        #expect(try receiver.readInbound(as: ByteBuffer.self) == nil)
        #expect(!receiver.isActive, "closed: the stream cannot be resynchronised")
    }
}
