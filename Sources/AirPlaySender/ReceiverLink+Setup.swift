import AirPlayCrypto
import AirPlayMedia
import AirPlayTiming
import AirPlayWire

/// The network half of `SenderSetupMachine`: each action carried out on this link's connection,
/// sockets and event channel, each outcome handed back, until the machine finishes or fails.
extension ReceiverLink {
    /// OPTIONS (checking the Apple-Response), ANNOUNCE (ALAC if the receiver lists it, else PCM;
    /// encrypted when it lists RSA), SETUP, RECORD from `sequence`/`rtpTime`, and the volume; or
    /// the AirPlay 2 realtime setup when the link is AirPlay 2.
    public func setUp(sequence: UInt16, rtpTime: UInt32, volumeDecibels: Double, warn: (String) -> Void) async throws(SenderError) {
        let route: SenderSetupMachine.Route
        var pendingEncryptor: RAOPPacketEncryptor?
        if airPlay2 {
            guard client.connection.pairingSecret != nil else { throw AirPlay2SenderSession.notEncrypted }
            let key = try makeStreamKey()
            let alac = traits.codecs.contains(1) || !traits.advertised
            if let ptpClock {
                // Realtime on PTP: our grandmaster is the timing peer; 0xD7 anchors replace syncs.
                let (local, remote) = ptpAddresses
                take(ptpClock, for: remote)
                route = .realtime(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: [local]), alac: alac,
                                  streamKey: key, ssrc: streamSSRC, peers: [local, remote])
            } else {
                route = .realtime(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: nil), alac: alac,
                                  streamKey: key, ssrc: streamSSRC)
            }
        } else {
            if crypto != nil {
                do { pendingEncryptor = try RAOPPacketEncryptor() } catch { throw SenderError(.badInput, "cannot make a stream key: \(error)") }
            }
            var codecs: [Codec] = []
            if traits.codecs.contains(1) { codecs.append(.alac) }
            if traits.codecs.contains(0) || !traits.advertised { codecs.append(.pcm) }
            let announcements = try codecs.map { (codec) throws(SenderError) in
                SenderSetupMachine.Announcement(codec: codec, clear: try sdp(codec, encryptor: nil),
                                                encrypted: try pendingEncryptor.map { (encryptor) throws(SenderError) in try sdp(codec, encryptor: encryptor) })
            }
            route = .raop(traits: traits, challenge: crypto == nil ? nil : SecureRandom.bytes(16), announcements: announcements)
        }
        let outcome = try await carryOut(SenderSetupMachine(route: route, receiverName: name, sequence: sequence, rtpTime: rtpTime,
                                                            volumeDecibels: volumeDecibels), warn: warn)
        codec = outcome.codec
        identityVerified = outcome.identityVerified
        encryptor = outcome.encrypted ? pendingEncryptor : nil
        packets.encryptor = encryptor
        aim(audioPort: outcome.audioPort ?? 0, controlPort: outcome.controlPort ?? 0, timingPort: outcome.timingPort)
        if let ptpClock { await awaitReceiverClock(ptpClock, warn: warn) }
    }

    /// The buffered AirPlay 2 setup (stream type 103, PTP timed by `grandmaster`): phase 1 with
    /// our grandmaster as timing peer, RECORD, SETPEERS, phase 2 for one stream in `codec` and
    /// `format` with a fresh `shk`, then the TCP data connection and the volume.
    func setUpBuffered(grandmaster: PTPGrandmaster, format: PCMFormat, codec: BufferedCodec, volumeDecibels: Double,
                       warn: (String) -> Void = { _ in }) async throws(SenderError) {
        guard client.connection.pairingSecret != nil else { throw AirPlay2SenderSession.notEncrypted }
        let (local, remote) = ptpAddresses
        take(grandmaster, for: remote)
        let key = try makeStreamKey()
        // The SSRC names the format, as Apple's senders write it: shairport-sync decodes by it.
        let compression = codec == .aac ? 4 : 2
        if let code = BufferedFormatCode.ssrc(compression: compression, sampleRate: format.sampleRate, bitsPerSample: format.bitsPerSample) {
            streamSSRC = code
        }
        let stream = AirPlay2SenderSession.bufferedStream(
            compression: compression, audioFormat: Self.formatBit(format, codec: codec),
            samplesPerFrame: codec == .aac ? 1024 : Self.framesPerPacket, format: format, key: key, ssrc: streamSSRC)
        let route = SenderSetupMachine.Route.buffered(session: AirPlay2SenderSession.describe(timingPort: nil, ptpPeers: [local]),
                                                      stream: stream, peers: [local, remote])
        let outcome = try await carryOut(SenderSetupMachine(route: route, receiverName: name, sequence: 0, rtpTime: 0,
                                                            volumeDecibels: volumeDecibels), warn: { _ in })
        self.codec = outcome.codec
        await awaitReceiverClock(grandmaster, warn: warn)
    }

    /// How long a receiver that insists on its own clock has to send it after SETPEERS.
    static let receiverClockTimeout = 5.0

    /// Serves `clock` to the receiver at `remote`, or follows the receiver's own clock on it.
    private func take(_ clock: PTPGrandmaster, for remote: String) {
        if followsReceiverClock { clock.followClock(of: remote) } else { clock.addFollower(remote) }
    }

    /// A receiver whose clock is followed starts sending it once SETPEERS named us: waits for
    /// it, and anchors this link on it. One that sends nothing within `receiverClockTimeout`
    /// is served our clock after all, with a warning.
    private func awaitReceiverClock(_ clock: PTPGrandmaster, warn: (String) -> Void) async {
        guard followsReceiverClock else { return }
        let (_, remote) = ptpAddresses
        if let followed = await clock.waitForFollowedClock(timeout: Self.receiverClockTimeout) {
            receiverTimeline = followed.timeline
            return
        }
        warn("\(name) sent no PTP clock within \(Int(Self.receiverClockTimeout)) s: serving it ours")
        followsReceiverClock = false
        clock.stopFollowingClock(of: remote)
        clock.addFollower(remote)
    }

    /// Our address and the receiver's on the control connection, as PTP peers name them.
    var ptpAddresses: (local: String, remote: String) {
        (IPAddressBytes.plain(client.connection.localAddress?.ipAddress ?? ""),
         IPAddressBytes.plain(client.connection.remoteIP ?? client.connection.host))
    }

    /// Carries the machine's actions out until it finishes (its outcome) or fails (thrown).
    func carryOut(_ machine: SenderSetupMachine, warn: (String) -> Void) async throws(SenderError) -> SenderSetupMachine.Outcome {
        var machine = machine
        var actions = machine.start()
        // A setup is about a dozen steps: the bound only stops a machine that would never end.
        for _ in 0..<64 {
            var next: [SenderSetupMachine.Action] = []
            for action in actions {
                switch action {
                case .send(let request):
                    next = machine.replied(try await client.exchange(request))
                case .openUDPPort:
                    try await openUDPPort()
                    next = machine.udpPortOpened(channel?.localAddress?.port ?? 0)
                case .verifyAppleResponse(let answer, let challenge):
                    let address = client.connection.remoteIP.map(IPAddressBytes.of) ?? []
                    let verified = crypto?.verify(appleResponse: answer, challenge: challenge, receiverAddress: address,
                                                  deviceID: traits.deviceID) ?? false
                    next = machine.identityChecked(verified)
                case .connectEventChannel(let port):
                    session = try await AirPlay2SenderSession.connect(client: client, eventPort: port, inbox: remoteCommands)
                    next = machine.eventChannelConnected()
                case .connectDataPort(let port):
                    dataConnection = try BufferedDataConnection(host: IPAddressBytes.plain(client.connection.remoteIP ?? client.connection.host),
                                                                port: port)
                    next = machine.dataConnectionOpened()
                case .adoptSession(let id):
                    client.session = id
                case .warn(let message):
                    warn(message)
                case .finished(let outcome):
                    return outcome
                case .failed(let error):
                    refusedNativeStreams = machine.refusedNativeStreams
                    throw error
                }
            }
            actions = next
        }
        throw SenderError(.badInput, "the setup of \(name) did not finish")
    }
}
