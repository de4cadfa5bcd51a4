import AirPlayWire

/// The shairport-sync metadata pipe: the same item stream shairport-sync 3.3 writes, so its
/// readers (shairport-sync-metadata-reader, Home Assistant add-ons, OLED scripts) work
/// unchanged. Items are `core` DMAP fields as the sender sent them, and `ssnc` items for the
/// session's life (`Protocol/metadata.md` lists them and where we differ).
public final class MetadataPipe: NowPlayingSurface {
    private let writer: MetadataPipeWriter

    /// Writes to the FIFO at `path`, making it when missing; fails when something else is there.
    public init(path: String) throws {
        writer = try MetadataPipeWriter(path: path)
    }

    deinit { writer.close() }

    /// Stops writing.
    public func stop() { writer.close() }

    /// Items dropped because nobody read or the reader fell behind.
    public var droppedItems: Int { writer.droppedItems }

    /// Writes the items for `event`.
    public func nowPlaying(_ event: NowPlayingEvent, state: NowPlayingState, at time: Double) {
        for item in Self.items(for: event, state: state) { writer.write(item.encoded) }
    }

    /// One item of the stream: a type (`core` or `ssnc`), a code and a payload.
    public struct Item: Hashable, Sendable {
        /// `core` or `ssnc`.
        public var type: String
        /// The DMAP tag or ssnc code.
        public var code: String
        /// The payload.
        public var data: [UInt8]

        /// An item from its parts.
        public init(_ type: String, _ code: String, _ data: [UInt8] = []) {
            self.type = type
            self.code = code
            self.data = data
        }

        /// An ssnc item with a text payload.
        static func ssnc(_ code: String, _ text: String? = nil) -> Item { Item("ssnc", code, Array((text ?? "").utf8)) }

        /// The item as the pipe carries it: type and code as 8 hex digits, the payload's length
        /// in bytes, and the payload in base64 on a line of its own (left out when empty).
        public var encoded: [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(96 + (data.count + 2) / 3 * 4)
            bytes += Self.itemOpen
            bytes += Self.hex(type).utf8
            bytes += Self.typeClose
            bytes += Self.hex(code).utf8
            bytes += Self.codeClose
            bytes += String(data.count).utf8
            bytes += Self.lengthClose
            if !data.isEmpty {
                bytes += Self.dataOpen
                Self.appendBase64(data, to: &bytes)
                bytes += Self.dataClose
            }
            bytes += Self.itemClose
            return bytes
        }

        private static let itemOpen = Array("<item><type>".utf8), typeClose = Array("</type><code>".utf8)
        private static let codeClose = Array("</code><length>".utf8), lengthClose = Array("</length>".utf8)
        private static let dataOpen = Array("\n<data encoding=\"base64\">\n".utf8), dataClose = Array("</data>".utf8)
        private static let itemClose = Array("</item>\n".utf8)
        private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

        /// Standard base64 with padding, on one line (covers are encoded here at every change).
        static func appendBase64(_ input: [UInt8], to output: inout [UInt8]) {
            var index = 0
            while index + 3 <= input.count {
                let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                output.append(alphabet[Int(value >> 18)])
                output.append(alphabet[Int(value >> 12 & 63)])
                output.append(alphabet[Int(value >> 6 & 63)])
                output.append(alphabet[Int(value & 63)])
                index += 3
            }
            let rest = input.count - index
            guard rest > 0 else { return }
            let value = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
            output += [alphabet[Int(value >> 18)], alphabet[Int(value >> 12 & 63)]]
            output += rest == 2 ? [alphabet[Int(value >> 6 & 63)], UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]
        }

        /// Four characters as the big-endian hex of their bytes (`ssnc` is `73736e63`).
        static func hex(_ code: String) -> String { TextFormatting.hex(code.utf8.prefix(4)) }
    }

    /// The items an event writes.
    public static func items(for event: NowPlayingEvent, state: NowPlayingState) -> [Item] {
        switch event {
        case .began(let sender, _):
            // What shairport-sync sends at ANNOUNCE and SETUP, in its order.
            var items: [Item] = sender.clientName.map { [.ssnc("snam", $0)] } ?? []
            if let agent = sender.userAgent { items.append(.ssnc("snua", agent)) }
            if let remote = sender.activeRemote { items.append(.ssnc("acre", remote)) }
            if let id = sender.dacpID { items.append(.ssnc("daid", id)) }
            if let address = sender.address { items.append(.ssnc("clip", address)) }
            if let address = sender.serverAddress { items.append(.ssnc("svip", address)) }
            if sender.kind == .video { items.append(.ssnc("pbeg")) }
            return items
        case .streamStarted:
            // shairport-sync's player applies the volume in force as it starts, and says so.
            return [.ssnc("abeg"), .ssnc("pbeg")] + volumeItems(state.volumeDecibels ?? 0)
        case .flushed:
            return [.ssnc("pfls", "0")]
        case .resumed:
            return [.ssnc("pffr"), .ssnc("prsm")]
        case .rate(let rate):
            // RAOP's PAUSE, AirPlay 2's rate anchors (a buffered stream resumes by anchor, never
            // by a packet), a video's pause and play.
            return rate == 0 ? [.ssnc("pfls", "0")] : [.ssnc("prsm")]
        case .progress(let start, let current, let end, _):
            return [.ssnc("prgr", "\(start)/\(current)/\(end)")]
        case .position:
            return []
        case .volume(let decibels):
            return volumeItems(decibels)
        case .metadata(let fields, let rtpTime):
            let stamp = rtpTime.map(String.init)
            return [.ssnc("mdst", stamp)] + fields.map { Item("core", $0.tag, $0.value) } + [.ssnc("mden", stamp)]
        case .artwork(_, let bytes, let rtpTime):
            let stamp = rtpTime.map(String.init)
            return [.ssnc("pcst", stamp), Item("ssnc", "PICT", bytes), .ssnc("pcen", stamp)]
        case .ended:
            return [.ssnc("pend"), .ssnc("aend")]
        case .commandPlist(let body):
            return [Item("ssnc", "copl", body)]
        case .pairingPIN, .senderCommands:
            return []
        }
    }

    /// `pvol`: the AirPlay volume, the attenuation applied (ours is the AirPlay dB itself) and
    /// the range it maps into; nothing on mute, as shairport-sync.
    static func volumeItems(_ decibels: Double) -> [Item] {
        guard decibels > -144 else { return [] }
        let volume = TextFormatting.fixed(decibels, places: 2)
        return [.ssnc("pvol", "\(volume),\(volume),-30.00,0.00")]
    }
}
