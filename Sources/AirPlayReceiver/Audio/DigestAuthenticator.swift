import AirPlayCrypto
import AirPlayWire
import FoundationEssentials
import NIOConcurrencyHelpers

/// RFC 2617 Digest authentication (MD5, no qop) for RAOP, realm `raop`, as AirPlay 1 senders speak it.
///
/// Each connection gets its own random nonce with its first 401; a request is accepted when its
/// `Authorization` answers that nonce with the configured password (any user name).
public final class DigestAuthenticator: Sendable {
    /// The realm senders see.
    public static let realm = "raop"
    private let password: String
    private let nonces = NIOLockedValueBox<[ObjectIdentifier: String]>([:])

    /// An authenticator for a password.
    public init(password: String) { self.password = password }

    /// Nil when the request is authorised; otherwise the 401 to send.
    public func check(_ request: AirPlayRequest, connection: ObjectIdentifier) -> AirPlayResponse? {
        let nonce = nonces.withLockedValue { nonces -> String in
            if let nonce = nonces[connection] { return nonce }
            let fresh = TextFormatting.hex(SecureRandom.bytes(16))
            nonces[connection] = fresh
            return fresh
        }
        if let header = request.headers["Authorization"], Self.verify(header, method: request.method, nonce: nonce, password: password) {
            return nil
        }
        var response = AirPlayResponse.text(status: 401, "a password is required (Digest, realm \"\(Self.realm)\")")
        response.headers.add(name: "WWW-Authenticate", value: "Digest realm=\"\(Self.realm)\", nonce=\"\(nonce)\"")
        return response
    }

    /// Forgets a closed connection's nonce.
    public func connectionClosed(_ connection: ObjectIdentifier) {
        _ = nonces.withLockedValue { $0.removeValue(forKey: connection) }
    }

    /// Checks `Digest username=…, realm=…, nonce=…, uri=…, response=…` against our nonce.
    static func verify(_ header: String, method: String, nonce: String, password: String) -> Bool {
        guard header.lowercased().hasPrefix("digest ") else { return false }
        let fields = parameters(String(header.dropFirst(7)))
        guard let user = fields["username"], let realm = fields["realm"], let uri = fields["uri"],
              let answer = fields["response"], fields["nonce"] == nonce, realm == Self.realm else { return false }
        let ha1 = Hash.md5Hex("\(user):\(realm):\(password)")
        let ha2 = Hash.md5Hex("\(method):\(uri)")
        return Hash.md5Hex("\(ha1):\(nonce):\(ha2)") == answer.lowercased()
    }

    /// `a="b", c=d` as a dictionary (quoted values may contain commas).
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingWhitespace().lowercased()
            rest = rest[rest.index(after: equals)...]
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                result[name] = String(rest[..<end])
                rest = end < rest.endIndex ? rest[rest.index(after: end)...] : ""
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                result[name] = rest[..<end].trimmingWhitespace()
                rest = rest[end...]
            }
        }
        return result
    }
}
