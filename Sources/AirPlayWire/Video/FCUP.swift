/// FCUP: how a receiver gets the playlists of a video an iPhone handed over as
/// `mlhls://localhost/master.m3u8` (YouTube's app). The phone alone can reach them, so the
/// receiver asks for each one on the `/reverse` event channel (`POST /event`, an
/// `unhandledURLRequest`), and the phone answers on its control connection with `POST /action`
/// (an `unhandledURLResponse` carrying the playlist's bytes). One codec both ways: the receiver
/// writes requests and reads answers, a sender that hands over the same way reads requests and
/// writes answers.
///
/// Facts from UxPlay 1.73.6 and apsdk: the constants below are what both send; a real phone
/// answers `FCUP_Response_StatusCode` 0 for success.
public struct FCUPRequest: Hashable, Sendable {
    /// The playlist wanted, as the phone named it (`mlhls://localhost/itag/234/mediadata.m3u8`).
    public var url: String
    /// Counts the requests of one video from 1 (the master); the answer names it back.
    public var requestID: Int
    /// The `/play`'s `X-Apple-Session-ID`, sent back as `X-Playback-Session-Id`.
    public var playbackSessionID: String
    /// The User-Agent the phone is told the player has (an Apple TV's AppleCoreMedia).
    public var userAgent: String

    /// `FCUP_Response_ClientInfo`, `FCUP_Response_ClientRef` and the `sessionID`s: fixed values
    /// every known receiver sends (their meaning is not known).
    public static let clientInfo: Int64 = 1
    /// `FCUP_Response_ClientRef`.
    public static let clientReference: Int64 = 40_030_004
    /// The `sessionID` of the event and of its request.
    public static let eventSessionID: Int64 = 1
    /// An Apple TV's AppleCoreMedia User-Agent, as receivers present themselves.
    public static let appleTVUserAgent = "AppleCoreMedia/1.0.0.11B554a (Apple TV; U; CPU OS 7_0_4 like Mac OS X; en_us)"
    /// The event's `type`.
    public static let eventType = "unhandledURLRequest"

    /// A request for `url`.
    public init(url: String, requestID: Int, playbackSessionID: String, userAgent: String = FCUPRequest.appleTVUserAgent) {
        self.url = url
        self.requestID = requestID
        self.playbackSessionID = playbackSessionID
        self.userAgent = userAgent
    }

    /// The `POST /event` body (sent as an XML plist).
    public var event: PropertyList {
        .dictionary([
            "sessionID": .integer(Self.eventSessionID),
            "type": .string(Self.eventType),
            "request": .dictionary([
                "FCUP_Response_ClientInfo": .integer(Self.clientInfo),
                "FCUP_Response_ClientRef": .integer(Self.clientReference),
                "FCUP_Response_RequestID": .integer(Int64(requestID)),
                "FCUP_Response_URL": .string(url),
                "sessionID": .integer(Self.eventSessionID),
                "FCUP_Response_Headers": .dictionary([
                    "X-Playback-Session-Id": .string(playbackSessionID),
                    "User-Agent": .string(userAgent),
                ]),
            ]),
        ])
    }

    /// Reads an event as a sender does: nil when it is not an `unhandledURLRequest` (a state
    /// event); throws when it is one without a URL or request id.
    public init?(event: PropertyList) throws(FCUPError) {
        guard event["type"]?.stringValue == Self.eventType else { return nil }
        guard let request = event["request"], case .dictionary = request else { throw FCUPError("unhandledURLRequest without a request dictionary") }
        guard let url = request["FCUP_Response_URL"]?.stringValue, url.utf8.count <= FCUPResponse.maximumURLBytes else {
            throw FCUPError("unhandledURLRequest without a FCUP_Response_URL string of at most 8 KiB")
        }
        guard let id = request["FCUP_Response_RequestID"]?.integerValue, let requestID = Int(exactly: id) else {
            throw FCUPError("unhandledURLRequest without an integer FCUP_Response_RequestID")
        }
        let headers = request["FCUP_Response_Headers"]
        self.init(url: url, requestID: requestID, playbackSessionID: headers?["X-Playback-Session-Id"]?.stringValue ?? "",
                  userAgent: headers?["User-Agent"]?.stringValue ?? "")
    }
}

/// The phone's answer to an `FCUPRequest`: the playlist's bytes, or a failure status.
public struct FCUPResponse: Hashable, Sendable {
    /// The URL answered, as requested.
    public var url: String
    /// The request answered, when the phone says (receivers that match by URL alone exist).
    public var requestID: Int?
    /// The phone's status: 0 (what phones send) or 2xx is success; absent is taken as success.
    public var statusCode: Int?
    /// The playlist's bytes.
    public var data: [UInt8]
    /// The HTTP headers the phone got with it (not needed to play).
    public var headers: [String: String]

    /// A playlist longer than this is refused (a two-hour film's condensed media playlist is
    /// a few hundred KiB).
    public static let maximumDataBytes = 8 << 20
    /// A URL longer than this is refused.
    public static let maximumURLBytes = 8 << 10
    /// More headers than this are refused.
    public static let maximumHeaders = 32

    /// An answer.
    public init(url: String, requestID: Int?, statusCode: Int? = 0, data: [UInt8], headers: [String: String] = [:]) {
        self.url = url
        self.requestID = requestID
        self.statusCode = statusCode
        self.data = data
        self.headers = headers
    }

    /// True when the phone says it got the playlist.
    public var succeeded: Bool {
        guard let statusCode else { return true }
        return statusCode == 0 || (200..<300).contains(statusCode)
    }

    /// The `/action` body's `params`.
    var params: PropertyList {
        var params: [String: PropertyList] = [
            "FCUP_Response_URL": .string(url),
            "FCUP_Response_Data": .data(data),
            "FCUP_Response_Headers": .dictionary(headers.mapValues { .string($0) }),
        ]
        if let requestID { params["FCUP_Response_RequestID"] = .integer(Int64(requestID)) }
        if let statusCode { params["FCUP_Response_StatusCode"] = .integer(Int64(statusCode)) }
        return .dictionary(params)
    }

    /// Reads `params`, bounded: the URL and the data are required.
    init(params: [String: PropertyList]) throws(FCUPError) {
        guard let url = params["FCUP_Response_URL"]?.stringValue else { throw FCUPError("unhandledURLResponse without a FCUP_Response_URL string") }
        guard url.utf8.count <= Self.maximumURLBytes else { throw FCUPError("FCUP_Response_URL longer than 8 KiB") }
        guard case .data(let data) = params["FCUP_Response_Data"] else {
            throw FCUPError("unhandledURLResponse without FCUP_Response_Data (the playlist's bytes)")
        }
        guard data.count <= Self.maximumDataBytes else { throw FCUPError("FCUP_Response_Data larger than 8 MiB") }
        var requestID: Int?
        if let value = params["FCUP_Response_RequestID"] {
            guard let id = value.integerValue, let exact = Int(exactly: id) else { throw FCUPError("FCUP_Response_RequestID is not an integer") }
            requestID = exact
        }
        var statusCode: Int?
        if let value = params["FCUP_Response_StatusCode"] {
            guard let code = value.integerValue, let exact = Int(exactly: code) else { throw FCUPError("FCUP_Response_StatusCode is not an integer") }
            statusCode = exact
        }
        var headers: [String: String] = [:]
        if case .dictionary(let given) = params["FCUP_Response_Headers"] {
            guard given.count <= Self.maximumHeaders else { throw FCUPError("more than 32 FCUP_Response_Headers") }
            for (name, value) in given { headers[name] = value.stringValue ?? value.integerValue.map(String.init) }
        }
        self.init(url: url, requestID: requestID, statusCode: statusCode, data: data, headers: headers)
    }
}

/// What a sender's `POST /action` says (a binary plist `{type, params}`).
public enum VideoAction: Hashable, Sendable {
    /// A playlist the receiver asked for over FCUP.
    case unhandledURLResponse(FCUPResponse)
    /// An item queued after the current one (`params.item`: a `/play` body's keys, `uuid` among them).
    case playlistInsert(item: [String: PropertyList])
    /// The item with this uuid leaves the queue (an ad ended, the quality changed, the next item came).
    case playlistRemove(uuid: String)
    /// A type nobody documented: answered, and otherwise ignored.
    case other(type: String)

    /// Reads an `/action` body's plist; throws with the reason a 400 carries.
    public init(plist: PropertyList) throws(FCUPError) {
        guard let type = plist["type"]?.stringValue else { throw FCUPError("/action without a type string") }
        guard let params = plist["params"], case .dictionary(let fields) = params else {
            throw FCUPError("/action \(type.prefix(64)) without a params dictionary")
        }
        switch type {
        case "unhandledURLResponse":
            self = .unhandledURLResponse(try FCUPResponse(params: fields))
        case "playlistInsert":
            guard case .dictionary(let item) = fields["item"] else { throw FCUPError("playlistInsert without an item dictionary") }
            self = .playlistInsert(item: item)
        case "playlistRemove":
            guard let uuid = fields["item"]?["uuid"]?.stringValue else { throw FCUPError("playlistRemove without item.uuid") }
            self = .playlistRemove(uuid: uuid)
        default:
            self = .other(type: String(type.prefix(64)))
        }
    }

    /// The `/action` body (sent as a binary plist).
    public var plist: PropertyList {
        switch self {
        case .unhandledURLResponse(let response):
            .dictionary(["type": .string("unhandledURLResponse"), "params": response.params])
        case .playlistInsert(let item):
            .dictionary(["type": .string("playlistInsert"), "params": .dictionary(["item": .dictionary(item)])])
        case .playlistRemove(let uuid):
            .dictionary(["type": .string("playlistRemove"), "params": .dictionary(["item": .dictionary(["uuid": .string(uuid)])])])
        case .other(let type):
            .dictionary(["type": .string(type), "params": .dictionary([:])])
        }
    }
}

/// Why an FCUP request or a `/action` body was refused.
public struct FCUPError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, for the 400's reason.
    public var description: String

    /// A refusal.
    public init(_ description: String) { self.description = description }
}
