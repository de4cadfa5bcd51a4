import AirPlayCrypto
import AirPlayWire
import Foundation
import NIOCore

/// Who the sender is to a receiver, sent on every RTSP request: `DACP-ID` and `Active-Remote`
/// (which a receiver would use to reach back for remote control) and `Client-Instance`.
public struct RAOPClientIdentity: Sendable {
    /// 64-bit id as 16 hex digits.
    public var dacpID: String
    /// A 32-bit decimal token.
    public var activeRemote: String

    /// A fresh identity for this run.
    public init() {
        // The first hex digit is never 0: shairport-sync 3.3.8 strips leading zeros from the
        // `iTunes_Ctrl_` service name but not from the `DACP-ID` header, so a remote whose id
        // starts with 0 is never found (one run in sixteen).
        dacpID = String(format: "%016llX", UInt64.random(in: 0x1000_0000_0000_0000...UInt64.max))
        activeRemote = String(UInt32.random(in: 1...UInt32.max))
    }
}

/// The RTSP half of a RAOP session with one receiver: CSeq, `Session`, the identity headers,
/// RFC 2617 Digest when the receiver answers 401, and `Apple-Challenge` checking.
public final class RAOPClient: @unchecked Sendable {
    /// The control connection.
    public let connection: ReceiverConnection
    private let identity: RAOPClientIdentity
    private let password: String?
    private let uri = "rtsp://\(UUID().uuidString.prefix(8).lowercased())/\(UInt32.random(in: 1...UInt32.max))"
    private var cseq = 0
    private var digest: (realm: String, nonce: String)?
    /// The session id from the SETUP reply.
    public var session: String?

    /// A client on a connection; `password` answers Digest challenges.
    public init(connection: ReceiverConnection, identity: RAOPClientIdentity, password: String?) {
        self.connection = connection
        self.identity = identity
        self.password = password
    }

    /// Sends a request; a 401 with a Digest challenge is answered once with the password. Any
    /// status outside 2xx throws `.refused`.
    @discardableResult
    public func request(_ method: String, target: String? = nil, headers: MessageHeaders = [:], body: [UInt8] = [],
                        contentType: String? = nil) async throws(SenderError) -> AirPlayResponse {
        let response = try await exchange(SenderRequest(method: method, target: target, headers: headers, body: body, contentType: contentType))
        guard (200..<300).contains(response.status) else { throw SenderSetupMachine.refusal(method, response) }
        return response
    }

    /// Sends a request made elsewhere (a setup machine's); any status outside 2xx throws `.refused`.
    @discardableResult
    package func request(_ request: SenderRequest) async throws(SenderError) -> AirPlayResponse {
        let response = try await exchange(request)
        guard (200..<300).contains(response.status) else { throw SenderSetupMachine.refusal(request.method, response) }
        return response
    }

    /// Sends a request and returns its answer whatever the status, except that a 401 with a
    /// Digest challenge is answered once with the password (and throws without one).
    package func exchange(_ request: SenderRequest) async throws(SenderError) -> AirPlayResponse {
        var response = try await send(request)
        if response.status == 401 {
            guard let password, !password.isEmpty else {
                throw SenderError(.refused(status: 401), "the receiver wants a password: give --password")
            }
            guard let challenge = response.headers["WWW-Authenticate"].flatMap(Self.digestChallenge) else {
                throw SenderError(.refused(status: 401), "the receiver wants an authentication other than Digest")
            }
            digest = challenge
            response = try await send(request)
            if response.status == 401 { throw SenderError(.refused(status: 401), "the receiver refused the password") }
        }
        return response
    }

    private func send(_ request: SenderRequest) async throws(SenderError) -> AirPlayResponse {
        cseq += 1
        let authorization = digest.flatMap { digest in
            password.map { Self.authorization(method: request.method, uri: request.target ?? uri, realm: digest.realm, nonce: digest.nonce, password: $0) }
        }
        return try await connection.send(Self.frame(request, uri: uri, cseq: cseq, identity: identity, session: session,
                                                    authorization: authorization))
    }

    /// Our `User-Agent`: Apple's form (`AirPlay/VERSION`, the version our SETUP's `sourceVersion`
    /// gives), which HomePod OS 27 wants before it answers `GET /info` (403 to anything else),
    /// with this project named after it.
    package static let userAgent = "AirPlay/\(AirPlay2SenderSession.sourceVersion) (swift-airplay)"

    /// The request as it goes on the wire: the target (the session's URI by default), then CSeq,
    /// our User-Agent and identity, the session, the content type and Digest.
    package static func frame(_ request: SenderRequest, uri: String, cseq: Int, identity: RAOPClientIdentity, session: String?,
                              authorization: String? = nil) -> AirPlayRequest {
        var all = request.headers
        all.add(name: "CSeq", value: String(cseq))
        all.add(name: "User-Agent", value: userAgent)
        all.add(name: "DACP-ID", value: identity.dacpID)
        all.add(name: "Active-Remote", value: identity.activeRemote)
        all.add(name: "Client-Instance", value: identity.dacpID)
        if let session { all.add(name: "Session", value: session) }
        if let contentType = request.contentType { all.add(name: "Content-Type", value: contentType) }
        if let authorization { all.add(name: "Authorization", value: authorization) }
        var buffer = ByteBuffer()
        buffer.writeBytes(request.body)
        return AirPlayRequest(method: request.method, target: request.target ?? uri, version: .rtsp10, headers: all, body: buffer)
    }

    /// `OPTIONS` with an `Apple-Challenge`: true when the receiver's `Apple-Response` signs our
    /// challenge, the address we reached it at and (when known) its device id with the AirPort key.
    public func checkIdentity(deviceID: [UInt8]?, crypto: RAOPSenderCrypto) async throws(SenderError) -> Bool? {
        let challenge = SecureRandom.bytes(16)
        let response = try await request("OPTIONS", headers: [
            "Apple-Challenge": String(Base64.encode(challenge).filter { $0 != "=" }),
        ])
        guard let answer = response.headers["Apple-Response"] else { return nil }
        let address = connection.remoteIP.map(IPAddressBytes.of) ?? []
        return crypto.verify(appleResponse: answer, challenge: challenge, receiverAddress: address, deviceID: deviceID)
    }

    /// `realm` and `nonce` of a `WWW-Authenticate: Digest …` header.
    static func digestChallenge(_ header: String) -> (realm: String, nonce: String)? {
        guard header.lowercased().hasPrefix("digest ") else { return nil }
        var values: [String: String] = [:]
        for part in header.dropFirst(7).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            values[pair[0].lowercased()] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        guard let realm = values["realm"], let nonce = values["nonce"] else { return nil }
        return (realm, nonce)
    }

    /// RFC 2617 Digest without qop, as RAOP receivers expect (any user name).
    static func authorization(method: String, uri: String, realm: String, nonce: String, password: String, user: String = "airplay") -> String {
        let first = Hash.md5Hex("\(user):\(realm):\(password)")
        let second = Hash.md5Hex("\(method):\(uri)")
        let response = Hash.md5Hex("\(first):\(nonce):\(second)")
        return "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
    }
}
