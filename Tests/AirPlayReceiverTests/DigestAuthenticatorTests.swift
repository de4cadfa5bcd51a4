import AirPlayCrypto
@testable import AirPlayReceiver
import AirPlayWire
import Testing

/// RFC 2617 Digest as RAOP senders answer it (MD5, no qop, realm "raop").
@Suite struct DigestAuthenticatorTests {
    final class Token {}

    @Test func aChallengeThenTheRightAnswerPasses() throws {
        let authenticator = DigestAuthenticator(password: "s3cret")
        // Both tokens live to the end: a freed one's address could be the next one's identity.
        let (token, otherToken) = (Token(), Token())
        let connection = ObjectIdentifier(token)
        var request = AirPlayRequest(method: "ANNOUNCE", target: "rtsp://127.0.0.1/1", version: .rtsp10)
        let challenge = try #require(authenticator.check(request, connection: connection))
        #expect(challenge.status == 401)
        let header = try #require(challenge.headers["WWW-Authenticate"])
        let nonce = try #require(DigestAuthenticator.parameters(String(header.dropFirst(7)))["nonce"])
        #expect(header.contains("realm=\"raop\""))

        func answer(_ password: String, method: String = "ANNOUNCE") -> String {
            let ha1 = Hash.md5Hex("iTunes:raop:\(password)")
            let ha2 = Hash.md5Hex("\(method):rtsp://127.0.0.1/1")
            let response = Hash.md5Hex("\(ha1):\(nonce):\(ha2)").uppercased()  // iTunes sends upper case
            return "Digest username=\"iTunes\", realm=\"raop\", nonce=\"\(nonce)\", uri=\"rtsp://127.0.0.1/1\", response=\"\(response)\""
        }
        request.headers.add(name: "Authorization", value: answer("s3cret"))
        #expect(authenticator.check(request, connection: connection) == nil)
        request.headers.replaceOrAdd(name: "Authorization", value: answer("wrong"))
        #expect(authenticator.check(request, connection: connection)?.status == 401)
        request.headers.replaceOrAdd(name: "Authorization", value: answer("s3cret", method: "SETUP"))
        #expect(authenticator.check(request, connection: connection)?.status == 401, "the method is part of the answer")
        #expect(authenticator.check(request, connection: ObjectIdentifier(otherToken))?.status == 401, "nonces are per connection")
        withExtendedLifetime((token, otherToken)) {}
    }

    @Test func md5MatchesKnownVectors() {
        #expect(Hash.md5Hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Hash.md5Hex("abc") == "900150983cd24fb0d6963f7d28e17f72")
    }

    @Test func parametersKeepQuotedCommas() {
        let fields = DigestAuthenticator.parameters("username=\"a,b\", realm=raop, nonce=\"n\"")
        #expect(fields == ["username": "a,b", "realm": "raop", "nonce": "n"])
    }
}

/// `access = "password"`: the video endpoints ask for the password too; who the box is does not.
@Suite struct VideoPasswordTests {
    final class Token {}

    @Test func videoRequestsNeedTheDigestAndInfoDoesNot() throws {
        var router = ControlRouter(serverInfo: {
            ServerInfo(deviceID: DeviceID("02:FC:00:00:00:01")!, name: "Box", capabilities: ReceiverCapabilities(video: true, hls: true, audio: true))
        })
        router.videoPassword = DigestAuthenticator(password: "s3cret")
        let connection = ConnectionContext(id: ObjectIdentifier(Token()), local: nil, remote: nil, close: {})
        var play = AirPlayRequest(method: "POST", target: "/play", version: .http11)
        let challenge = try #require(router.accessRefusal(play, connection: connection))
        #expect(challenge.status == 401)
        let header = try #require(challenge.headers["WWW-Authenticate"])
        let nonce = try #require(DigestAuthenticator.parameters(String(header.dropFirst(7)))["nonce"])
        let ha1 = Hash.md5Hex("AirPlay:raop:s3cret"), ha2 = Hash.md5Hex("POST:/play")
        play.headers.add(name: "Authorization", value: "Digest username=\"AirPlay\", realm=\"raop\", nonce=\"\(nonce)\", uri=\"/play\", response=\"\(Hash.md5Hex("\(ha1):\(nonce):\(ha2)"))\"")
        #expect(router.accessRefusal(play, connection: connection) == nil)
        for path in ["/scrub", "/rate", "/stop", "/playback-info", "/reverse"] {
            #expect(router.accessRefusal(AirPlayRequest(method: "POST", target: path, version: .http11), connection: connection)?.status == 401, "\(path)")
        }
        #expect(router.accessRefusal(AirPlayRequest(method: "GET", target: "/info", version: .http11), connection: connection) == nil)
    }
}
