import AirPlayPairing
import AirPlayWire

/// What a control connection holds besides its audio session: a remote-control-only session's
/// event channel and the data streams (type 130) it set up.
struct ConnectionChannels {
    /// The remote-control-only session's event channel.
    var events: AirPlay2EventChannel?
    /// The data streams, in the order set up.
    var dataStreams: [AirPlay2DataStream] = []
}

/// AirPlay 2 data streams (`Protocol/airplay2.md` §18): an iPhone's MediaRemote channel, on a
/// remote-control-only session or beside audio. Nothing is taken over and PTP is untouched.
extension AudioSessions {
    /// What a remote-control-only session's requests need before the audio machine: TEARDOWN
    /// ends its channels (and goes on to the machine), RECORD is answered 200 when the
    /// connection holds no audio session (pyatv's tunnel sends it between its two SETUPs, as
    /// to an Apple TV); nil to go on.
    func remoteControlRequest(_ request: AirPlayRequest, on connection: ObjectIdentifier) -> AirPlayResponse? {
        if request.method == "TEARDOWN" { endRemoteControl(on: connection) }
        guard request.method == "RECORD", connectionChannels.withLockedValue({ $0[connection]?.events != nil }),
              machine.withLockedValue({ $0.current?.connection != connection }) else { return nil }
        return AirPlayResponse(status: 200)
    }

    /// The most data streams one control connection may hold (iOS sets up one).
    static let maximumDataStreams = 4

    /// Listens for the stream and answers with its port; 470 without a pairing (its keys come
    /// from it), 453 beyond `maximumDataStreams`.
    func openDataStream(_ setup: DataStreamSetup, connection: ConnectionContext) -> AirPlayResponse {
        guard let secret = connection.pairingSecret else {
            return .text(status: 470, "a data stream needs an encrypted connection: pair-verify or transient pair-setup first")
        }
        let count = connectionChannels.withLockedValue { $0[connection.id]?.dataStreams.count ?? 0 }
        guard count < Self.maximumDataStreams else {
            return .text(status: 453, "at most \(Self.maximumDataStreams) data streams per connection")
        }
        do {
            let stream = try AirPlay2DataStream(connection: connection, keys: try DataStreamKeys(sharedSecret: secret, seed: setup.seed),
                                                streamID: count + 1, group: group, logger: logger) { [nowPlaying] command, completion in
                nowPlaying.perform(command, completion: completion)
            }
            connectionChannels.withLockedValue { $0[connection.id, default: ConnectionChannels()].dataStreams.append(stream) }
            logger.info("AirPlay 2 data stream listening", metadata: [
                "port": "\(stream.port)", "client.type": "\(setup.clientTypeUUID ?? "-")", "stream": "\(stream.streamID)",
            ])
            return ControlRouter.plistResponse(DataStreamSetup.reply(streamID: stream.streamID, dataPort: stream.port), format: .binary)
        } catch {
            logger.warning("AirPlay 2 data stream refused", metadata: ["reason": "\(error)"])
            return .text(status: 500, "cannot open the data port: \(error)")
        }
    }
}
