import AirPlayMedia
import AirPlayPairing
import AirPlayWire
import FoundationEssentials
import Logging
import NIOCore
import Synchronization
import LinuxIO

/// Who may change what the box plays.
public enum AccessControl: String, CaseIterable, Sendable {
    /// Any sender on the network.
    case anyone
    /// Senders that know the password (HTTP Digest).
    case password
    /// Only controllers paired with the box, on a connection that pair-verified.
    case paired
}

/// HAP pairing on the control port: the `/pair-*` endpoints, each connection's pair-setup and
/// pair-verify machines, which connections verified a stored pairing, and the PIN on show.
/// The machines decide; this carries their outcomes out (store, log, encrypt).
public final class ReceiverPairing: Sendable {
    /// The paths served.
    public static let paths: Set<String> = ["/pair-pin-start", "/pair-setup", "/pair-verify", "/pair-add", "/pair-remove", "/pair-list"]

    /// Whether a request is HAP pairing. `/pair-setup` and `/pair-verify` are HAP's only with
    /// `X-Apple-HKP`: without it they are AirPlay 1's legacy pairing (other bodies), which we do
    /// not offer, and senders such as pyatv go on without it when it is not found.
    public static func takes(_ request: AirPlayRequest) -> Bool {
        guard paths.contains(request.path) else { return false }
        if request.path == "/pair-setup" || request.path == "/pair-verify" { return request.headers["X-Apple-HKP"] != nil }
        return true
    }

    /// Requests whose answer costs a wait or real computation and never starts encryption:
    /// pair-setup M1 (SRP exponentiations) and M5 (the pairing stored, with fsyncs), and the
    /// admin endpoints that rewrite the store. The router answers them on a thread pool.
    public static func runsOffLoop(_ request: AirPlayRequest) -> Bool {
        switch request.path {
        case "/pair-add", "/pair-remove": return true
        case "/pair-setup":
            let body = request.body.getBytes(at: request.body.readerIndex, length: request.body.readableBytes) ?? []
            let state = (try? TLV8(bytes: body, maximumBytes: 4096))?.byte(.state)
            return state == 1 || state == 5
        default: return false
        }
    }

    /// The receiver's identity and its paired controllers.
    public let store: PairingStore
    /// What access requires.
    public let access: AccessControl
    private let policy: Mutex<PairingPolicy>
    private let connections = Mutex<[ObjectIdentifier: ConnectionPairing]>([:])
    let logger: Logger
    private let clock: any MonotonicClock
    private let pinListener = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Hears each PIN as it comes on show (the now-playing page shows it).
    public func onPINShown(_ listener: @escaping @Sendable (String) -> Void) { pinListener.withLock { $0 = listener } }

    private func show(_ pin: String) {
        logger.notice("pairing PIN for a sender: \(pin)", metadata: ["pairing.pin": "\(pin)"])
        pinListener.withLock { $0 }?(pin)
    }

    /// One connection's pairing state.
    struct ConnectionPairing: Sendable {
        var setup: PairSetupServer
        var verify: PairVerifyServer
        /// The stored controller this connection verified as, with the key it proved: a pairing
        /// removed and made again with another key does not let the old connection back in.
        var controller: (identifier: String, publicKey: [UInt8])?
    }

    /// Pairing over a store, with a PIN source and an access rule.
    public init(store: PairingStore, pin: PairingPolicy.PINSource, access: AccessControl, logger: Logger,
                clock: any MonotonicClock = SystemClock()) {
        self.store = store
        self.access = access
        self.policy = Mutex(PairingPolicy(source: pin))
        self.logger = logger
        self.clock = clock
    }

    private func now() -> Double { clock.now() }

    /// The PIN a person at the box should type, while a setup waits for it.
    public var displayedPIN: String? {
        let time = now()
        return policy.withLock { $0.displayedPIN(now: time) }
    }

    /// True when the connection pair-verified a controller that is still paired.
    public func isVerified(_ connection: ObjectIdentifier) -> Bool {
        verifiedPairing(connection) != nil
    }

    /// True when the connection pair-verified a stored admin controller: one that paired with
    /// the box's PIN, or that an admin added as admin. The box's own figures (`/diagnostics`)
    /// are served to such a controller from anywhere.
    public func isVerifiedAdmin(_ connection: ObjectIdentifier) -> Bool {
        verifiedPairing(connection)?.admin == true
    }

    /// The stored pairing the connection verified, when it is still stored with the same key.
    private func verifiedPairing(_ connection: ObjectIdentifier) -> ControllerPairing? {
        guard let controller = connections.withLock({ $0[connection]?.controller }),
              let pairing = store.pairing(controller.identifier), pairing.publicKey == controller.publicKey else { return nil }
        return pairing
    }

    /// Forgets a closed connection.
    public func connectionClosed(_ connection: ObjectIdentifier) {
        _ = connections.withLock { $0.removeValue(forKey: connection) }
        policy.withLock { $0.setupAbandoned(connection: connection) }
    }

    /// Answers a `/pair-*` request; the keys, when present, encrypt the connection once the
    /// response is written.
    public func answer(_ request: AirPlayRequest, connection: ConnectionContext) -> (AirPlayResponse, ControlChannelKeys?) {
        guard request.method == "POST" else {
            var response = AirPlayResponse.text(status: 405, "\(request.method.prefix(20)) is not allowed on \(request.path)")
            response.headers.add(name: "Allow", value: "POST")
            return (response, nil)
        }
        if request.path == "/pair-pin-start" { return (pinStart(request), nil) }
        let body = request.body.getBytes(at: request.body.readerIndex, length: request.body.readableBytes) ?? []
        let message: TLV8
        do {
            message = try TLV8(bytes: body, maximumBytes: 4096)
        } catch {
            return (.text(status: 400, "\(request.path): \(error.description)"), nil)
        }
        switch request.path {
        case "/pair-setup": return setup(message, connection: connection.id, source: Self.source(of: connection.remote))
        case "/pair-verify": return verify(message, connection: connection.id)
        default: return (administer(request.path, message, connection: connection.id), nil)
        }
    }

    private func pinStart(_ request: AirPlayRequest) -> AirPlayResponse {
        // Transient senders (X-Apple-HKP: 4) call it too; they need no PIN.
        guard request.headers["X-Apple-HKP"] != "4" else { return AirPlayResponse(status: 200) }
        let time = now()
        if let pin = policy.withLock({ $0.startPIN(now: time) }) { show(pin) }
        return AirPlayResponse(status: 200)
    }

    /// Where a pairing attempt comes from, as the back-off counts it: an IPv4 address (an
    /// IPv4-mapped IPv6 one read as such), or an IPv6 address's /64, within which a host may
    /// rotate its addresses at will.
    static func source(of address: SocketAddress?) -> String {
        switch address {
        case .v4?:
            return address?.ipAddress ?? PairingPolicy.unknownSource
        case .v6(let v6)?:
            var raw = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return bytes[12...].map(String.init).joined(separator: ".")
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        default:
            return PairingPolicy.unknownSource
        }
    }

    /// The sources locked out of pair-setup now (for `/diagnostics`).
    public var lockouts: [PairingPolicy.Lockout] {
        let time = now()
        return policy.withLock { $0.lockouts(now: time) }
    }

    private func setup(_ message: TLV8, connection: ObjectIdentifier, source: String) -> (AirPlayResponse, ControlChannelKeys?) {
        let time = now()
        var pin: String?
        if message.byte(.state) == 1 {
            // A new setup on this connection drops what it verified before.
            connections.withLock { $0[connection]?.controller = nil }
            if !PairSetupServer.isTransient(message), let refusal = policy.withLock({ $0.backoff(source: source, now: time) }) {
                logger.notice("pair-setup refused", metadata: ["reason": "\(refusal.reason)", "source": "\(source)"])
                return (Self.tlvResponse(refusal.reply), nil)
            }
            guard policy.withLock({ $0.admitStart(now: time) }) else {
                logger.notice("pair-setup refused: too many setups started in the last \(Int(PairingPolicy.startWindow)) s")
                return (Self.tlvResponse(PairingFailure(state: 2, code: .busy, reason: "rate").reply), nil)
            }
        }
        // The PIN matters at M1 only (SRP is keyed there); an MFi method gets its refusal from
        // the machine without taking the one-setup-at-a-time slot.
        if message.byte(.state) == 1, !PairSetupServer.isTransient(message), (message.byte(.method) ?? 0) == 0 {
            switch policy.withLock({ $0.pinForSetup(connection: connection, source: source, now: time) }) {
            case .success(let chosen):
                pin = chosen
                if case .random = policy.withLock({ $0.source }) { show(chosen) }
            case .failure(let refusal):
                logger.notice("pair-setup refused", metadata: ["reason": "\(refusal.reason)", "source": "\(source)"])
                return (Self.tlvResponse(refusal.reply), nil)
            }
        }
        let step = withConnection(connection) { $0.setup.handle(message, pin: pin, now: time) }
        switch step.outcome {
        case .none:
            return (Self.tlvResponse(step.reply), nil)
        case .transient(let secret):
            // Not a success of the PIN: anyone knows 3939, so it must not clear the back-off.
            guard let keys = try? ControlChannelKeys(sharedSecret: secret) else {
                return (Self.tlvResponse(PairingFailure(state: 4, code: .unknown, reason: "no channel keys").reply), nil)
            }
            logger.info("transient pairing: the connection is encrypted from now on")
            return (Self.tlvResponse(step.reply), keys)
        case .paired(let controller):
            do {
                try store.add(controller)
                policy.withLock { $0.setupSucceeded(source: source) }
                logger.notice("paired with a new controller", metadata: ["pairing.controller": "\(controller.identifier)"])
                return (Self.tlvResponse(step.reply), nil)
            } catch {
                policy.withLock { $0.setupAbandoned(connection: connection) }
                logger.error("pairing not stored", metadata: ["error": "\(error)"])
                let code: TLV8.ErrorCode = store.all.count >= PairingStore.capacity ? .maxPeers : .unknown
                return (Self.tlvResponse(PairingFailure(state: 6, code: code, reason: error.description).reply), nil)
            }
        case .failed(let failure, let counts):
            if counts { policy.withLock { $0.setupFailed(source: source, now: time) } }
            logger.notice("pair-setup failed", metadata: ["reason": "\(failure.reason)", "source": "\(source)"])
            return (Self.tlvResponse(step.reply), nil)
        }
    }

    private func verify(_ message: TLV8, connection: ObjectIdentifier) -> (AirPlayResponse, ControlChannelKeys?) {
        let time = now()
        let store = self.store
        if message.byte(.state) == 1 { connections.withLock { $0[connection]?.controller = nil } }
        let step = withConnection(connection) { $0.verify.handle(message, now: time) { store.publicKey(of: $0) } }
        switch step.outcome {
        case .none:
            return (Self.tlvResponse(step.reply), nil)
        case .verified(let controller, let secret):
            guard let keys = try? ControlChannelKeys(sharedSecret: secret), let key = store.publicKey(of: controller) else {
                return (Self.tlvResponse(PairingFailure(state: 4, code: .unknown, reason: "no channel keys").reply), nil)
            }
            // Requests count as this controller's only once they come through the cipher: the
            // connection handler refuses any that arrive in clear after this reply.
            connections.withLock { $0[connection]?.controller = (controller, key) }
            logger.info("pair-verify: the connection is encrypted from now on", metadata: ["pairing.controller": "\(controller)"])
            return (Self.tlvResponse(step.reply), keys)
        case .failed(let failure, _):
            logger.notice("pair-verify failed", metadata: ["reason": "\(failure.reason)"])
            // Senders such as pyatv do not read M4's error and start encrypting anyway: end
            // the connection rather than read their frames as requests.
            var response = Self.tlvResponse(step.reply)
            if message.byte(.state) == 3 { response.headers.add(name: "Connection", value: "close") }
            return (response, nil)
        }
    }

    /// `/pair-add`, `/pair-remove`, `/pair-list`: for admin controllers on a verified connection.
    private func administer(_ path: String, _ message: TLV8, connection: ObjectIdentifier) -> AirPlayResponse {
        guard let caller = verifiedPairing(connection) else {
            return .text(status: 470, "\(path) needs a pair-verified connection")
        }
        let controller = caller.identifier
        guard caller.admin else { return Self.tlvResponse(PairingFailure(state: 2, code: .authentication, reason: "not admin").reply) }
        do {
            switch path {
            case "/pair-add":
                guard let raw = message[.identifier], (1...64).contains(raw.count),
                      let identifier = String(validating: raw, as: UTF8.self), let key = message[.publicKey], key.count == 32 else {
                    return Self.tlvResponse(PairingFailure(state: 2, code: .unknown, reason: "pair-add lacks an identifier or key").reply)
                }
                try store.add(ControllerPairing(identifier: identifier, publicKey: key, admin: message.byte(.permissions) == 1))
                logger.notice("pairing added", metadata: ["pairing.controller": "\(identifier)", "by": "\(controller)"])
            case "/pair-remove":
                guard let identifier = message[.identifier].flatMap({ String(validating: $0, as: UTF8.self) }) else {
                    return Self.tlvResponse(PairingFailure(state: 2, code: .unknown, reason: "pair-remove lacks an identifier").reply)
                }
                try store.remove(identifier)
                logger.notice("pairing removed", metadata: ["pairing.controller": "\(identifier)", "by": "\(controller)"])
                // HAP: with its last admin gone, an accessory forgets every pairing.
                if !store.all.contains(where: \.admin) {
                    try store.removeAll()
                    logger.notice("the last admin was removed: every pairing is forgotten")
                }
            default:
                var reply = TLV8([(.state, [2])])
                for (index, pairing) in store.all.enumerated() {
                    if index > 0 { reply.append(.separator, []) }
                    reply.append(.identifier, Array(pairing.identifier.utf8))
                    reply.append(.publicKey, pairing.publicKey)
                    reply.append(.permissions, byte: pairing.admin ? 1 : 0)
                }
                return Self.tlvResponse(reply)
            }
        } catch {
            return Self.tlvResponse(PairingFailure(state: 2, code: .maxPeers, reason: error.description).reply)
        }
        return Self.tlvResponse(TLV8([(.state, [2])]))
    }

    private func withConnection<T>(_ connection: ObjectIdentifier, _ body: (inout ConnectionPairing) -> T) -> T {
        let identity = store.identity
        return connections.withLock { table in
            var state = table[connection] ?? ConnectionPairing(setup: PairSetupServer(identity: identity),
                                                               verify: PairVerifyServer(identity: identity))
            let result = body(&state)
            table[connection] = state
            return result
        }
    }

    /// A 200 with a TLV8 body: HAP answers failures in the TLV, not the status. The type must
    /// be `application/*` (pyatv reads other bodies as text).
    static func tlvResponse(_ tlv: TLV8) -> AirPlayResponse {
        var body = ByteBuffer()
        body.writeBytes(tlv.bytes)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: body)
    }
}
