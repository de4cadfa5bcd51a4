import NIOCore

/// The response codec (`AirPlayResponseDecoder`) as a NIO decoder, for the channels that read
/// replies: a sender's control connection, and the event channel on which the receiver asks
/// its sender for keys. Put it in a pipeline as `ByteToMessageHandler(AirPlayResponseFrameDecoder())`;
/// the handler behind it reads whole `AirPlayResponse`s.
public struct AirPlayResponseFrameDecoder: NIOSingleStepByteToMessageDecoder {
    /// Whole responses.
    public typealias InboundOut = AirPlayResponse

    private let decoder: AirPlayResponseDecoder
    private let held: HeldResponseBytes?

    /// A decoder within `decoder`'s limits; `held`, when given, always says how many bytes wait
    /// that are not yet a whole response.
    public init(decoder: AirPlayResponseDecoder = AirPlayResponseDecoder(), held: HeldResponseBytes? = nil) {
        self.decoder = decoder
        self.held = held
    }

    /// The next whole response, or nil for more bytes; throws on a malformed or oversized one.
    public mutating func decode(buffer: inout ByteBuffer) throws -> AirPlayResponse? {
        let response = try decoder.next(from: &buffer)
        held?.count = buffer.readableBytes
        return response
    }

    /// At the end of the stream: what is whole is read, a partial response is dropped.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> AirPlayResponse? {
        try decode(buffer: &buffer)
    }
}

/// How many bytes a response decoder holds that are not yet a whole response: a sender checks
/// it is 0 when it turns encryption on, since bytes read before then came in clear.
/// Used on its channel's event loop only.
public final class HeldResponseBytes {
    /// Bytes waiting in the decoder.
    public var count = 0
    /// None yet.
    public init() {}
}
