import AirPlayWire

/// `POST /fp-setup`: the two-message FairPlay ("FPLY") setup handshake an iPhone or Mac makes
/// after pairing and before it plays to an AirPlay 2 receiver that sets feature bit 14. Without
/// an answer, iOS stops there ("no supported authentication types").
///
/// Why it is safe: the answers are fixed protocol data, the same bytes shairport-sync, UxPlay,
/// RPiPlay and airplay2-receiver send (`Protocol/vectors/fp-setup.json`, with provenance; the
/// tables are generated from it). It authenticates nothing of ours and decrypts nothing: the
/// AirPlay 2 audio key (`shk`) arrives inside the pair-verified, encrypted control connection.
///
/// Message 1 is 16 bytes; its byte 14 (the mode, 0 to 3) picks one of four 142-byte replies.
/// Message 2 is 164 bytes; its reply is a fixed 12-byte header and the request's last 20 bytes.
/// Anything else gets 400 with the reason (shairport-sync answers 200 to everything).
public enum FairPlaySetup {
    /// The 12 bytes every FPLY message starts with: `FPLY`, version, type 1 (setup), sequence,
    /// four zero bytes, and the length of what follows.
    static let magic: [UInt8] = Array("FPLY".utf8)
    /// Message 1's length and sequence byte.
    static let firstLength = 16, firstSequence: UInt8 = 1
    /// Message 2's length and sequence byte.
    static let secondLength = 164, secondSequence: UInt8 = 3
    /// How many of message 2's last bytes its reply carries back.
    static let echoedLength = 20
    /// Where message 1 names its mode.
    static let modeIndex = 14

    /// The fixed replies to message 1, by mode.
    static let firstReplies: [[UInt8]] = firstRepliesHex.map { TextFormatting.bytes(hex: $0)! }
    /// The fixed header of the reply to message 2.
    static let secondReplyHeader: [UInt8] = TextFormatting.bytes(hex: secondReplyHeaderHex)!

    /// What a request body is answered with: the reply's bytes, or why it was refused.
    public enum Outcome: Equatable, Sendable {
        /// 200, `application/octet-stream`, these bytes.
        case reply([UInt8])
        /// 400 with this reason.
        case refused(String)
    }

    /// The answer to one `/fp-setup` body.
    public static func answer(_ body: [UInt8]) -> Outcome {
        guard body.count >= 12, Array(body.prefix(4)) == magic else {
            return .refused("an fp-setup message starts with FPLY and a 12-byte header (\(body.count) bytes received)")
        }
        // Byte 4 is the version: every sender seen sends 3; receivers that check it for
        // nothing else than logging accept others, so do we.
        guard body[5] == 1 else { return .refused("fp-setup message type \(body[5]) is not 1 (setup)") }
        switch (body[6], body.count) {
        case (firstSequence, firstLength):
            let mode = Int(body[modeIndex])
            guard firstReplies.indices.contains(mode) else { return .refused("fp-setup mode \(mode) is not 0 to 3") }
            return .reply(firstReplies[mode])
        case (secondSequence, secondLength):
            return .reply(secondReplyHeader + body.suffix(echoedLength))
        case (firstSequence, _), (secondSequence, _):
            let wanted = body[6] == firstSequence ? firstLength : secondLength
            return .refused("fp-setup message \(body[6] == firstSequence ? 1 : 2) is \(wanted) bytes, not \(body.count)")
        default:
            return .refused("fp-setup sequence \(body[6]) is neither 1 nor 3")
        }
    }

    /// The HTTP/RTSP response for a request's body.
    public static func response(to body: [UInt8]) -> AirPlayResponse {
        switch answer(body) {
        case .reply(let bytes):
            var response = AirPlayResponse(status: 200, headers: ["Content-Type": "application/octet-stream"])
            response.body.writeBytes(bytes)
            return response
        case .refused(let reason):
            return .text(status: 400, reason)
        }
    }
}
