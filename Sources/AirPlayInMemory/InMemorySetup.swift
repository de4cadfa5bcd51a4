import AirPlaySender
import AirPlayWire

/// A sender's setup played against an in-memory receiver: the sender's real `SenderSetupMachine`
/// and the box's real `AudioSessionStateMachine`, no sockets, no sleeps, every exchange through
/// its bytes (`InMemoryWire`) and written down. Ports and channels the sender opens "open" at
/// once (`udpPort`).
public struct InMemorySetup: Sendable {
    /// One request and the status that answered it.
    public struct Exchange: Hashable, Sendable, CustomStringConvertible {
        /// The request's method.
        public var method: String
        /// The answer's status.
        public var status: Int
        /// What the request carried that tells it apart (its content type), when anything.
        public var contentType: String?

        /// `SETUP application/x-apple-binary-plist → 200`.
        public var description: String { "\(method)\(contentType.map { " " + $0 } ?? "") → \(status)" }
    }

    /// The UDP port the sender "binds".
    public static let udpPort = 5000

    /// The connection the sender talks on.
    public let connection = InMemoryConnection()
    /// What went to and fro, in order.
    public private(set) var exchanges: [Exchange] = []
    /// The warnings the sender would have shown.
    public private(set) var warnings: [String] = []
    /// The event channel and data port the sender connected to.
    public private(set) var connectedEventPort: Int?
    public private(set) var connectedDataPort: Int?
    /// Whether the sender learnt that the receiver refused AirPlay 2's native stream (then it
    /// plays AirPlay 1: `SenderSetupMachine.refusedNativeStreams`).
    public private(set) var refusedNativeStreams = false
    private let identity = RAOPClientIdentity()
    private var cseq = 0
    private var session: String?

    /// A setup on a fresh connection.
    public init() {}

    /// Sends `request` as the sender's connection frames it, and the receiver's answer.
    package mutating func send(_ request: SenderRequest, to receiver: inout InMemoryReceiver, now: Double) -> AirPlayResponse {
        cseq += 1
        let framed = RAOPClient.frame(request, uri: "rtsp://in-memory/1", cseq: cseq, identity: identity, session: session)
        // Through the bytes both ways, as over the socket.
        let response: AirPlayResponse
        switch InMemoryWire.carry(framed) {
        case .success(let request): response = InMemoryWire.carry(receiver.handle(request, from: connection, now: now))
        case .failure(let rejection): response = InMemoryWire.carry(.text(status: rejection.status, rejection.reason))
        }
        exchanges.append(Exchange(method: request.method, status: response.status, contentType: request.contentType))
        return response
    }

    /// Carries a running-session command out against `receiver`, as `ReceiverLink.perform`
    /// does over the network: each request through the bytes, each reply read by `session`.
    package mutating func perform(_ command: SenderSessionMachine.Command, in session: inout SenderSessionMachine,
                                  against receiver: inout InMemoryReceiver, now: Double) -> Result<Void, SenderError> {
        var pending = session.command(command)[...]
        for _ in 0..<8 {
            guard let action = pending.popFirst() else { return .success(()) }
            switch action {
            case .send(let request, let required):
                pending += session.replied(send(request, to: &receiver, now: now), to: request, required: required)
            case .sendMediaRemoteNowPlaying:
                continue
            case .failed(let error):
                return .failure(error)
            }
        }
        return .failure(SenderError(.badInput, "the command did not finish"))
    }

    /// Runs `machine` to its end against `receiver`: the outcome, or the error the sender would throw.
    package mutating func run(_ machine: SenderSetupMachine, against receiver: inout InMemoryReceiver,
                             now: Double) -> Result<SenderSetupMachine.Outcome, SenderError> {
        var machine = machine
        var actions = machine.start()
        for _ in 0..<64 {
            var next: [SenderSetupMachine.Action] = []
            for action in actions {
                switch action {
                case .send(let request): next = machine.replied(send(request, to: &receiver, now: now))
                case .openUDPPort: next = machine.udpPortOpened(Self.udpPort)
                case .verifyAppleResponse: next = machine.identityChecked(false)
                case .connectEventChannel(let port):
                    connectedEventPort = port
                    next = machine.eventChannelConnected()
                case .connectDataPort(let port):
                    connectedDataPort = port
                    next = machine.dataConnectionOpened()
                case .adoptSession(let id): session = id
                case .warn(let message): warnings.append(message)
                case .finished(let outcome): return .success(outcome)
                case .failed(let error):
                    refusedNativeStreams = machine.refusedNativeStreams
                    return .failure(error)
                }
            }
            actions = next
        }
        return .failure(SenderError(.badInput, "the setup did not finish"))
    }
}
