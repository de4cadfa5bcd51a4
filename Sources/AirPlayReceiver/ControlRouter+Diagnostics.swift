import AirPlayWire
import NIOCore

extension ControlRouter {
    /// `GET /diagnostics` (on the box, or to a paired admin controller over pair-verify):
    /// everything `airplay doctor` needs to say why the box is silent or unreachable, in one answer: what it offers, whether its mDNS records are
    /// out, the PTP clocks it hears, what plays now and how the last sessions ended.
    static func diagnostics(_ router: ControlRouter, connection: ConnectionContext?) -> AirPlayResponse {
        guard isLoopback(connection) || isVerifiedAdmin(router, connection) else {
            return .text(status: 403, "/diagnostics is served to programs on this box, and elsewhere to an admin controller "
                + "after pair-verify (airplay pair HOST, then airplay doctor HOST)")
        }
        let info = router.serverInfo()
        let capabilities = info.capabilities
        var object: [String: JSONValue] = [
            "name": .string(info.name), "deviceID": .string(info.deviceID.colonForm),
            "offers": .object([
                "audio": .bool(router.activeAudio != nil), "video": .bool(router.activeVideo != nil && capabilities.video),
                "airplay2": .bool(capabilities.airPlay2Pairing), "bufferedAudio": .bool(capabilities.bufferedAudio),
                "ptpTiming": .bool(capabilities.ptpTiming),
                "pairingRequired": .bool(capabilities.pairingRequired), "passwordRequired": .bool(capabilities.passwordRequired),
            ]),
            "mdns": router.publicationStatus?() ?? .null,
            "ptp": router.ptpStatus?() ?? .null,
            "ptpUnavailable": .string(router.ptpUnavailable),
        ]
        if let pairing = router.pairing {
            // Who is locked out of pair-setup, and for how long: a guesser, or the owner after typos.
            object["pairingLockouts"] = .array(pairing.lockouts.map { lockout in
                .object(["source": .string(lockout.source), "failures": .integer(lockout.failures), "seconds": .integer(lockout.seconds)])
            })
        }
        if let audio = router.activeAudio {
            object["nowPlaying"] = .object(audio.nowPlaying.state.json(now: audio.nowPlaying.now()))
            object["session"] = audio.currentSessionJSON
            object["sessions"] = audio.historyJSON
        }
        var body = ByteBuffer()
        body.writeBytes(JSONValue.object(object).bytes)
        return AirPlayResponse(status: 200, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A connection encrypted by pair-verify with a stored admin controller (the session
    /// history names senders and addresses: not for whoever reaches the port).
    private static func isVerifiedAdmin(_ router: ControlRouter, _ connection: ConnectionContext?) -> Bool {
        guard let connection, let pairing = router.pairing else { return false }
        return pairing.isVerifiedAdmin(connection.id)
    }
}
