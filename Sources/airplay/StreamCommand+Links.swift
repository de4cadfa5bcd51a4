import AirPlayMedia
import AirPlaySender
import AirPlayTiming
import AirPlayWire
import Logging

extension StreamCommand {
    /// A buffered stream's source in the format chosen for its receivers (`BufferedFormatChoice`):
    /// as it is, or converted (`ResampledPCMSource`).
    func convert(_ source: any PCMSource, for links: [ReceiverLink]) throws(SenderError) -> any PCMSource {
        // Realtime streams are CD audio; a mixed group's buffered receivers take the same samples.
        let chosen = links.allSatisfy(\.buffered)
            ? BufferedFormatChoice.format(for: source.format, codec: codec, offers: links.map { $0.info?.bufferedFormats }, rate: rate)
            : PCMFormat.cd
        guard chosen != source.format else { return source }
        do {
            return try ResampledPCMSource(source, to: chosen)
        } catch {
            throw SenderError(.badInput, "cannot convert \(source.format) to \(chosen): \(error.message)")
        }
    }

    /// Carries out the clock plan: the realtime links on PTP get `shared` (the buffered
    /// grandmaster) or a grandmaster of their own, which is returned; the followed link is
    /// marked. Without the right to serve a clock (UDP 319/320 taken, or no privilege), `auto`
    /// plays the realtime links on NTP with a warning and `ptp` is an error.
    func carryOut(_ plan: StreamClockPlan, on links: [ReceiverLink], sharing shared: PTPGrandmaster?,
                  display: StreamDisplay) throws(SenderError) -> PTPGrandmaster? {
        var plan = plan
        var clock = shared
        if plan.needsRealtimeClock {
            do {
                clock = try PTPGrandmaster(clockIdentity: PTPGrandmaster.randomClockIdentity(), logger: Logger(label: "airplay"))
            } catch {
                plan = try plan.withoutRealtimePTP(because: "\(error)")
            }
        }
        for warning in plan.warnings { display.warn(warning) }
        for (index, link) in links.enumerated() {
            if plan.realtimeOnPTP.contains(index) { link.ptpClock = clock }
            link.followsReceiverClock = plan.followed == index
        }
        return plan.realtimeOnPTP.isEmpty ? nil : clock
    }

    /// Hands the commands `link`'s receiver sends on its AirPlay 2 event channel to the session.
    static func obeyRemoteCommands(_ link: ReceiverLink, _ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) {
        link.remoteCommands.deliver { command in
            if let event = event(for: command.dacpEquivalent) { continuation.yield(event) }
        }
    }

    /// The session event a receiver's remote command asks for (DACP, or the AirPlay 2 event
    /// channel's by its DACP equivalent).
    static func event(for command: DACPCommand) -> RAOPStreamSession.Event? {
        switch command {
        case .play: .setPaused(false)
        case .pause: .setPaused(true)
        case .playPause: .togglePause
        case .stop: .quit
        case .nextItem: .skip(1)
        case .previousItem: .skip(-1)
        case .volumeUp: .volume(5)
        case .volumeDown: .volume(-5)
        case .setDeviceVolume(let decibels): .setVolume(100 * AirPlayVolume.linear(decibels: decibels))
        case .getProperty: nil
        }
    }
}
