@testable import AirPlayNowPlaying
import AirPlayWire
import Testing

/// What comes from the network into the now-playing path, at random: nothing crashes, nothing
/// unbounded is made, and what is written out stays well framed.
@Suite struct HostileInputTests {
    /// A small deterministic generator (xorshift), so a failure replays.
    struct Bytes {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func bytes(upTo count: Int) -> [UInt8] {
            (0..<Int(next() % UInt64(count + 1))).map { _ in UInt8(truncatingIfNeeded: next()) }
        }
    }

    @Test func randomDMAPBodiesAreReadOrRefusedAndTheirItemsStayFramed() {
        var random = Bytes(state: 0x9E37_79B9_7F4A_7C15)
        var read = 0
        for round in 0..<5000 {
            var body = random.bytes(upTo: 96)
            // Half the rounds look like DMAP: a container with plausible field headers.
            if round % 2 == 0 {
                let field = DMAP.field(["minm", "asar", "asal", "mper", "\u{0}\u{1}\u{2}\u{3}"][round % 5], random.bytes(upTo: 40))
                body = DMAP.field("mlit", field + body.prefix(Int(random.next() % 16)))
            }
            guard let fields = try? DMAPField.fields(of: body) else { continue }
            read += 1
            #expect(fields.reduce(0) { $0 + $1.value.count } <= body.count, "fields never hold more than the body")
            for item in MetadataPipe.items(for: .metadata(fields), state: NowPlayingState()) {
                let text = String(decoding: item.encoded, as: UTF8.self)
                #expect(text.hasPrefix("<item><type>") && text.hasSuffix("</item>\n"))
                #expect(text.filter { $0 == "\n" }.count == (item.data.isEmpty ? 1 : 3), "payloads never break the framing: \(text.prefix(80))")
            }
            var state = NowPlayingState().applying(.began(NowPlayingSender(kind: .audio, name: "x"), format: nil), now: 0)
            state = state.applying(.metadata(fields), now: 1)
            _ = MQTTModel.messages(state, topic: "t", now: 2, cover: true)
            _ = MPRISModel.playerProperties(state, now: 2, artURL: nil)
        }
        #expect(read > 100, "the generator reaches the parser's accepting paths too")
    }

    @Test func randomCommandTextIsACommandOrNothing() {
        var random = Bytes(state: 0xD1B5_4A32_D192_ED03)
        let known = ["play", "pause", "playpause", "stop", "next", "previous", "seek:", "position:", "volume:", "nextitem", "/ctrl-int/1/"]
        for round in 0..<5000 {
            let noise = String(decoding: random.bytes(upTo: 24), as: UTF8.self)
            let text = known[round % known.count] + noise
            if let command = RemoteCommand(name: text) {
                switch command {
                case .seek(let seconds): #expect(seconds.isFinite)
                case .setPosition(let seconds): #expect(seconds.isFinite && seconds >= 0)
                case .setVolume(let decibels): #expect(decibels.isFinite && decibels <= 0 && decibels >= -30)
                default: break
                }
            }
            if let command = DACPCommand(path: text) {
                #expect(DACPCommand(path: command.path) == command, "what is read is what would be sent")
            }
        }
    }
}
