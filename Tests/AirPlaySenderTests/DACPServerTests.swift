@testable import AirPlaySender
import AirPlayWire
import NIOCore
import Testing

/// What `airplay stream`'s remote control answers.
@Suite struct DACPServerTests {
    func request(_ target: String, activeRemote: String? = "1234", method: String = "GET") -> AirPlayRequest {
        var request = AirPlayRequest(method: method, target: target, version: .http11)
        if let activeRemote { request.headers.add(name: "Active-Remote", value: activeRemote) }
        return request
    }

    @Test func commandsWithTheSessionsTokenAreCarriedOut() {
        var heard: [DACPCommand] = []
        let reply = DACPRequestHandler.answer(request("/ctrl-int/1/nextitem"), activeRemote: "1234") { heard.append($0) }
        #expect(reply.status == 204 && heard == [.nextItem])
    }

    @Test func strangersAndUnknownCommandsAreRefused() {
        var heard: [DACPCommand] = []
        #expect(DACPRequestHandler.answer(request("/ctrl-int/1/pause", activeRemote: "999"), activeRemote: "1234") { heard.append($0) }.status == 403)
        #expect(DACPRequestHandler.answer(request("/ctrl-int/1/pause", activeRemote: nil), activeRemote: "1234") { heard.append($0) }.status == 403)
        #expect(DACPRequestHandler.answer(request("/ctrl-int/1/format-disk"), activeRemote: "1234") { heard.append($0) }.status == 501)
        #expect(DACPRequestHandler.answer(request("/ctrl-int/1/pause", method: "POST"), activeRemote: "1234") { heard.append($0) }.status == 405)
        #expect(heard.isEmpty)
    }

    @Test func propertiesAreAnsweredAsARemoteWithoutTheAdvancedCommands() {
        let reply = DACPRequestHandler.answer(request("/ctrl-int/1/getproperty?properties=dmcp.volume"), activeRemote: "1234") { _ in }
        #expect(reply.status == 400, "shairport-sync counts 400 as available")
    }

    @Test func theRemotesIDNeverStartsWithZero() {
        // shairport-sync 3.3.8 strips leading zeros from the service name only, so an id such
        // as 0F76… would never be found by its remote control.
        for _ in 0..<2000 {
            let id = RAOPClientIdentity().dacpID
            #expect(id.count == 16 && id.allSatisfy(\.isHexDigit) && !id.hasPrefix("0"), "\(id)")
        }
    }
}
