/// RTSP's `RTP-Info` header as RAOP uses it (RECORD, FLUSH, SET_PARAMETER): where the stream is
/// in RTP terms, `seq=1000;rtptime=352000`, either part alone (`rtptime=…` beside a volume or
/// progress change). One codec both ways: the sender writes it, the receiver reads it.
///
/// Read liberally: parts in any order, spaces around them, unknown parts (`url=`, `ssrc=`) and
/// a leading `url` form skipped; a number out of range leaves that part out.
public struct RTPInfo: Hashable, Sendable {
    /// The first packet's sequence number after the request (`seq`).
    public var sequence: UInt16?
    /// The RTP timestamp of the first frame after the request (`rtptime`).
    public var rtpTime: UInt32?

    /// A header value from its parts.
    public init(sequence: UInt16? = nil, rtpTime: UInt32? = nil) {
        self.sequence = sequence
        self.rtpTime = rtpTime
    }

    /// Reads a header value; parts it does not know, or cannot read, are left out.
    public init(parsing text: String) {
        for field in text.split(separator: ";") {
            let part = field.trimmingWhitespace()
            guard let equals = part.firstIndex(of: "=") else { continue }
            let value = part[part.index(after: equals)...].trimmingWhitespace()
            switch part[..<equals].trimmingWhitespace().lowercased() {
            case "seq": sequence = UInt16(value)
            case "rtptime": rtpTime = UInt32(value)
            default: continue
            }
        }
    }

    /// The header value: `seq=S;rtptime=T`, with only the parts there are.
    public var headerValue: String {
        [sequence.map { "seq=\($0)" }, rtpTime.map { "rtptime=\($0)" }].compactMap { $0 }.joined(separator: ";")
    }

    /// The header's name.
    public static let headerName = "RTP-Info"
}
