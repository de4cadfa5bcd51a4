@testable import AirPlaySender
import AirPlayWire
import Testing

/// What `airplay pair` and the transient pairing of a stream send with each pairing request,
/// as the receivers of 2026 want it: tvOS 27 refuses `/pair-pin-start` and `/pair-setup`
/// without `X-Apple-Client-Name`, HomePod OS 27 answers only Apple's form of User-Agent.
@Suite struct SenderPairingTests {
    @Test func everyPairingRequestNamesTheSenderInApplesForm() {
        for hkp in ["3", "4"] {
            let headers = ReceiverConnection.pairingHeaders(hkp: hkp)
            #expect(headers["X-Apple-HKP"] == hkp)
            #expect(headers["X-Apple-Client-Name"] == "swift-airplay")
            #expect(headers["User-Agent"]?.hasPrefix("AirPlay/") == true, "\(headers)")
        }
    }
}
