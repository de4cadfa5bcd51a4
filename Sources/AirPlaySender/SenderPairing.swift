import AirPlayPairing
import AirPlayWire
import NIOCore

/// The sender's pairing exchanges over a control connection: `POST /pair-*` with TLV8 bodies,
/// the steps decided by `PairingClient`.
extension ReceiverConnection {
    /// PIN pair-setup (M1–M6) as `identity`; the receiver's identity, to store.
    public func pairSetup(identity: PairingIdentity, pin: String) async throws(SenderError) -> PairingClient.ReceiverCredentials {
        _ = try await post("/pair-pin-start", nil, hkp: "3")
        var setup = PairingClient.Setup(identity: identity, pin: pin)
        return try await reportingFailures("pairing failed") {
            let m2 = try await exchange("/pair-setup", PairingClient.setupStart(transient: false), hkp: "3")
            let m4 = try await exchange("/pair-setup", try setup.proof(answering: m2), hkp: "3")
            let m6 = try await exchange("/pair-setup", try setup.exchange(answering: m4), hkp: "3")
            return try setup.receiver(answering: m6, m4: m4)
        }
    }

    /// Pair-verify (M1–M4) with stored credentials; the connection is encrypted afterwards.
    public func pairVerify(identity: PairingIdentity, receiver: PairingClient.ReceiverCredentials) async throws(SenderError) {
        try await reportingFailures("pair-verify failed", hint: "; pair again with `airplay pair`") {
            var verify = try PairingClient.Verify(identity: identity, receiver: receiver)
            let m2 = try await exchange("/pair-verify", verify.start, hkp: "3")
            let m4 = try await exchange("/pair-verify", try verify.proof(answering: m2), hkp: "3")
            try await encrypt(with: try verify.keys(answering: m4))
        }
    }

    /// Transient pair-setup (M1–M4, PIN 3939): encryption without a stored pairing.
    public func pairTransient(identity: PairingIdentity) async throws(SenderError) {
        var setup = PairingClient.Setup(identity: identity, pin: PairSetupServer.transientPIN)
        try await reportingFailures("transient pairing failed") {
            let m2 = try await exchange("/pair-setup", PairingClient.setupStart(transient: true), hkp: "4")
            let m4 = try await exchange("/pair-setup", try setup.proof(answering: m2), hkp: "4")
            try await encrypt(with: try ControlChannelKeys(sharedSecret: setup.sessionKey(answering: m4)))
        }
    }

    /// Runs a pairing exchange, its failures told as the CLI reports them: what the receiver
    /// refused as 470, a broken exchange as a lost connection.
    private func reportingFailures<T>(_ what: String, hint: String = "", _ body: () async throws -> T) async throws(SenderError) -> T {
        do {
            return try await body()
        } catch let failure as PairingClient.Failure {
            throw SenderError(.refused(status: 470), "\(what): \(failure.description)\(hint)")
        } catch let error as SenderError {
            throw error
        } catch {
            throw SenderError(.connectionLost, "\(what): \(error)")
        }
    }

    /// What every pairing request carries: the HomeKit pairing kind (`X-Apple-HKP`: 3 with a
    /// PIN or stored keys, 4 transient), our User-Agent in Apple's form, and the name tvOS 27
    /// wants on `/pair-pin-start` and every `/pair-setup` before it shows or takes a PIN
    /// (`X-Apple-Client-Name`; pyatv #2894).
    static func pairingHeaders(hkp: String) -> MessageHeaders {
        ["X-Apple-HKP": hkp, "User-Agent": RAOPClient.userAgent, "X-Apple-Client-Name": clientName]
    }

    /// The name a receiver shows for this sender while it pairs.
    static let clientName = "swift-airplay"

    private func exchange(_ path: String, _ message: TLV8, hkp: String) async throws -> TLV8 {
        let body = try await post(path, message.bytes, hkp: hkp)
        return try TLV8(bytes: body)
    }

    private func post(_ path: String, _ body: [UInt8]?, hkp: String) async throws(SenderError) -> [UInt8] {
        var buffer = ByteBuffer()
        if let body { buffer.writeBytes(body) }
        var headers = Self.pairingHeaders(hkp: hkp)
        if body != nil { headers.add(name: "Content-Type", value: "application/octet-stream") }
        let response = try await send(AirPlayRequest(method: "POST", target: path, version: .http11, headers: headers, body: buffer))
        guard (200..<300).contains(response.status) else {
            throw SenderError(.refused(status: response.status), "\(path): the receiver answered \(response.status) \(response.reason)")
        }
        return response.body.getBytes(at: response.body.readerIndex, length: response.body.readableBytes) ?? []
    }
}
