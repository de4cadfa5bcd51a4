import NIOCore

extension AirPlayResponse {
    /// A response whose body is one line of UTF-8 text: the reason a sender (or its user) reads.
    public static func text(status: Int, _ text: String) -> AirPlayResponse {
        AirPlayResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: ByteBuffer(string: text + "\n"))
    }
}
