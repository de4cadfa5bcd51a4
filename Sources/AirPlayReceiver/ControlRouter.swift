import AirPlayPlist
import AirPlayWire
import NIOCore

/// Answers requests on the control port. Stateless per request; session state arrives with later features.
public struct ControlRouter: Sendable {
    /// Supplies the current server info (the name can change after an mDNS collision).
    public var serverInfo: @Sendable () -> ServerInfo

    /// A router reading server info from a closure.
    public init(serverInfo: @escaping @Sendable () -> ServerInfo) {
        self.serverInfo = serverInfo
    }

    /// The paths served and the methods each allows.
    static let routes: [String: [String]] = [
        "/server-info": ["GET"],
        "/info": ["GET"],
    ]

    /// The response to one request. Every reply carries `Server` and, for RTSP, the request's `CSeq`.
    public func respond(to request: AirPlayRequest) -> AirPlayResponse {
        var response = route(request)
        response.version = request.version
        Self.addCommonHeaders(&response, cseq: request.cseq)
        return response
    }

    /// The response to a request the decoder refused.
    public func respond(to rejection: RequestRejection) -> AirPlayResponse {
        var response = Self.textResponse(status: rejection.status, rejection.reason)
        response.version = rejection.version.name == "PTTH" ? .http11 : rejection.version
        if rejection.closesConnection { response.headers.add(name: "Connection", value: "close") }
        Self.addCommonHeaders(&response, cseq: rejection.cseq)
        return response
    }

    private func route(_ request: AirPlayRequest) -> AirPlayResponse {
        let path = request.path
        guard let methods = Self.routes[path] else {
            return Self.textResponse(status: 404, "no resource at \(path.prefix(200))")
        }
        guard methods.contains(request.method) else {
            var response = Self.textResponse(status: 405, "\(request.method) is not allowed on \(path)")
            response.headers.add(name: "Allow", value: methods.joined(separator: ", "))
            return response
        }
        switch path {
        case "/server-info", "/info":
            return Self.plistResponse(serverInfo().propertyList, format: Self.negotiatePlistFormat(request))
        default:
            return Self.textResponse(status: 404, "no resource at \(path)")
        }
    }

    /// Binary when the client asks for it (`Accept`) or speaks it (a binary plist body), else XML,
    /// which every known client reads.
    static func negotiatePlistFormat(_ request: AirPlayRequest) -> PropertyListFormat {
        let binaryType = PropertyListFormat.binary.contentType
        if let accept = request.headers["Accept"]?.lowercased() {
            if accept.contains(binaryType) { return .binary }
            if accept.contains("xml") { return .xml }
        }
        if request.headers["Content-Type"]?.lowercased().contains(binaryType) == true { return .binary }
        if request.body.readableBytesView.starts(with: Array("bplist".utf8)) { return .binary }
        return .xml
    }

    static func plistResponse(_ plist: PropertyList, format: PropertyListFormat, status: Int = 200) -> AirPlayResponse {
        var body = ByteBuffer()
        body.writeBytes(plist.encoded(as: format))
        return AirPlayResponse(status: status, headers: ["Content-Type": format.contentType], body: body)
    }

    static func textResponse(status: Int, _ text: String) -> AirPlayResponse {
        AirPlayResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"],
                        body: ByteBuffer(string: text + "\n"))
    }

    private static func addCommonHeaders(_ response: inout AirPlayResponse, cseq: String?) {
        response.headers.replaceOrAdd(name: "Server", value: ReceiverIdentity.serverHeader)
        if let cseq { response.headers.replaceOrAdd(name: "CSeq", value: cseq) }
    }
}
