import AirPlayTiming
import NIOCore

/// The sender's clock, asked for: RAOP receivers time the sender with NTP-style requests on
/// its timing port (`SenderTimeline` reads the answers).
extension AudioSessions {
    /// When the first timing requests go, in milliseconds from SETUP: eight in 0.4 s, before a
    /// sender's first frame is due (a quarter second at the least, two seconds from most). The
    /// quickest answer sets the offset the playout starts on. Three once went: behind 20 ± 10 ms
    /// each way with 5 % loss, a run started about 28 ms off the timeline its later answers drew
    /// (the playout cut two packets to follow, and stayed 12 ms off), as when two of the three
    /// are lost and the third is slow (answers there take 27-97 ms).
    static let firstTimingRequests = [0, 30, 60, 100, 150, 200, 300, 400]

    /// Asks the sender for its clock: `firstTimingRequests`, then one every 2 s for the drift,
    /// until the channel closes.
    func startTimingRequests(_ resources: RAOPSessionResources, channel: any Channel, descriptor: Int32) {
        guard let destination = resources.state.withLockedValue({ $0.senderTiming }) else { return }
        let send = { @Sendable in RAOPPorts.send(SenderTimeline.request(), on: channel, descriptor: descriptor, to: destination) }
        for delay in Self.firstTimingRequests {
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) { if channel.isActive { send() } }
        }
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(2), delay: .seconds(2)) { _ in send() }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }
}
