import AirPlayCrypto
import AirPlayNowPlaying
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import NIOCore

/// AirPlay 2's SETUPs, decoded by `AudioRequest`, carried out for `AudioSessionStateMachine`:
/// what depends on the box is checked here (a refusal changes nothing), the machine decides,
/// and the event port is opened here when it asks. The connection is encrypted (checked first).
extension AudioSessions {
    /// SETUP phase 1 (`timingProtocol`): the session, timed on PTP or NTP.
    func setupSession(_ session: AirPlay2Setup.Session, connection: ConnectionContext) -> AirPlayResponse {
        logger.info("AirPlay 2 session setup", metadata: [
            "sender": "\(session.name ?? "?") (\(session.model ?? "?"))", "timing": "\(session.timingProtocol)",
            "timing.port": "\(session.timingPort.map(String.init) ?? "-")",
        ])
        if session.timingProtocol == "PTP", !session.timingPeers.isEmpty {
            ptp?.setPeers(session.timingPeers)
        }
        let host = connection.remote.map(RAOPPorts.hostBytes)
        let actions = machine.withLockedValue { $0.receive(.setupSession(session), on: connection.id, senderHost: host, now: self.now()) }
        return perform(actions, connection: connection) ?? .text(status: 500, "no reply")
    }

    /// SETUP phase 2 (`streams`): the session's one audio stream, if this box can decode it.
    func setupStream(_ stream: AirPlay2Setup.Stream, _ description: RAOPStreamDescription, request: AirPlayRequest,
                     connection: ConnectionContext) -> AirPlayResponse {
        if faultRefuseRealtimeStreams, stream.type == AirPlay2Setup.realtime {
            logger.notice("AirPlay 2 stream refused", metadata: ["reason": "test fault: realtime streams are refused, as Sonos does"])
            return .text(status: 400, "realtime streams are refused here (test fault: as Sonos)")
        }
        let prepared: PreparedStream
        do {
            prepared = try prepare(stream, description)
        } catch {
            logger.notice("AirPlay 2 stream refused", metadata: ["reason": "\(error)"])
            return .text(status: error.status, error.description)
        }
        let actions = machine.withLockedValue { $0.receive(.setupStream(stream, description), on: connection.id, now: self.now()) }
        var announced = prepared
        announced.ptpRealtime = !prepared.buffered && machine.withLockedValue { $0.current?.usesPTP == true }
        announced.sender = Self.sender(of: request, connection: connection, name: machine.withLockedValue { $0.current?.senderName })
        announced.sender?.hasEventChannel = true
        return perform(actions, connection: connection, prepared: announced) ?? .text(status: 500, "no reply")
    }

    /// The stream as played here, with its ChaCha20-Poly1305 key; refused when it cannot be
    /// decoded here (415) or its key is not one (400).
    private func prepare(_ stream: AirPlay2Setup.Stream, _ description: RAOPStreamDescription) throws(AirPlay2Setup.Refusal) -> PreparedStream {
        do {
            try decoders.validate(description)
        } catch {
            throw AirPlay2Setup.Refusal(status: 415, description: "\(Self.codecName(description.codec)) stream not playable: \(error)")
        }
        let cipher: AirPlay2AudioCipher
        do {
            cipher = try AirPlay2AudioCipher(streamKey: stream.streamKey)
        } catch {
            throw AirPlay2Setup.Refusal(status: 400, description: "streamKey: \(error)")
        }
        return PreparedStream(description: description, cipher: .chacha(cipher), buffered: stream.type == AirPlay2Setup.buffered)
    }

    /// A realtime PTP stream's 0xD7 anchor: its timeline takes it (the first is logged).
    func realtimeAnchor(_ anchor: RAOPPTPAnchor, session resources: RAOPSessionResources) {
        guard let timeline = resources.anchored else { return }
        let first = timeline.current == nil
        timeline.set(anchor)
        guard first else { return }
        logger.info("realtime audio anchored on PTP", metadata: [
            "session": "\(resources.number)", "rtpTime": "\(anchor.heardRTPTime)", "networkTime.ns": "\(anchor.networkTime)",
            "timeline": "\(String(anchor.clockIdentity, radix: 16))", "clock.known": "\(timeline.localTime(of: anchor.heardRTPTime) != nil)",
        ])
    }

    /// A remote-control-only session: its own event channel (a second SETUP replaces it), no
    /// audio session, nothing taken over.
    func openRemoteControl(_ session: AirPlay2Setup.Session, connection: ConnectionContext) -> AirPlayResponse {
        endRemoteControl(on: connection.id)
        do {
            let channel = try makeEventChannel(connection)
            connectionChannels.withLockedValue { $0[connection.id, default: ConnectionChannels()].events = channel }
            logger.info("AirPlay 2 remote-control session", metadata: [
                "sender": "\(session.name ?? "?") (\(session.model ?? "?"))", "event.port": "\(channel.port)",
            ])
            return ControlRouter.plistResponse(AirPlay2SetupReply.session(.init(eventPort: channel.port)).plist, format: .binary)
        } catch {
            logger.warning("AirPlay 2 remote-control session refused", metadata: ["reason": "\(error)"])
            return .text(status: 500, "cannot open the event port: \(error)")
        }
    }

    /// Ends a connection's remote-control-only session and its data streams, if it has them.
    func endRemoteControl(on connection: ObjectIdentifier) {
        guard let channels = connectionChannels.withLockedValue({ $0.removeValue(forKey: connection) }) else { return }
        for stream in channels.dataStreams { stream.close() }
        guard let channel = channels.events else { return }
        channel.close()
        logger.info("AirPlay 2 remote-control session ended", metadata: ["event.port": "\(channel.port)"])
    }

    /// An event channel listening on the connection's address, keyed by its pairing.
    private func makeEventChannel(_ connection: ConnectionContext) throws -> AirPlay2EventChannel {
        guard let secret = connection.pairingSecret else { throw AirPlay2Setup.Refusal(status: 470, description: "the connection is not encrypted") }
        return try AirPlay2EventChannel(connection: connection, keys: try EventChannelKeys(sharedSecret: secret), group: group, logger: logger)
    }

    /// Listens for the session's event channel; the machine turns the outcome into phase 1's reply.
    func openEventPort(_ number: Int, connection: ConnectionContext) -> [AudioSessionStateMachine.Action] {
        do {
            let channel = try makeEventChannel(connection)
            eventChannels.withLockedValue { $0[number] = channel }
            logger.info("AirPlay 2 event channel listening", metadata: ["session": "\(number)", "port": "\(channel.port)"])
            // A PTP session learns where our follower listens: the addresses of the interface
            // the sender reached us on, that address first.
            let ptpSession = machine.withLockedValue { $0.current?.number == number && $0.current?.usesPTP == true }
            let addresses = ptpSession ? connection.local.map(InterfaceAddresses.timingPeers) : nil
            return machine.withLockedValue { $0.eventPortOpened(session: number, port: channel.port, timingPeerAddresses: addresses) }
        } catch {
            return machine.withLockedValue { $0.eventPortFailed(session: number, reason: "cannot open the event port: \(error)") }
        }
    }
}

extension AirPlay2Setup {
    /// Whether a SETUP carries a plist (AirPlay 2) rather than a Transport header (RAOP).
    static func hasPlistBody(_ request: AirPlayRequest) -> Bool {
        if request.headers["Content-Type"]?.lowercased().contains("plist") == true { return true }
        return request.body.readableBytesView.starts(with: Array("bplist".utf8))
    }
}
