import AirPlayCrypto
import AirPlayPairing
@testable import AirPlayReceiver
import AirPlayTesting
import AirPlayWire
import Foundation
import Logging
import NIOCore
import Testing

/// The `/pair-*` endpoints driven by our own sender's steps, with no socket: PIN setup, verify,
/// the admin endpoints on a verified connection, and what the PIN on show does over time.
@Suite struct ReceiverPairingTests {
    final class Token {}
    /// Keeps each connection's token alive for the whole test: a freed token's address may be
    /// handed to the next one, and two connections would then share an identity.
    final class Tokens: @unchecked Sendable {
        private(set) var all: [Token] = []
        func next() -> ObjectIdentifier {
            let token = Token()
            all.append(token)
            return ObjectIdentifier(token)
        }
    }

    let clock = ManualClock()
    let tokens = Tokens()
    let pairing: ReceiverPairing

    init() throws {
        let directory = NSTemporaryDirectory() + "receiver-pairing-\(UUID().uuidString.prefix(8))"
        pairing = ReceiverPairing(store: try PairingStore(directory: directory), pin: .random, access: .paired,
                                  logger: Logger(label: "test"), clock: clock)
    }

    private func connection() -> ConnectionContext {
        ConnectionContext(id: tokens.next(), local: nil, remote: nil, close: {})
    }

    /// POSTs a TLV8 body; the reply's TLV8, status and whether it turns encryption on.
    private func post(_ path: String, _ message: TLV8?, on connection: ConnectionContext, hkp: String = "3")
        throws -> (reply: TLV8, status: Int, encrypts: Bool) {
        var body = ByteBuffer()
        if let message { body.writeBytes(message.bytes) }
        let request = AirPlayRequest(method: "POST", target: path, version: .http11, headers: ["X-Apple-HKP": hkp], body: body)
        let (response, keys) = pairing.answer(request, connection: connection)
        let bytes = response.body.getBytes(at: 0, length: response.body.readableBytes) ?? []
        return (response.status == 200 && !bytes.isEmpty ? try TLV8(bytes: bytes) : TLV8(), response.status, keys != nil)
    }

    /// PIN pair-setup then pair-verify as `identity` on `connection`; the receiver's credentials.
    @discardableResult
    private func pairAndVerify(_ identity: PairingIdentity, on connection: ConnectionContext) throws -> PairingClient.ReceiverCredentials {
        _ = try post("/pair-pin-start", nil, on: connection)
        let pin = try #require(pairing.displayedPIN, "a random PIN is on show after pin-start")
        var setup = PairingClient.Setup(identity: identity, pin: pin)
        let m2 = try post("/pair-setup", PairingClient.setupStart(transient: false), on: connection).reply
        let m4 = try post("/pair-setup", try setup.proof(answering: m2), on: connection).reply
        let m6 = try post("/pair-setup", try setup.exchange(answering: m4), on: connection).reply
        let receiver = try setup.receiver(answering: m6, m4: m4)
        #expect(pairing.displayedPIN == nil, "the PIN is used up")
        var verify = try PairingClient.Verify(identity: identity, receiver: receiver)
        let v2 = try post("/pair-verify", verify.start, on: connection).reply
        let v4 = try post("/pair-verify", try verify.proof(answering: v2), on: connection)
        #expect(v4.encrypts, "the connection is encrypted after M4")
        _ = try verify.keys(answering: v4.reply)
        return receiver
    }

    @Test func aPairedAdminListsAddsAndRemovesPairings() throws {
        let admin = PairingIdentity(identifier: "admin-1", key: Ed25519SigningKey.generate())
        let connection = connection()
        let receiver = try pairAndVerify(admin, on: connection)
        #expect(receiver.identifier == pairing.store.identity.identifier)
        #expect(pairing.isVerified(connection.id))

        let guestKey = [UInt8](repeating: 7, count: 32)
        let added = try post("/pair-add", TLV8([(.state, [1]), (.method, [3]), (.identifier, Array("guest".utf8)),
                                                (.publicKey, guestKey), (.permissions, [0])]), on: connection)
        #expect(added.reply.byte(.state) == 2 && added.reply.byte(.error) == nil)
        let listed = try post("/pair-list", TLV8([(.state, [1]), (.method, [5])]), on: connection).reply
        let identifiers = listed.items.filter { $0.type == TLV8.Kind.identifier.rawValue }.map { String(decoding: $0.value, as: UTF8.self) }
        #expect(identifiers == ["admin-1", "guest"])
        #expect(listed.items.contains { $0.type == TLV8.Kind.separator.rawValue })
        _ = try post("/pair-remove", TLV8([(.state, [1]), (.method, [4]), (.identifier, Array("guest".utf8))]), on: connection)
        #expect(pairing.store.all.map(\.identifier) == ["admin-1"])
    }

    @Test func adminEndpointsNeedAVerifiedConnection() throws {
        let stranger = connection()
        #expect(try post("/pair-list", TLV8([(.state, [1]), (.method, [5])]), on: stranger).status == 470)
        #expect(try post("/pair-add", TLV8([(.state, [1])]), on: stranger).status == 470)
    }

    @Test func removingAPairingRevokesItsVerifiedConnections() throws {
        let identity = PairingIdentity(identifier: "phone", key: Ed25519SigningKey.generate())
        let connection = connection()
        try pairAndVerify(identity, on: connection)
        #expect(pairing.isVerified(connection.id))
        try pairing.store.remove("phone")
        #expect(!pairing.isVerified(connection.id), "access ends with the pairing")
    }

    @Test func aPairingMadeAgainWithAnotherKeyDoesNotLetTheOldConnectionBackIn() throws {
        let connection = connection()
        try pairAndVerify(PairingIdentity(identifier: "phone", key: Ed25519SigningKey.generate()), on: connection)
        try pairing.store.remove("phone")
        try pairing.store.add(ControllerPairing(identifier: "phone", publicKey: [UInt8](repeating: 5, count: 32), admin: true))
        #expect(!pairing.isVerified(connection.id))
    }

    @Test func removingTheLastAdminForgetsEveryPairing() throws {
        let connection = connection()
        try pairAndVerify(PairingIdentity(identifier: "admin-2", key: Ed25519SigningKey.generate()), on: connection)
        try pairing.store.add(ControllerPairing(identifier: "guest", publicKey: [UInt8](repeating: 7, count: 32), admin: false))
        _ = try post("/pair-remove", TLV8([(.state, [1]), (.method, [4]), (.identifier, Array("admin-2".utf8))]), on: connection)
        #expect(pairing.store.all.isEmpty, "HAP: no admin left, no pairing left")
    }

    /// `airplay doctor` from another machine: the box's own figures name senders and their
    /// addresses, so off the box they go to an admin controller on a pair-verified connection
    /// only, not to a guest it added nor to whoever reaches the port.
    @Test func theBoxsFiguresGoOverTheNetworkToAVerifiedAdminOnly() throws {
        var router = DiagnosticsTests.router()
        router.pairing = pairing
        let request = AirPlayRequest(method: "GET", target: "/diagnostics", version: .http11)
        func remote(_ address: String) throws -> ConnectionContext {
            ConnectionContext(id: tokens.next(), local: try SocketAddress(ipAddress: "10.0.0.2", port: 7000),
                              remote: try SocketAddress(ipAddress: address, port: 50000), close: {})
        }
        let admin = try remote("10.0.0.9")
        let receiver = try pairAndVerify(PairingIdentity(identifier: "laptop", key: Ed25519SigningKey.generate()), on: admin)
        #expect(router.reply(to: request, connection: admin).response.status == 200)

        let guestIdentity = PairingIdentity(identifier: "guest", key: Ed25519SigningKey.generate())
        try pairing.store.add(ControllerPairing(identifier: "guest", publicKey: guestIdentity.publicKey, admin: false))
        let guest = try remote("10.0.0.10")
        var verify = try PairingClient.Verify(identity: guestIdentity, receiver: receiver)
        let v2 = try post("/pair-verify", verify.start, on: guest).reply
        #expect(try post("/pair-verify", try verify.proof(answering: v2), on: guest).encrypts)
        #expect(pairing.isVerified(guest.id))
        let refused = router.reply(to: request, connection: guest).response
        #expect(refused.status == 403 && String(decoding: refused.body.readableBytesView, as: UTF8.self).contains("airplay pair"))
        #expect(router.reply(to: request, connection: try remote("10.0.0.11")).response.status == 403)
    }

    @Test func aPINOnShowExpiresAfterFiveMinutes() throws {
        _ = try post("/pair-pin-start", nil, on: connection())
        #expect(pairing.displayedPIN != nil)
        clock.advance(by: PairingPolicy.pinLifetime + 1)
        #expect(pairing.displayedPIN == nil)
    }

    @Test func answersThatWaitOrComputeRunOffTheEventLoop() {
        func request(_ path: String, state: UInt8?) -> AirPlayRequest {
            var body = ByteBuffer()
            if let state { body.writeBytes(TLV8([(.state, [state])]).bytes) }
            return AirPlayRequest(method: "POST", target: path, version: .http11, headers: ["X-Apple-HKP": "3"], body: body)
        }
        // SRP at M1 and the stored pairing at M5 go to the thread pool; M3 (which may switch
        // encryption on) and pair-verify stay on the connection's loop.
        #expect(ReceiverPairing.runsOffLoop(request("/pair-setup", state: 1)))
        #expect(ReceiverPairing.runsOffLoop(request("/pair-setup", state: 5)))
        #expect(!ReceiverPairing.runsOffLoop(request("/pair-setup", state: 3)))
        #expect(!ReceiverPairing.runsOffLoop(request("/pair-verify", state: 1)))
        #expect(ReceiverPairing.runsOffLoop(request("/pair-add", state: 1)) && ReceiverPairing.runsOffLoop(request("/pair-remove", state: 1)))
    }

    @Test func badBodiesAndMethodsAreRefusedWithAReason() throws {
        let request = AirPlayRequest(method: "POST", target: "/pair-setup", version: .http11, headers: ["X-Apple-HKP": "3"],
                                     body: ByteBuffer(bytes: [0x06, 0x05, 0x01]))
        #expect(pairing.answer(request, connection: connection()).0.status == 400)
        let get = AirPlayRequest(method: "GET", target: "/pair-setup", version: .http11, headers: ["X-Apple-HKP": "3"])
        #expect(pairing.answer(get, connection: connection()).0.status == 405)
        // Without X-Apple-HKP it is AirPlay 1's legacy pairing, which the router leaves to 404.
        #expect(!ReceiverPairing.takes(AirPlayRequest(method: "POST", target: "/pair-verify", version: .http11)))
    }

    /// Failed PINs count against their source: an IPv4 address, an IPv4-mapped IPv6 address as
    /// the IPv4 one, an IPv6 address by its /64 (its host rotates addresses within it at will).
    @Test func aPairingSourceIsAnIPv4AddressOrAnIPv6Slash64() throws {
        #expect(ReceiverPairing.source(of: try SocketAddress(ipAddress: "192.0.2.66", port: 50000)) == "192.0.2.66")
        #expect(ReceiverPairing.source(of: try SocketAddress(ipAddress: "::ffff:192.0.2.66", port: 50000)) == "192.0.2.66")
        let one = ReceiverPairing.source(of: try SocketAddress(ipAddress: "2001:db8:1:2:aaaa:bbbb:cccc:dddd", port: 50000))
        let other = ReceiverPairing.source(of: try SocketAddress(ipAddress: "2001:db8:1:2::77", port: 50001))
        #expect(one == "2001:db8:1:2::/64" && one == other)
        #expect(ReceiverPairing.source(of: try SocketAddress(ipAddress: "2001:db8:1:3::77", port: 50001)) != one)
        #expect(ReceiverPairing.source(of: nil) == PairingPolicy.unknownSource)
    }
}
