import AirPlayHLS
import AirPlayMedia

/// What media the box is handed: HLS playlists (through the gateway, from any server a sender
/// names), variant qualifiers and attribute lists, and ALAC packets as RAOP and AirPlay 2 carry them.
enum MediaTargets {
    static let all: [FuzzTarget] = [hlsPlaylist, hlsAttributes, variantQualifier, alac]

    /// Master and media playlists. A playlist written back out reads back to the same text.
    static let hlsPlaylist = FuzzTarget("hls-playlist", "HLS master and media playlists") { bytes in
        var input = FuzzInput(bytes)
        let text = input.text()
        guard let playlist = try? PlaylistParser.parse(text) else { return }
        switch playlist {
        case .master(let master):
            _ = VariantDescription.all(master)
            _ = PlaylistProtection.refusal(master: master)
            guard let again = try? PlaylistParser.parseMaster(master.text) else { preconditionFailure("a written master playlist does not parse") }
            precondition(again.text == master.text, "a master playlist's text changed on a round trip")
        case .media(let media):
            guard let again = try? PlaylistParser.parseMedia(media.text) else { preconditionFailure("a written media playlist does not parse") }
            precondition(again.text == media.text, "a media playlist's text changed on a round trip")
            _ = PlaylistProtection.refusal(media: media)
            // A condensed playlist (YouTube's) expands or is refused; what it expands to is a
            // playlist that prints and parses back.
            if let expanded = try? CondensedPlaylist.parseMedia(text) {
                precondition((try? PlaylistParser.parseMedia(expanded.text)) != nil, "an expanded playlist does not parse")
            }
        }
    }

    /// Attribute lists (`#EXT-X-STREAM-INF:...`), resolutions and byte ranges.
    static let hlsAttributes = FuzzTarget("hls-attributes", "HLS attribute lists, RESOLUTION and BYTERANGE values") { bytes in
        var input = FuzzInput(bytes)
        let text = input.text()
        _ = try? AttributeList(parsing: text[...])
        _ = Resolution(text)
        _ = ByteRange(text)?.closedRange
    }

    /// `--prefer` variant qualifiers. A qualifier's canonical text reads back as the same qualifier.
    static let variantQualifier = FuzzTarget("variant-qualifier", "variant qualifier expressions (--prefer)") { bytes in
        var input = FuzzInput(bytes)
        guard let qualifier = try? VariantQualifier(parsing: input.text()) else { return }
        precondition((try? VariantQualifier(parsing: qualifier.description)) == qualifier, "\(qualifier) does not read back")
    }

    /// ALAC packets with a stream configuration (the SDP's fmtp) taken from the input's first
    /// bytes; the decoder never writes more samples than a frame holds.
    static let alac = FuzzTarget("alac", "ALAC packets with their fmtp") { bytes in
        var input = FuzzInput(bytes)
        let frameLength = [352, 4096, 1, 16384][Int(input.byte() & 3)]
        let depth = [16, 20, 24, 16][Int(input.byte() & 3)]
        let channels = Int(input.byte() & 1) + 1
        let fmtp = [frameLength, 0, depth, Int(input.byte()), Int(input.byte()), Int(input.byte() & 31), channels, 255, 0, 0, 44100]
        guard let decoder = try? ALACDecoder(configuration: .init(fmtp: fmtp)) else { return }
        for packet in input.pieces(2) {
            guard let samples = try? decoder.decode(packet) else { continue }
            precondition(samples.count <= frameLength * channels, "\(samples.count) samples from a \(frameLength)-frame packet")
        }
    }
}
