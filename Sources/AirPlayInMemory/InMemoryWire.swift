import AirPlayWire
import NIOCore

/// The bytes between the two ends of the in-memory tier: each request and response crosses
/// its codecs both ways, as over a socket, so each end is handed what the other's bytes decode
/// to (`Content-Length`, framing, header folding and all), as swift-nio's `interactInMemory`
/// does for channels.
public enum InMemoryWire {
    /// `request` as the receiver's decoder reads the sender's encoding of it; a rejection is
    /// the refusal the receiver answers instead.
    public static func carry(_ request: AirPlayRequest) -> Result<AirPlayRequest, RequestRejection> {
        var bytes = ByteBuffer()
        AirPlayRequestEncoder.write(request, into: &bytes)
        var decoder = AirPlayRequestDecoder()
        switch decoder.next(from: &bytes) {
        case .request(let decoded)?: return .success(decoded)
        case .rejected(let rejection)?: return .failure(rejection)
        case nil: return .failure(RequestRejection(status: 400, reason: "the request's bytes end before the request does"))
        }
    }

    /// `response` as the sender's decoder reads the receiver's encoding of it; a response whose
    /// bytes do not decode is a 502 naming why (a codec fault the tests then see).
    public static func carry(_ response: AirPlayResponse) -> AirPlayResponse {
        var bytes = ByteBuffer()
        AirPlayResponseEncoder.write(response, into: &bytes)
        do {
            guard let decoded = try AirPlayResponseDecoder().next(from: &bytes) else {
                return .text(status: 502, "the response's bytes end before the response does")
            }
            return decoded
        } catch {
            return .text(status: 502, "the response's bytes do not decode: \(error)")
        }
    }
}
