import AirPlayWire
import NIOCore

/// What a receiver's `GET /info` answer says it can do, for a receiver given as HOST:PORT (no
/// TXT record to read): its features, and the `audioFormat` bits it decodes per stream type.
/// Apple's senders ask this first on every connection; AirPlay 1 speakers may not answer it.
public struct ReceiverInfo: Hashable, Sendable {
    /// `features` (the 64 bits of the records' `ft`/`features`).
    public var features: FeatureSet
    /// `supportedFormats.bufferStream`: the formats a buffered (type 103) stream may take.
    public var bufferedFormats: UInt64?
    /// `supportedFormats.audioStream`: the formats a realtime (type 96) stream may take.
    public var realtimeFormats: UInt64?

    /// Info from its parts.
    public init(features: FeatureSet, bufferedFormats: UInt64? = nil, realtimeFormats: UInt64? = nil) {
        self.features = features
        self.bufferedFormats = bufferedFormats
        self.realtimeFormats = realtimeFormats
    }

    /// Reads an answer's property list; nil without a `features` integer (then it says nothing
    /// a sender can go by).
    public init?(_ list: PropertyList) {
        guard let features = list["features"]?.integerValue else { return nil }
        self.features = FeatureSet(rawValue: UInt64(bitPattern: features))
        let formats = list["supportedFormats"]
        bufferedFormats = formats?["bufferStream"]?.integerValue.map { UInt64(bitPattern: $0) }
        realtimeFormats = formats?["audioStream"]?.integerValue.map { UInt64(bitPattern: $0) }
    }
}

/// How a receiver took `GET /info`.
public enum ReceiverInfoAnswer: Hashable, Sendable {
    /// A property list with features.
    case said(ReceiverInfo)
    /// An answer that says nothing usable (an AirPlay 1 speaker's 404 or 501, a body that is not
    /// a property list): the connection goes on.
    case nothing
    /// No answer in time, or the connection failed: a late answer would be read as the next
    /// request's, so the connection must not be used again.
    case silent
}

extension ReceiverConnection {
    /// `GET /info` as `info()` asks it, with Apple's form of User-Agent.
    package static let infoRequest = AirPlayRequest(method: "GET", target: "/info", version: .http11,
                                                    headers: ["User-Agent": RAOPClient.userAgent], body: ByteBuffer())

    /// Asks `GET /info` (Apple's User-Agent: HomePods refuse others) and reads its answer,
    /// waiting at most `timeout` seconds.
    public func info(timeout: Double = 3) async -> ReceiverInfoAnswer {
        guard let response = try? await send(Self.infoRequest, timeout: timeout) else { return .silent }
        return Self.reading(response)
    }

    /// What an answer to `GET /info` says: its features and formats, or nothing usable.
    static func reading(_ response: AirPlayResponse) -> ReceiverInfoAnswer {
        guard response.status == 200, let list = try? PropertyList(decoding: Array(response.body.readableBytesView)),
              let info = ReceiverInfo(list) else { return .nothing }
        return .said(info)
    }

    /// `GET /info` as iOS asks it before it hands a video over (RTSP/1.0 with a CSeq, Apple's
    /// User-Agent), on a connection of its own, closed after. A video receiver types a
    /// connection by its first request (UxPlay takes an HTTP request without a CSeq for an HLS
    /// fetch, then refuses `/play` on that connection), so the video's connection is never
    /// asked this.
    public static func probeInfo(host: String, port: Int, timeout: Double = 3) async -> ReceiverInfoAnswer {
        guard let connection = try? await ReceiverConnection.connect(host: host, port: port) else { return .silent }
        defer { Task { await connection.close() } }
        let request = AirPlayRequest(method: "GET", target: "/info", version: .rtsp10,
                                     headers: ["CSeq": "1", "User-Agent": RAOPClient.userAgent], body: ByteBuffer())
        guard let response = try? await connection.send(request, timeout: timeout) else { return .silent }
        return reading(response)
    }
}
