import AirPlayHLS
import AirPlayReceiver

/// The gateway's decisions that need no I/O: which variant starts, how rendition choices
/// rewrite a master playlist, where a transport stream's tables end.
extension HLSGateway {
    /// The variant to start with: the richest allowed one whose peak bit rate fits 80 % of the
    /// measured bandwidth, else the leanest allowed one; without a measurement, the richest.
    static func startVariant(_ master: MasterPlaylist, allowed: [Int], bandwidth: Double?) -> Int? {
        let candidates = allowed.map { (index: $0, rate: master.variants[$0].bandwidth) }
        guard let leanest = candidates.min(by: { $0.rate < $1.rate }) else { return nil }
        guard let bandwidth else { return candidates.max { $0.rate < $1.rate }?.index }
        return candidates.filter { Double($0.rate) <= 0.8 * bandwidth }.max { $0.rate < $1.rate }?.index ?? leanest.index
    }

    /// Applies the sender's rendition choices: in each group the chosen rendition becomes the
    /// only one (DEFAULT and AUTOSELECT), so the player plays or shows it; subtitles chosen
    /// "off" are removed with the variants' SUBTITLES attribute.
    static func apply(_ selection: [String: HLSRenditionChoice], renditions: [Rendition], variants: [Variant]) -> ([Rendition], [Variant]) {
        var renditions = renditions, variants = variants
        for (type, choice) in selection {
            if type == "SUBTITLES", choice.language == nil, choice.name == nil {
                renditions.removeAll { $0.type == "SUBTITLES" }
                variants = variants.map { variant in
                    var attributes = variant.attributes
                    attributes["SUBTITLES"] = nil
                    return Variant(attributes: attributes, uri: variant.uri)
                }
                continue
            }
            let groups = Set(renditions.filter { $0.type == type }.map(\.groupID))
            for group in groups where renditions.contains(where: { $0.type == type && $0.groupID == group && choice.matches($0) }) {
                renditions = renditions.compactMap { rendition in
                    guard rendition.type == type, rendition.groupID == group else { return rendition }
                    guard choice.matches(rendition) else { return nil }
                    var attributes = rendition.attributes
                    attributes["DEFAULT"] = "YES"
                    attributes["AUTOSELECT"] = "YES"
                    return Rendition(attributes: attributes)
                }
            }
        }
        return (renditions, variants)
    }

    /// The transport stream packets before the first PES start: PAT, PMT, SDT and the like.
    static func leadingPSI(_ bytes: [UInt8]) -> [UInt8] {
        var end = 0
        while end + 188 <= bytes.count, bytes[end] == 0x47 {
            let start = bytes[end + 1] & 0x40 != 0
            let control = (bytes[end + 3] >> 4) & 0x3
            var payload = end + 4
            if control & 0x2 != 0 { payload += 1 + Int(bytes[end + 4]) }
            // A PES starts with 00 00 01; sections start with a pointer field.
            if start, payload + 3 <= end + 188, bytes[payload] == 0, bytes[payload + 1] == 0, bytes[payload + 2] == 1 { break }
            if !start { break }
            end += 188
        }
        return Array(bytes.prefix(end))
    }
}
