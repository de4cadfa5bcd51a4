import NIOCore

/// Writes responses: status line, headers, `Content-Length`, blank line and body in one buffer,
/// so clients that read a reply with a single `recv` see it whole.
public struct AirPlayResponseEncoder: MessageToByteEncoder {
    /// Encoded messages.
    public typealias OutboundIn = AirPlayResponse

    /// An encoder.
    public init() {}

    /// Serialises one response.
    public func encode(data response: AirPlayResponse, out: inout ByteBuffer) throws {
        Self.write(response, into: &out)
    }

    /// Serialises one response into a buffer (also used by tests and the sender's servers).
    public static func write(_ response: AirPlayResponse, into out: inout ByteBuffer) {
        out.writeString("\(response.version) \(response.status) \(response.reason)\r\n")
        for field in response.headers where field.name.lowercased() != "content-length" {
            out.writeString("\(field.name): \(field.value)\r\n")
        }
        // 1xx and 204 carry no body; everything else states its length so the client can frame it.
        if response.status >= 200, response.status != 204 {
            out.writeString("Content-Length: \(response.body.readableBytes)\r\n")
        }
        out.writeString("\r\n")
        var body = response.body
        out.writeBuffer(&body)
    }
}
