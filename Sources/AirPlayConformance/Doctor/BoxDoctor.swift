import AirPlaySender
import AirPlayPairing
import AirPlayPlist
import AirPlayWire
import NIOCore

/// Gathers what `airplay doctor` judges (`BoxDiagnosis`): how the control port takes a
/// connection, what `GET /info` and `GET /diagnostics` say, and what an mDNS browse from this
/// machine sees.
public enum BoxDoctor {
    /// Asks the box at `host`:`port`; `browse` (seconds, or nil to skip) browses mDNS from here.
    /// A box elsewhere gives its own figures to an admin controller only: with `credentials`
    /// that hold a pairing with it (`airplay pair`), the connection is pair-verified first.
    public static func observe(host: String, port: Int, timeout: Double = 3, browse: Double? = 3,
                               credentials: SenderCredentials? = nil) async -> DoctorObservations {
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var seen = DoctorObservations(target: target, local: isLoopback(host), reach: TCPProbe.probe(host: host, port: port, timeout: timeout))
        var deviceID: String?
        if case .answered = seen.reach, let connection = try? await ReceiverConnection.connect(host: host, port: port, timeout: timeout) {
            if let info = try? await get("/info", on: connection, timeout: timeout), info.status == 200,
               let list = try? PropertyList(decoding: Array(info.body.readableBytesView)) {
                seen.infoName = list["name"]?.stringValue
                deviceID = list["deviceid"]?.stringValue
            }
            if !seen.local, let credentials, let receiver = pairing(in: credentials, deviceID: deviceID, host: host, port: port) {
                do {
                    try await connection.pairVerify(identity: credentials.identity, receiver: receiver)
                    await readReport(on: connection, timeout: timeout, pairVerified: true, into: &seen)
                } catch {
                    seen.reportMissing = "pair-verify with the stored pairing failed (\(error.message))"
                }
            } else {
                await readReport(on: connection, timeout: timeout, pairVerified: false, into: &seen)
            }
            await connection.close()
        }
        if let browse, case .answered = seen.reach {
            seen.browse = browseFor(deviceID: seen.report?.deviceID ?? deviceID, name: seen.report?.mdns?.name ?? seen.infoName, seconds: browse)
        }
        return seen
    }

    /// `GET /diagnostics`, or why the box did not give it.
    static func readReport(on connection: ReceiverConnection, timeout: Double, pairVerified: Bool, into seen: inout DoctorObservations) async {
        switch try? await get("/diagnostics", on: connection, timeout: timeout) {
        case .some(let answer) where answer.status == 200:
            do {
                seen.report = try BoxReport(json: Array(answer.body.readableBytesView))
                // Figures that came unencrypted can only have come from the box itself.
                seen.local = !pairVerified
                seen.pairVerified = pairVerified
            } catch {
                seen.reportMissing = "its /diagnostics did not read (\(error))"
            }
        case .some(let answer) where answer.status == 403:
            seen.reportMissing = pairVerified ? "the pairing this machine holds is not an admin's"
                : "the box gives them to programs on the box, or to a paired admin (`airplay pair \(seen.target)`)"
        case .some(let answer):
            seen.reportMissing = "the receiver has no /diagnostics (HTTP \(answer.status)): not airplayd, or an older one"
        case .none:
            seen.reportMissing = "the receiver did not answer /diagnostics"
        }
    }

    /// The stored pairing with this box, under the key `airplay pair` used (`ReceiverAddress.key`):
    /// the device id when the box was found by name, HOST:PORT when it was given by address.
    static func pairing(in credentials: SenderCredentials, deviceID: String?, host: String, port: Int) -> PairingClient.ReceiverCredentials? {
        if let id = deviceID.flatMap(DeviceID.init)?.colonForm, let pairing = credentials.receivers[id] { return pairing }
        return credentials.receivers["\(host):\(port)"]
    }

    static func get(_ path: String, on connection: ReceiverConnection, timeout: Double) async throws -> AirPlayResponse {
        try await connection.send(AirPlayRequest(method: "GET", target: path, version: .http11,
                                                 headers: ["User-Agent": RAOPClient.userAgent], body: ByteBuffer()), timeout: timeout)
    }

    static func browseFor(deviceID: String?, name: String?, seconds: Double) -> DoctorObservations.Browse {
        do {
            let receivers = try ReceiverBrowser.discover(timeoutSeconds: seconds)
            let seen = receivers.contains { receiver in
                if let deviceID, let id = receiver.deviceID, id.colonForm.caseInsensitiveCompare(deviceID) == .orderedSame { return true }
                return name != nil && receiver.name == name
            }
            return .browsed(names: receivers.map(\.name), boxSeen: seen)
        } catch {
            return .unavailable("\(error)")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
