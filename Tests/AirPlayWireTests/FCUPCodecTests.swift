import AirPlayPlist
import AirPlayTesting
import AirPlayWire
import Foundation
import Testing

/// FCUP, both ways (Protocol/vectors/video-fcup.json, made by tools/lib/make_fcup_vectors.py):
/// the receiver asks the phone for each playlist of a handed-over video on the event channel
/// (`unhandledURLRequest`), and the phone answers with `POST /action` (`unhandledURLResponse`
/// carrying the playlist's bytes). The request we write must mean what UxPlay's means; every
/// answer a phone writes must read as expected, and every broken one give its reason.
@Suite struct FCUPCodecTests {
    struct File: Decodable {
        struct Request: Decodable { var what: String, url: String, requestID: Int, xml: String }
        struct Action: Decodable {
            var what: String, plist: String, kind: String?, url: String?, requestID: Int?, statusCode: Int?, data: String?
            var succeeded: Bool?, uuid: String?, type: String?, error: String?
        }
        var playbackSessionID: String
        var requests: [Request]
        var actions: [Action]
    }

    static let file = try? ProtocolVectors.load(File.self, from: "video-fcup.json")

    @Test func vectorsArePresent() {
        #expect(Self.file?.requests.count == 2 && Self.file?.actions.count == 12)
    }

    /// Our request for a playlist is UxPlay's, key for key and type for type (every number an
    /// integer), whatever the order the keys are written in.
    @Test func aPlaylistRequestIsTheEventUxPlaySends() throws {
        let file = try #require(Self.file)
        for vector in file.requests {
            let theirs = try PropertyList(decoding: Array(vector.xml.utf8))
            let ours = FCUPRequest(url: vector.url, requestID: vector.requestID, playbackSessionID: file.playbackSessionID)
            #expect(ours.event == theirs, "\(vector.what)")
            // A sender reads it back (ours through libplist's XML, as it goes on the wire).
            let read = try #require(try FCUPRequest(event: try PropertyList(decoding: ours.event.encoded(as: .xml))))
            #expect(read == ours, "\(vector.what)")
        }
    }

    /// What a phone's `/action` bodies say, and why a broken one is refused.
    @Test func aPhonesActionsReadAsTheyMean() throws {
        let file = try #require(Self.file)
        for vector in file.actions {
            let plist = try PropertyList(decoding: VectorDocument.bytes(hex: vector.plist) ?? [])
            let action: VideoAction
            do {
                action = try VideoAction(plist: plist)
            } catch {
                #expect(vector.error.map { error.description.contains($0) } == true, "\(vector.what): \(error)")
                continue
            }
            #expect(vector.error == nil, "\(vector.what): read as \(action)")
            switch action {
            case .unhandledURLResponse(let response):
                #expect(vector.kind == "unhandledURLResponse" && response.url == vector.url && response.requestID == vector.requestID
                        && response.statusCode == vector.statusCode && response.data == Array((vector.data ?? "").utf8)
                        && response.succeeded == vector.succeeded, "\(vector.what)")
            case .playlistInsert(let item):
                #expect(vector.kind == "playlistInsert" && item["uuid"]?.stringValue == vector.uuid, "\(vector.what)")
            case .playlistRemove(let uuid):
                #expect(vector.kind == "playlistRemove" && uuid == vector.uuid, "\(vector.what)")
            case .other(let type):
                #expect(vector.kind == "other" && type == vector.type, "\(vector.what)")
            }
            // The same action written by us (a sender handing over) reads back unchanged.
            #expect(try VideoAction(plist: PropertyList(decoding: action.plist.encoded(as: .binary))) == action, "\(vector.what)")
        }
    }

    /// Bounds: a playlist over 8 MiB, a URL over 8 KiB and more than 32 headers are refused.
    @Test func oversizedAnswersAreRefused() {
        func reason(_ params: [String: PropertyList]) -> String? {
            do {
                _ = try VideoAction(plist: .dictionary(["type": .string("unhandledURLResponse"), "params": .dictionary(params)]))
                return nil
            } catch { return error.description }
        }
        let url = PropertyList.string("mlhls://localhost/master.m3u8")
        #expect(reason(["FCUP_Response_URL": url, "FCUP_Response_Data": .data([UInt8](repeating: 0x23, count: (8 << 20) + 1))])?
            .contains("8 MiB") == true)
        #expect(reason(["FCUP_Response_URL": .string(String(repeating: "a", count: (8 << 10) + 1)), "FCUP_Response_Data": .data([])])?
            .contains("8 KiB") == true)
        let headers = PropertyList.dictionary(Dictionary(uniqueKeysWithValues: (0..<33).map { ("X-\($0)", PropertyList.string("v")) }))
        #expect(reason(["FCUP_Response_URL": url, "FCUP_Response_Data": .data([]), "FCUP_Response_Headers": headers])?
            .contains("32") == true)
    }

    /// A sender reading its event channel tells a playlist request from a state event.
    @Test func aStateEventIsNotAPlaylistRequest() throws {
        #expect(try FCUPRequest(event: .dictionary(["category": .string("video"), "state": .string("playing")])) == nil)
        #expect(throws: FCUPError.self) { try FCUPRequest(event: .dictionary(["type": .string("unhandledURLRequest")])) }
    }
}
