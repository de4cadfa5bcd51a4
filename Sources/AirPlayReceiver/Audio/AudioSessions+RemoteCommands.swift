import AirPlayNowPlaying
import AirPlayPlist
import AirPlayWire
import FoundationEssentials
import NIOCore

/// The box's remote commands to the sender of the AirPlay 2 session that plays, on that
/// session's event channel (`POST /command`, `sendMediaRemoteCommand`).
extension AudioSessions: SenderEventChannel {
    /// The event channel of the session that plays, when its sender has connected it.
    private var playingEventChannel: AirPlay2EventChannel? {
        guard let number = machine.withLockedValue({ $0.current?.number }),
              let channel = eventChannels.withLockedValue({ $0[number] }), channel.isConnected else { return nil }
        return channel
    }

    /// Whether the playing session's sender has its event channel connected.
    public var isEventChannelOpen: Bool { playingEventChannel != nil }

    /// Sends `command` on the playing session's event channel; a 2xx answer is success.
    public func send(_ command: MediaRemoteCommand, completion: @escaping @Sendable (Result<Void, RemoteControlError>) -> Void) {
        guard let channel = playingEventChannel else {
            return completion(.failure(RemoteControlError("no AirPlay 2 session with an event channel plays")))
        }
        let request = Self.commandRequest(command, commandID: UUID().uuidString)
        channel.send(request) { outcome in
            switch outcome {
            case .answered(let status) where (200..<300).contains(status): completion(.success(()))
            case .answered(let status): completion(.failure(RemoteControlError("the sender answered \(status)")))
            case .failed(let reason): completion(.failure(RemoteControlError(reason)))
            case .timedOut(let reason): completion(.failure(RemoteControlError(reason, mayHaveActed: true)))
            }
        }
    }

    /// `POST /command` carrying `command` as a binary plist.
    static func commandRequest(_ command: MediaRemoteCommand, commandID: String) -> AirPlayRequest {
        var body = ByteBuffer()
        body.writeBytes(command.plist(commandID: commandID).encoded(as: .binary))
        return AirPlayRequest(method: "POST", target: MediaRemoteCommand.path, version: .rtsp10,
                              headers: ["Content-Type": PropertyListFormat.binary.contentType], body: body)
    }
}

extension AudioSessions {
    /// A sender's volume: on the card's mixer when the box has one (the samples stay
    /// bit-perfect), else scaling the session's samples.
    func applyVolume(_ decibels: Double, session number: Int) {
        if let hardwareVolume {
            hardwareVolume.setVolume(decibels: decibels)
        } else {
            sessions.withLockedValue { $0[number] }?.playout?.setVolume(decibels: decibels)
        }
        logger.info("audio volume", metadata: ["session": "\(number)", "volume.dB": "\(decibels)"])
    }
}

extension AudioSessions {
    /// The audio session's sender asked something on another connection (a video's
    /// `/playback-info`, `/action`): its session stays alive without RTSP (`senderActive`).
    public func senderActive(remote: SocketAddress?) {
        guard let remote else { return }
        let host = RAOPPorts.hostBytes(remote)
        machine.withLockedValue { $0.senderActive(host: host, now: self.now()) }
    }
}
