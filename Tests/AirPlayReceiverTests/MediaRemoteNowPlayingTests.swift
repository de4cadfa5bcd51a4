@testable import AirPlayReceiver
import AirPlayNowPlaying
import AirPlayPlist
import AirPlayTesting
import AirPlayWire
import Foundation
import NIOCore
import Testing

/// Now playing from a sender to a receiver with feature bit 50: `POST /command` MediaRemote
/// plists instead of DMAP, artwork and progress parameters. The bodies come from
/// Protocol/vectors/media-remote.json (plistlib's encoder, the shapes of an iPhone's session).
/// `Protocol/now-playing.md` §7.
@Suite struct MediaRemoteNowPlayingTests {
    struct File: Decodable {
        struct Vector: Decodable {
            struct Expected: Decodable {
                var title, artist, album, genre, composer, artworkHex, artworkIdentifier: String?
                var duration, elapsedTime, playbackRate, timestampSinceReferenceDate: Double?
                var uniqueIdentifier, trackNumber: Int64?
            }
            var what: String
            var body: String
            var kind: String
            var mergePolicy: String?
            var empty: Bool?
            var state: Int64?
            var enabled: [Int]?
            var expect: Expected?
        }
        var vectors: [Vector]
    }

    static func vectors() throws -> [File.Vector] { try ProtocolVectors.load(File.self, from: "media-remote.json").vectors }

    static func plist(_ vector: File.Vector) throws -> PropertyList {
        try PropertyList(decoding: try #require(VectorDocument.bytes(hex: vector.body)))
    }

    /// Each body reads as what it is, and as nothing else.
    @Test func theVectorsReadAsTheirKind() throws {
        for vector in try Self.vectors() {
            let plist = try Self.plist(vector)
            let update = MediaRemoteNowPlayingUpdate(plist: plist)
            let state = MediaRemotePlaybackState(plist: plist)
            let commands = MediaRemoteSupportedCommands(plist: plist)
            #expect((update != nil) == (vector.kind == "nowPlaying"), "\(vector.what)")
            #expect((state != nil) == (vector.kind == "playbackState"), "\(vector.what)")
            #expect((commands != nil) == (vector.kind == "supportedCommands"), "\(vector.what)")
            if let update {
                #expect(update.mergePolicy.rawValue == vector.mergePolicy && update.info.isEmpty == vector.empty, "\(vector.what)")
            }
            if let state { #expect(state.rawValue == vector.state) }
            if let commands { #expect(commands.enabled == Set(vector.enabled ?? [])) }
            guard let expected = vector.expect, let info = update?.info else { continue }
            #expect(expected.title.map { $0 == info.title } ?? true, "\(vector.what)")
            #expect(expected.artist.map { $0 == info.artist } ?? true && expected.album.map { $0 == info.album } ?? true)
            #expect(expected.genre.map { $0 == info.genre } ?? true && expected.composer.map { $0 == info.composer } ?? true)
            #expect(expected.duration.map { $0 == info.duration } ?? true && expected.elapsedTime.map { $0 == info.elapsedTime } ?? true)
            #expect(expected.playbackRate.map { $0 == info.playbackRate } ?? true)
            #expect(expected.timestampSinceReferenceDate.map { $0 == info.timestamp?.timeIntervalSinceReferenceDate } ?? true)
            #expect(expected.uniqueIdentifier.map { $0 == info.uniqueIdentifier } ?? true && expected.trackNumber.map { $0 == info.trackNumber } ?? true)
            #expect(expected.artworkHex.map { VectorDocument.bytes(hex: $0) == info.artworkData } ?? true)
            #expect(expected.artworkIdentifier.map { $0 == info.artworkIdentifier } ?? true)
        }
    }

    /// What `airplay` writes reads back as itself, through the binary encoding.
    @Test func whatTheSenderWritesReadsBack() throws {
        var info = MediaRemoteNowPlayingInfo()
        info.title = "Title"
        info.duration = 200
        info.elapsedTime = 1.5
        info.playbackRate = 1
        info.timestamp = Date(timeIntervalSinceReferenceDate: 818_000_000)
        info.trackNumber = 3
        info.isAlwaysLive = false
        info.artworkData = [0xFF, 0xD8, 0xFF, 0xD9]
        let update = MediaRemoteNowPlayingUpdate(mergePolicy: .replace, info: info)
        let decoded = try PropertyList(decoding: update.plist.encoded(as: .binary))
        #expect(MediaRemoteNowPlayingUpdate(plist: decoded) == update)
        #expect(MediaRemotePlaybackState(plist: try PropertyList(decoding: MediaRemotePlaybackState.interrupted.plist.encoded(as: .binary))) == .interrupted)
    }

    /// `update` patches; `replace` starts again, but keeps the cover it names by identifier
    /// (senders send a cover's bytes once).
    @Test func patchesMergeAndReplacementsKeepTheCoverTheyName() {
        var known = MediaRemoteNowPlayingInfo()
        known.title = "One"
        known.album = "Album"
        known.artworkIdentifier = "cover-1"
        known.artworkData = [1, 2, 3]
        var patch = MediaRemoteNowPlayingInfo()
        patch.album = "Patched"
        let patched = MediaRemoteNowPlayingUpdate(mergePolicy: .update, info: patch).applied(to: known)
        #expect(patched.title == "One" && patched.album == "Patched" && patched.artworkData == [1, 2, 3])

        var next = MediaRemoteNowPlayingInfo()
        next.title = "Two"
        next.artworkIdentifier = "cover-1"
        let replaced = MediaRemoteNowPlayingUpdate(mergePolicy: .replace, info: next).applied(to: known)
        #expect(replaced.title == "Two" && replaced.album == nil && replaced.artworkData == [1, 2, 3])
        next.artworkIdentifier = "cover-2"
        #expect(MediaRemoteNowPlayingUpdate(mergePolicy: .replace, info: next).applied(to: known).artworkData == nil)
    }

    /// Progress is never streamed: the elapsed time holds at the timestamp and runs on at the
    /// rate, within the item; a timestamp far off the box's clock (a box without a clock at boot)
    /// is not trusted.
    @Test func theElapsedTimeRunsOnFromItsTimestamp() {
        var info = MediaRemoteNowPlayingInfo()
        info.elapsedTime = 10
        info.duration = 30
        info.playbackRate = 1
        let stamp = Date(timeIntervalSinceReferenceDate: 800_000_000)
        info.timestamp = stamp
        #expect(info.elapsed(at: stamp.addingTimeInterval(5)) == 15)
        #expect(info.elapsed(at: stamp.addingTimeInterval(100)) == 30, "never past the end")
        #expect(info.elapsed(at: nil) == 10, "no clock: as of arrival")
        #expect(info.elapsed(at: stamp.addingTimeInterval(-86_400 * 365 * 20)) == 10, "a clock decades off")
        info.playbackRate = 0
        #expect(info.elapsed(at: stamp.addingTimeInterval(5)) == 10, "paused")
    }

    /// The surfaces hear MediaRemote as they hear DMAP: text as DMAP fields, the cover (again
    /// after new text, which drops it), the position, then the rate.
    @Test func theEventsAreThoseDMAPWouldPost() {
        var first = MediaRemoteNowPlayingInfo()
        first.title = "One"
        first.artist = "Artist"
        first.duration = 180
        first.elapsedTime = 10
        first.playbackRate = 1
        first.artworkData = [0xFF, 0xD8, 0xFF]
        let events = MediaRemoteEvents.events(from: nil, to: first, now: nil)
        #expect(events == [
            .metadata([DMAPField(tag: "minm", text: "One"), DMAPField(tag: "asar", text: "Artist"),
                       DMAPField(tag: "astm", value: [0, 2, 0xBF, 0x20])]),
            .artwork(type: "image/jpeg", bytes: [0xFF, 0xD8, 0xFF]), .position(seconds: 10, duration: 180), .rate(1),
        ])
        var later = first
        later.elapsedTime = 40
        #expect(MediaRemoteEvents.events(from: first, to: later, now: nil) == [.position(seconds: 40, duration: 180)])
        var next = later
        next.title = "Two"
        #expect(MediaRemoteEvents.events(from: later, to: next, now: nil).count == 2, "text, the cover again")
        var bare = next
        bare.artworkData = nil
        #expect(MediaRemoteEvents.events(from: next, to: bare, now: nil) == [.artwork(type: nil, bytes: [])])
        #expect(MediaRemoteEvents.events(from: next, to: next, now: nil).isEmpty)
    }

    /// Through the session machine: every body goes to the metadata pipe as sent; an iPhone's
    /// empty first `replace` changes nothing; the item, a patch and the playback state reach
    /// now playing; another connection's bodies change nothing.
    @Test func theSessionsSenderTellsWhatPlays() throws {
        let sessions = AirPlay2SessionTests()
        var machine = AirPlay2SessionTests.machine()
        _ = try sessions.setUp(&machine, on: sessions.a)
        let bodies = try Dictionary(uniqueKeysWithValues: Self.vectors().map { ($0.what, try #require(VectorDocument.bytes(hex: $0.body))) })
        func post(_ body: [UInt8], on connection: ObjectIdentifier) -> [AudioSessionStateMachine.Action] {
            var buffer = ByteBuffer()
            buffer.writeBytes(body)
            let request = AirPlayRequest(method: "POST", target: "/command", version: .rtsp10,
                                         headers: ["Content-Type": "application/x-apple-binary-plist"], body: buffer)
            return machine.receive(request, on: connection, now: 1, wallClock: Date(timeIntervalSinceReferenceDate: 818_337_600 + 5))
        }
        func events(_ actions: [AudioSessionStateMachine.Action]) -> [NowPlayingEvent] {
            actions.compactMap { if case .nowPlaying(let event) = $0 { event } else { nil } }
        }
        let empty = try #require(bodies["the first message of an iPhone's session: a replace with nothing in it"])
        let emptyActions = post(empty, on: sessions.a)
        #expect(events(emptyActions) == [.commandPlist(empty)] && AirPlay2SessionTests.reply(emptyActions)?.status == 200)

        let whole = events(post(try #require(bodies["a whole item: text, times, the cover's bytes, as an iPhone sends it"]), on: sessions.a))
        #expect(whole.contains { if case .metadata(let fields, _) = $0 { fields.first == DMAPField(tag: "minm", text: "Gear: Chapter 6") } else { false } })
        #expect(whole.contains(.artwork(type: "image/jpeg", bytes: try #require(VectorDocument.bytes(hex: "ffd8ffe000104a46494600010100000100010000ffd9")))))
        // Sent at 12:00:00 with 49.96 s elapsed, read 5 s later.
        #expect(whole.contains { if case .position(let seconds, 3076.752) = $0 { abs(seconds - 54.9557) < 0.001 } else { false } }, "\(whole)")
        #expect(whole.last == .rate(1))

        let patch = events(post(try #require(bodies["a patch: the album alone; mergePolicy update"]), on: sessions.a))
        #expect(patch.count == 3, "the pipe's copy, the text, the cover again (a new album is a new item)")
        #expect(machine.current?.mediaRemote?.album == "Patched" && machine.current?.mediaRemote?.title == "Gear: Chapter 6")
        #expect(events(post(try #require(bodies["the playback state: paused"]), on: sessions.a)).last == .rate(0))
        let device = post(try #require(bodies["DEVICE_INFO: no type, a MediaRemote protocol message (varint length + protobuf) in params.data"]), on: sessions.a)
        #expect(AirPlay2SessionTests.reply(device)?.status == 200 && events(device).count == 1)
        #expect(events(post(empty, on: sessions.b)).isEmpty, "not the session's connection")
    }
}
