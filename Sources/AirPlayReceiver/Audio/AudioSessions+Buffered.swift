import AirPlayMedia
import AirPlayWire

/// Buffered AirPlay 2 streams carried out for the machine: the TCP data connection, packets
/// opened and decoded into the playout, anchors and flushes applied to it.
extension AudioSessions {
    /// Buffered audio held before the reader stops and TCP holds the sender back (seconds).
    static let bufferedAhead = 4.0

    /// Opens a buffered stream's TCP data port (and a UDP control port senders expect to be
    /// named); the machine turns the outcome into SETUP's reply.
    func openBufferedPorts(_ resources: RAOPSessionResources, playout: AudioPlayout) -> [AudioSessionStateMachine.Action] {
        let number = resources.number
        let stream = resources.stream
        let packetsAhead = Int(Self.bufferedAhead * Double(stream.sampleRate) / Double(max(1, stream.framesPerPacket)))
        let local = resources.connection.local
        do {
            let receiver = try BufferedDataReceiver(
                local: local, expectedHost: resources.senderHost,
                isFull: { playout.bufferedPackets >= packetsAhead },
                packet: { [weak self, weak resources] packet in
                    guard let self, let resources else { return }
                    self.bufferedPacket(packet, session: resources, playout: playout)
                },
                malformed: { [weak self, weak resources] reason in
                    guard let self, let resources else { return }
                    self.dropped(resources, .malformed, reason)
                },
                ended: { [weak self] reason in
                    self?.logger.info("buffered data connection ended", metadata: ["session": "\(number)", "reason": "\(reason)"])
                })
            let (control, controlPort) = try RAOPPorts.bindUDP(local: local)
            let handler = RAOPDatagramHandler(role: .control, session: resources, owner: self)
            RAOPPorts.adopt(control, group: group, handler: handler) { channel in _ = resources.adopt(channel, as: .control, descriptor: control) }
            resources.state.withLockedValue { state in
                state.playout = playout
                state.dataReceiver = receiver
            }
            logger.info("buffered audio setup", metadata: ["session": "\(number)", "dataPort": "\(receiver.port)", "controlPort": "\(controlPort)",
                                                            "ahead.packets": "\(packetsAhead)"])
            return machine.withLockedValue { $0.portsOpened(session: number, audio: receiver.port, control: controlPort, timing: 0) }
        } catch {
            playout.stop()
            return machine.withLockedValue { $0.portsFailed(session: number, reason: "cannot open the buffered data port: \(error)") }
        }
    }

    /// A packet from the data connection: opened with `shk`, decoded, into the playout.
    func bufferedPacket(_ packet: BufferedAudioPacket, session resources: RAOPSessionResources, playout: AudioPlayout) {
        senderAlive(resources)
        let payload = packet.sealed.withUnsafeBytes { resources.cipher?.open($0, timestamp: packet.timestamp, ssrc: packet.ssrc) }
        guard let payload else {
            return dropped(resources, .unauthenticated, "buffered audio packet does not authenticate (AirPlay 2 shk)")
        }
        let sequence = UInt16(truncatingIfNeeded: packet.sequence)
        guard case .queued(let queue) = resources.decoding else {
            return decode(payload, timestamp: packet.timestamp, sequence: sequence, playout: playout, session: resources)
        }
        // A decoder that may wait (AAC through GStreamer) is waited for here, on the reader's
        // thread: seconds of packets arrive at once, and queueing them would overflow the queue.
        switch queue.decodeAndWait(payload) {
        case .success(let samples): playout.receive(timestamp: packet.timestamp, samples: samples)
        case .failure(let error): dropped(resources, .undecodable, "\(error)", sequence: sequence)
        }
    }

    /// SETRATEANCHORTIME: the timeline takes the anchor; a play anchor restarts the playout there.
    func applyAnchor(_ anchor: RateAnchor, session number: Int) {
        guard let resources = sessions.withLockedValue({ $0[number] }), let timeline = resources.anchored else { return }
        timeline.set(anchor)
        if anchor.playing, let rtpTime = anchor.rtpTime { resources.playout?.restart(at: rtpTime) }
        logger.info("buffered audio anchor", metadata: [
            "session": "\(number)", "rate": "\(anchor.playing ? 1 : 0)", "rtpTime": "\(anchor.rtpTime.map(String.init) ?? "-")",
            "networkTime.ns": "\(anchor.networkTime.map(String.init) ?? "-")",
            "timeline": "\(anchor.timeline.map { String($0, radix: 16) } ?? "-")",
        ])
    }

    /// How long a playing buffered stream waits for a PTP clock (after the follower's own 30 s
    /// holdover of a silent master) before its session ends.
    static let clockLossLimit = 5.0

    /// Once a second: a playing buffered session whose PTP master is gone (past the follower's
    /// holdover) ends after `clockLossLimit`, saying why, rather than hold the output silent.
    func checkClocks(now: Double) {
        for resources in sessions.withLockedValue({ Array($0.values) }) {
            guard resources.buffered, let timeline = resources.anchored, timeline.current?.playing == true else { continue }
            let missing = ptp?.masterTime() == nil
            let since = resources.state.withLockedValue { state -> Double? in
                if !missing { state.clockMissingSince = nil } else if state.clockMissingSince == nil { state.clockMissingSince = now }
                return state.clockMissingSince
            }
            guard let since, now - since >= Self.clockLossLimit else { continue }
            let reason = "the PTP master \(timeline.current?.timeline.map { String($0, radix: 16) } ?? "") has been silent past its holdover"
            logger.warning("buffered session ends: no PTP clock", metadata: ["session": "\(resources.number)", "reason": "\(reason)"])
            perform(machine.withLockedValue { $0.clockLost(session: resources.number, reason: reason) })
        }
    }

    /// FLUSHBUFFERED: an immediate flush drops what is buffered before `until` and stops until
    /// the next anchor; a deferred one drops its range and playing goes on.
    func applyFlush(_ flush: BufferedFlush, session number: Int) {
        guard let resources = sessions.withLockedValue({ $0[number] }), let playout = resources.playout else { return }
        if let from = flush.from {
            playout.discard(from: from.timestamp, until: flush.until.timestamp)
        } else {
            resources.anchored?.set(RateAnchor(playing: false, rtpTime: nil, networkTime: nil, timeline: nil))
            playout.flush(before: flush.until.timestamp)
        }
        logger.info("buffered audio flush", metadata: [
            "session": "\(number)", "from.ts": "\(flush.from.map { String($0.timestamp) } ?? "-")", "until.ts": "\(flush.until.timestamp)",
        ])
    }
}
