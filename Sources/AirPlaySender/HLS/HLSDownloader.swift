import AirPlayHLS
import AirPlayHTTP
import Foundation

/// An offline copy of an HLS presentation, as the seeds' download configurations describe: a
/// primary selection (a variant chosen by a qualifier, with audio and subtitle renditions by
/// language) and auxiliary audio (the renditions of another variant, without downloading video
/// twice when the audio is a separate rendition).
///
/// Layout under the output folder: `master.m3u8`; `video/` (the primary variant); `audio/<n>/`
/// and `subtitles/<n>/` (renditions); `aux/` (an auxiliary variant whose audio is not separate);
/// `keys/k<n>.key`. Every playlist is rewritten to these local paths; segments keep their
/// encryption and the keys are stored beside them. Files are written as `.part` and renamed
/// when complete, so a second run skips what is finished and resumes a partial file with a
/// Range request.
public final class HLSDownloader: @unchecked Sendable {
    /// What to download.
    public struct Selection: Sendable {
        /// Picks the primary variant (the best match; nil: the best variant).
        public var primary: VariantQualifier?
        /// Audio languages to keep from the primary variant's audio group (empty: the default rendition).
        public var audioLanguages: [String]
        /// Subtitle languages to keep (empty: none).
        public var subtitleLanguages: [String]
        /// Picks an auxiliary variant whose audio is added (nil: none).
        public var auxiliaryAudio: VariantQualifier?

        /// A selection from its parts.
        public init(primary: VariantQualifier?, audioLanguages: [String], subtitleLanguages: [String], auxiliaryAudio: VariantQualifier?) {
            self.primary = primary
            self.audioLanguages = audioLanguages
            self.subtitleLanguages = subtitleLanguages
            self.auxiliaryAudio = auxiliaryAudio
        }
    }

    /// Progress, reported after every file.
    public struct Progress: Sendable {
        /// Files (segments, maps, keys) done and in all.
        public var filesDone: Int
        /// Files in all.
        public var files: Int
        /// Bytes fetched in this run.
        public var bytes: Int
        /// Files skipped because an earlier run finished them.
        public var skipped: Int
        /// Seconds since this run started.
        public var elapsed: Double
    }

    private struct Job {
        var url: String
        var byteRange: ByteRange?
        var path: String
    }

    private let options: HTTPRequestOptions
    private let keyProvider: KeyProvider?
    private let output: URL
    private var jobs: [Job] = []
    private var keyURIs: [String] = []

    /// A downloader writing into `output`, fetching with `options`; `keyProvider` resolves
    /// custom-scheme key URIs.
    public init(output: URL, options: HTTPRequestOptions, keyProvider: KeyProvider?) {
        self.output = output
        self.options = options
        self.keyProvider = keyProvider
    }

    /// Downloads the selection of the master playlist at `url`; returns the local master's path.
    public func download(_ url: URL, selection: Selection, progress: @escaping @Sendable (Progress) -> Void) async throws(SenderError) -> URL {
        let (text, base) = try await fetchText(url.absoluteString)
        let master: MasterPlaylist
        do {
            master = try PlaylistParser.parseMaster(text)
        } catch {
            throw SenderError(.badInput, "\(url.absoluteString): \(error)")
        }
        let variants = VariantDescription.all(master)
        guard let primary = VariantQualifier.best(variants, matching: selection.primary) else {
            throw SenderError(.badInput, "no variant matches \(selection.primary?.description ?? "")")
        }
        var local = MasterPlaylist()
        local.version = master.version
        local.independentSegments = master.independentSegments
        // Renditions of the primary variant's groups, filtered by language.
        var renditionPaths: [String: String] = [:]   // absolute origin URL → local folder
        func keep(_ rendition: Rendition, folder: String) -> Rendition {
            var attributes = rendition.attributes
            if let uri = rendition.uri {
                let origin = absolute(uri, base)
                let path = renditionPaths[origin] ?? folder
                renditionPaths[origin] = path
                attributes["URI"] = "\(path)/index.m3u8"
            }
            return Rendition(attributes: attributes)
        }
        let audio = master.renditions.filter { $0.type == "AUDIO" && $0.groupID == primary.variant.audioGroup }
        let chosenAudio: [Rendition] = selection.audioLanguages.isEmpty
            ? Array(audio.filter { $0.isDefault }.prefix(1))
            : audio.filter { rendition in selection.audioLanguages.contains { $0.lowercased() == rendition.language?.lowercased() } }
        local.renditions += chosenAudio.enumerated().map { keep($0.element, folder: "audio/\($0.offset)") }
        let subtitles = master.renditions.filter { rendition in
            rendition.type == "SUBTITLES" && rendition.groupID == primary.variant.subtitlesGroup
                && selection.subtitleLanguages.contains { $0.lowercased() == rendition.language?.lowercased() }
        }
        local.renditions += subtitles.enumerated().map { keep($0.element, folder: "subtitles/\($0.offset)") }
        var primaryAttributes = primary.variant.attributes
        if chosenAudio.isEmpty { primaryAttributes["AUDIO"] = nil }
        if subtitles.isEmpty { primaryAttributes["SUBTITLES"] = nil }
        primaryAttributes["CLOSED-CAPTIONS"] = nil
        local.variants.append(Variant(attributes: primaryAttributes, uri: "video/index.m3u8"))
        var playlists: [(origin: String, folder: String)] = [(absolute(primary.variant.uri, base), "video")]
        playlists += renditionPaths.map { ($0.key, $0.value) }

        // Auxiliary audio: the chosen variant's audio renditions join as their own group; the
        // variant is listed again with the primary's video and that group, so its video is not
        // downloaded twice. Audio muxed into the variant means a second copy of it, in aux/.
        if let auxiliary = selection.auxiliaryAudio {
            guard let chosen = VariantQualifier.best(variants, matching: auxiliary), chosen.index != primary.index else {
                throw SenderError(.badInput, "no other variant matches the auxiliary audio \(auxiliary)")
            }
            let auxAudio = master.renditions.filter { $0.type == "AUDIO" && $0.groupID == chosen.variant.audioGroup && $0.uri != nil }
            let picked = selection.audioLanguages.isEmpty ? auxAudio
                : auxAudio.filter { rendition in selection.audioLanguages.contains { $0.lowercased() == rendition.language?.lowercased() } }
            if picked.isEmpty {
                var attributes = chosen.variant.attributes
                attributes["AUDIO"] = nil
                attributes["SUBTITLES"] = nil
                local.variants.append(Variant(attributes: attributes, uri: "aux/index.m3u8"))
                playlists.append((absolute(chosen.variant.uri, base), "aux"))
            } else {
                let group = "aux-" + (chosen.variant.audioGroup ?? "audio")
                for (offset, rendition) in picked.enumerated() {
                    var attributes = keep(rendition, folder: "audio/aux\(offset)").attributes
                    attributes["GROUP-ID"] = group
                    local.renditions.append(Rendition(attributes: attributes))
                }
                playlists += picked.enumerated().map { (absolute($0.element.uri!, base), "audio/aux\($0.offset)") }
                var attributes = primaryAttributes
                attributes["AUDIO"] = group
                let codecs = primary.variant.codecs.filter { !$0.hasPrefix("mp4a") && !$0.hasPrefix("ac-3") && !$0.hasPrefix("ec-3") }
                    + chosen.variant.codecs.filter { $0.hasPrefix("mp4a") || $0.hasPrefix("ac-3") || $0.hasPrefix("ec-3") || $0.hasPrefix("alac") }
                attributes["CODECS"] = codecs.joined(separator: ",")
                attributes["BANDWIDTH"] = String(primary.peakBitRate.addingReportingOverflow(chosen.peakBitRate / 10).partialValue.magnitude)
                local.variants.append(Variant(attributes: attributes, uri: "video/index.m3u8"))
            }
        }

        // Each media playlist: fetched, its files queued, written with local paths.
        var seen = Set<String>()
        for (origin, folder) in playlists where seen.insert(folder).inserted {
            try await prepare(origin, folder: folder)
        }
        try write(local.text, to: "master.m3u8")
        try await run(progress: progress)
        return output.appendingPathComponent("master.m3u8")
    }

    private func prepare(_ origin: String, folder: String) async throws(SenderError) {
        let (text, base) = try await fetchText(origin)
        var media: MediaPlaylist
        do {
            media = try PlaylistParser.parseMedia(text)
        } catch {
            throw SenderError(.badInput, "\(origin): \(error)")
        }
        guard media.endList || media.playlistType == "VOD" else {
            throw SenderError(.badInput, "\(origin) is live (no EXT-X-ENDLIST): only finished presentations can be downloaded")
        }
        var maps: [String: String] = [:]
        let original = media.segments
        for index in media.segments.indices {
            var segment = media.segments[index]
            let source = absolute(segment.uri, base)
            let name = "\(folder)/s\(index).\(Self.fileExtension(source))"
            jobs.append(Job(url: source, byteRange: segment.byteRange.map { range in
                // An open range continues after the previous segment's range of the same file.
                ByteRange(length: range.length, offset: range.offset ?? Self.previousEnd(original, before: index))
            }, path: name))
            segment.uri = String(name.dropFirst(folder.count + 1))
            segment.byteRange = nil
            if var map = segment.map, let uri = map["URI"] {
                let mapSource = absolute(uri, base) + (map["BYTERANGE"].map { "#\($0)" } ?? "")
                if maps[mapSource] == nil {
                    let mapName = "\(folder)/init\(maps.count).\(Self.fileExtension(absolute(uri, base)))"
                    maps[mapSource] = mapName
                    let range = map["BYTERANGE"].flatMap { ByteRange($0) }.map { ByteRange(length: $0.length, offset: $0.offset ?? 0) }
                    jobs.append(Job(url: absolute(uri, base), byteRange: range, path: mapName))
                }
                map["URI"] = String(maps[mapSource]!.dropFirst(folder.count + 1))
                map["BYTERANGE"] = nil
                segment.map = map
            }
            segment.keys = segment.keys.map { key in
                guard let uri = key["URI"], (key["KEYFORMAT"] ?? "identity") == "identity" else { return key }
                let source = HTTPClient.isFetchable(absolute(uri, base)) ? absolute(uri, base) : uri
                var key = key
                let index = keyURIs.firstIndex(of: source) ?? { keyURIs.append(source); return keyURIs.count - 1 }()
                key["URI"] = "../keys/k\(index).key"
                return key
            }
            media.segments[index] = segment
        }
        try write(media.text, to: "\(folder)/index.m3u8")
    }

    private func run(progress: @escaping @Sendable (Progress) -> Void) async throws(SenderError) {
        let started = Date()
        var report = Progress(filesDone: 0, files: jobs.count + keyURIs.count, bytes: 0, skipped: 0, elapsed: 0)
        for (index, uri) in keyURIs.enumerated() {
            let path = "keys/k\(index).key"
            if FileManager.default.fileExists(atPath: output.appendingPathComponent(path).path) {
                report.skipped += 1
            } else {
                let key: [UInt8]
                if HTTPClient.isFetchable(uri) {
                    var keyOptions = options
                    keyOptions.maximumBytes = 1024
                    let result: HTTPResult
                    do { result = try await HTTPClient.get(uri, options: keyOptions) } catch { throw SenderError(.notFound, error.message) }
                    guard (200..<300).contains(result.status) else {
                        throw SenderError(.refused(status: result.status), "key \(uri) answered \(result.status)")
                    }
                    key = result.body
                } else {
                    guard let keyProvider else { throw SenderError(.badInput, "key \(uri) needs --key-command") }
                    switch await keyProvider(uri) {
                    case .success(let bytes): key = bytes
                    case .failure(let error): throw error
                    }
                }
                guard key.count == 16 else { throw SenderError(.badInput, "key \(uri) is \(key.count) bytes, not 16") }
                try write(Data(key), to: path)
            }
            report.filesDone += 1
            report.elapsed = Date().timeIntervalSince(started)
            progress(report)
        }
        for job in jobs {
            let final = output.appendingPathComponent(job.path)
            if FileManager.default.fileExists(atPath: final.path) {
                report.skipped += 1
            } else {
                report.bytes += try fetch(job, to: final)
            }
            report.filesDone += 1
            report.elapsed = Date().timeIntervalSince(started)
            progress(report)
        }
    }

    /// One file: into `.part` (resumed from its size when an earlier run left one), then renamed.
    private func fetch(_ job: Job, to final: URL) throws(SenderError) -> Int {
        let part = final.path + ".part"
        let existing = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0
        let result = try transfer(job, part: part, existing: existing)
        guard (200..<300).contains(result.status) else {
            throw SenderError(result.status == 401 || result.status == 403 ? .refused(status: result.status) : .notFound,
                              "\(job.url) answered \(result.status)")
        }
        // A server that ignored the Range header sent the whole file again: keep just that.
        if existing > 0, result.status == 200, job.byteRange == nil {
            let data = FileManager.default.contents(atPath: part) ?? Data()
            try write(data.suffix(result.written), to: job.path + ".part")
        }
        do {
            try FileManager.default.moveItem(atPath: part, toPath: final.path)
        } catch {
            throw SenderError(.badInput, "cannot finish \(final.path): \(error)")
        }
        return result.written
    }

    /// The GET itself: a byte range (which must come back as 206), or the file from `existing`
    /// on, starting over when the server cannot resume.
    private func transfer(_ job: Job, part: String, existing: Int) throws(SenderError) -> (status: Int, written: Int) {
        var fileOptions = options
        fileOptions.timeout = 120
        if let range = job.byteRange {
            guard let bytes = range.closedRange, bytes.lowerBound <= Int.max - existing else {
                throw SenderError(.badInput, "\(job.url): byte range \(range) is empty or too large")
            }
            let first = bytes.lowerBound + existing
            guard first <= bytes.upperBound else { return (206, 0) }
            let result: (status: Int, written: Int)
            do {
                result = try HTTPClient.download(job.url, to: part, resumeFrom: existing, range: first...bytes.upperBound, options: fileOptions)
            } catch {
                throw SenderError(.connectionLost, error.message)
            }
            if result.status == 200 {
                // The server ignored Range and sent the whole resource, not the segment.
                try? FileManager.default.removeItem(atPath: part)
                throw SenderError(.badInput, "\(job.url) ignores byte ranges; its byte-range segments cannot be downloaded")
            }
            return result
        }
        do {
            return try HTTPClient.download(job.url, to: part, resumeFrom: existing, options: fileOptions)
        } catch {
            guard existing > 0, error.rangeRefused else { throw SenderError(.connectionLost, error.message) }
        }
        // The server cannot resume: this file starts again from its first byte.
        try? FileManager.default.removeItem(atPath: part)
        do {
            return try HTTPClient.download(job.url, to: part, resumeFrom: 0, options: fileOptions)
        } catch {
            throw SenderError(.connectionLost, error.message)
        }
    }

    private func fetchText(_ url: String) async throws(SenderError) -> (String, String) {
        guard let location = URL(string: url) else { throw SenderError(.badInput, "\(url) is not a URL") }
        let (text, final) = try await HTTPFetcher(options: options).playlist(location)
        return (text, final.absoluteString)
    }

    private func write(_ text: String, to path: String) throws(SenderError) { try write(Data(text.utf8), to: path) }

    private func write(_ data: Data, to path: String) throws(SenderError) {
        let url = output.appendingPathComponent(path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
        } catch {
            throw SenderError(.badInput, "cannot write \(url.path): \(error)")
        }
    }

    private func absolute(_ uri: String, _ base: String) -> String { PlaylistURI.resolve(uri, against: base) }

    static func fileExtension(_ url: String) -> String {
        let ext = (URLComponents(string: url)?.path ?? url).split(separator: ".").last.map(String.init) ?? "bin"
        return ext.count <= 5 && ext.allSatisfy({ $0.isLetter || $0.isNumber }) ? ext : "bin"
    }

    /// Where the previous segment's byte range of the same resource ended.
    static func previousEnd(_ segments: [Segment], before index: Int) -> Int {
        var end = 0
        for segment in segments[..<index] where segment.uri == segments[index].uri {
            if let range = segment.byteRange { end = (range.offset ?? end).addingReportingOverflow(range.length).partialValue }
        }
        return max(0, end)
    }
}
