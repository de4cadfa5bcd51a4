import AirPlayPlist
import AirPlayWire

/// Buffered AirPlay 2 streams (type 103): their audio comes ahead of time over TCP and plays on
/// the sender's rate anchors, placed on its PTP clock (Protocol/airplay2.md, buffered audio).
extension AudioSessionStateMachine {
    /// `SETRATEANCHORTIME`: play from this anchor, or pause (rate 0).
    mutating func rateAnchor(_ request: AirPlayRequest, on connection: ConnectionID) -> [Action] {
        guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
        guard session.buffered, session.stream != nil else {
            return [.reply(.text(status: 455, "SETRATEANCHORTIME needs a buffered stream: SETUP a type 103 stream first"))]
        }
        let anchor: RateAnchor
        do {
            anchor = try RateAnchor(plist: try Self.plistBody(request))
        } catch let refusal as AirPlay2Setup.Refusal {
            return [.reply(.text(status: refusal.status, refusal.description))]
        } catch {
            return [.reply(.text(status: 400, "SETRATEANCHORTIME takes a property list body"))]
        }
        session.paused = !anchor.playing
        if anchor.playing, session.phase == .ready { session.phase = .recording }
        current = session
        return [.anchor(session: session.number, anchor), .nowPlaying(.rate(anchor.playing ? 1 : 0)), .reply(AirPlayResponse(status: 200))]
    }

    /// `FLUSHBUFFERED`: drop buffered audio now (playing stops until the next anchor), or a
    /// range later (playing goes on).
    mutating func flushBuffered(_ request: AirPlayRequest, on connection: ConnectionID) -> [Action] {
        guard var session = owned(by: connection) else { return [.reply(Self.noSession)] }
        guard session.buffered, session.stream != nil else {
            return [.reply(.text(status: 455, "FLUSHBUFFERED needs a buffered stream: SETUP a type 103 stream first"))]
        }
        let flush: BufferedFlush
        do {
            flush = try BufferedFlush(plist: try Self.plistBody(request))
        } catch let refusal as AirPlay2Setup.Refusal {
            return [.reply(.text(status: refusal.status, refusal.description))]
        } catch {
            return [.reply(.text(status: 400, "FLUSHBUFFERED takes a property list body"))]
        }
        var actions: [Action] = [.flushBuffered(session: session.number, flush)]
        if flush.from == nil {
            session.paused = true
            actions.append(.nowPlaying(.flushed))
        }
        current = session
        return actions + [.reply(AirPlayResponse(status: 200))]
    }

    /// `SETPEERS` (an array of addresses) or `SETPEERSX` (dictionaries with `Addresses`): the
    /// group's PTP timing peers. The follower then heeds only masters among them.
    func timingPeers(_ request: AirPlayRequest) -> [Action] {
        guard let plist = try? Self.plistBody(request) else {
            return [.reply(.text(status: 400, "\(request.method) takes a property list body: an array of peers"))]
        }
        let addresses = TimingPeers.addresses(in: plist)
        guard !addresses.isEmpty else { return [.reply(.text(status: 400, "\(request.method) names no peer address"))] }
        return [.timingPeers(Array(addresses.prefix(16))), .reply(AirPlayResponse(status: 200))]
    }

    /// The PTP clock a buffered session plays on is gone (its master silent past the holdover):
    /// the session ends and its connection closes, so the sender knows and the output is free.
    public mutating func clockLost(session number: Int, reason: String) -> [Action] {
        guard let session = current, session.number == number else { return [] }
        current = nil
        return [.endSession(session, reason: reason), .closeConnection(session.connection)]
    }

    /// The request's body as a property list (binary or XML).
    static func plistBody(_ request: AirPlayRequest) throws -> PropertyList {
        try PropertyList(decoding: Array(request.body.readableBytesView))
    }
}
