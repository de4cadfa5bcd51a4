import AirPlayMedia
internal import CGStreamer
import FoundationEssentials
import Glibc
import LinuxIO

/// Decodes any file GStreamer can read (WAV, FLAC, MP3, M4A/AAC, Ogg), or WAV or raw PCM on
/// standard input, to interleaved S16LE PCM at 44.1 kHz stereo, the format RAOP receivers
/// accept, as fast as it is pulled.
public final class GStreamerPCMSource: PCMSource, @unchecked Sendable {
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let sink: UnsafeMutablePointer<GstElement>
    private var pending = PendingSamples()
    private var finished = false
    /// The read end of standard input's pipe, which `fdsrc` does not close.
    private var ownedDescriptor: Int32 = -1
    /// The tags found while the file opened, and its duration.
    public private(set) var tags = TrackTags()

    private static let output = "audioconvert dithering=none ! audioresample "
        + "! audio/x-raw,format=S16LE,layout=interleaved,rate=44100,channels=2 ! appsink name=out sync=false max-buffers=64"

    /// Opens a file, starting `start` seconds in; throws when GStreamer cannot build the
    /// pipeline, the file does not decode, or it cannot seek there.
    public convenience init(path: String, start: Double = 0) throws(MediaError) {
        let escaped = path.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
        try self.init(launch: "filesrc location=\"\(escaped)\" ! decodebin ! " + Self.output, name: path, start: start)
    }

    /// Reads standard input: a WAV file (anything decodebin knows, in fact), or else raw S16LE
    /// 44.1 kHz stereo PCM. The first bytes tell which; they are passed on through a pipe.
    public static func standardInput() throws(MediaError) -> GStreamerPCMSource {
        var head = [UInt8](repeating: 0, count: 12)
        var got = 0
        while got < head.count {
            let count = head.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress! + got, 12 - got) }
            if count <= 0 { break }
            got += count
        }
        guard got > 0 else { throw MediaError(code: -8, domain: "airplay.source", message: "standard input is empty") }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw MediaError(code: -8, domain: "airplay.source", message: "cannot make a pipe") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let prefix = Array(head.prefix(got))
        DedicatedThread.start(name: "pcm-stdin") {
            // Copy what was peeked, then the rest of standard input, into the pipeline's pipe.
            var chunk = prefix
            repeat {
                var offset = 0
                while offset < chunk.count {
                    let written = chunk.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress! + offset, chunk.count - offset) }
                    if written <= 0 { Glibc.close(writeEnd); return }
                    offset += written
                }
                chunk = [UInt8](repeating: 0, count: 65536)
                let count = chunk.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress!, 65536) }
                chunk = count > 0 ? Array(chunk.prefix(count)) : []
            } while !chunk.isEmpty
            Glibc.close(writeEnd)
        }
        let isWAV = prefix.count >= 12 && prefix[0..<4].elementsEqual("RIFF".utf8) && prefix[8..<12].elementsEqual("WAVE".utf8)
        let decode = isWAV ? "decodebin" : "rawaudioparse use-sink-caps=false format=pcm pcm-format=s16le sample-rate=44100 num-channels=2"
        do {
            let source = try GStreamerPCMSource(launch: "fdsrc fd=\(readEnd) ! \(decode) ! " + output, name: "standard input", start: 0)
            source.ownedDescriptor = readEnd
            return source
        } catch {
            // Closing the read end ends the copier thread too (its writes fail).
            Glibc.close(readEnd)
            throw error
        }
    }

    private init(launch: String, name: String, start: Double) throws(MediaError) {
        GStreamerRuntime.initialize()
        let built = try GStreamerRuntime.launch(launch, named: ["out"], domain: "airplay.source")
        let (element, sink) = (built.pipeline, built.elements[0])
        pipeline = element
        self.sink = sink
        if gst_element_set_state(pipeline, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE {
            throw MediaError(code: -8, domain: "airplay.source", message: "\(name) cannot be read")
        }
        // Wait for the preroll: a file that is not audio fails here instead of mid-stream.
        var state = GST_STATE_NULL
        let result = gst_element_get_state(pipeline, &state, nil, 10_000_000_000)
        guard result != GST_STATE_CHANGE_FAILURE, state == GST_STATE_PAUSED else {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            throw MediaError(code: -8, domain: "airplay.source", message: "\(name) is not audio GStreamer can decode")
        }
        tags = Self.readTags(pipeline)
        if start > 0 {
            guard cairplay_seek(pipeline, gint64(min(start, PlaybinPlayer.furthestSeek) * 1e9)) != 0 else {
                gst_element_set_state(pipeline, GST_STATE_NULL)
                throw MediaError(code: -8, domain: "airplay.source", message: "\(name) cannot start at \(start) s")
            }
            _ = gst_element_get_state(pipeline, &state, nil, 10_000_000_000)
        }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
    }

    private static func readTags(_ pipeline: UnsafeMutablePointer<GstElement>) -> TrackTags {
        var title: UnsafeMutablePointer<gchar>?, artist: UnsafeMutablePointer<gchar>?, album: UnsafeMutablePointer<gchar>?
        var genre: UnsafeMutablePointer<gchar>?, imageType: UnsafeMutablePointer<gchar>?
        var image: UnsafeMutablePointer<guint8>?
        var imageSize: gsize = 0
        cairplay_collect_tags(pipeline, &title, &artist, &album, &genre, &image, &imageSize, &imageType)
        func take(_ pointer: UnsafeMutablePointer<gchar>?) -> String? {
            guard let pointer else { return nil }
            defer { g_free(pointer) }
            return String(cString: pointer)
        }
        var tags = TrackTags()
        tags.title = take(title)
        tags.artist = take(artist)
        tags.album = take(album)
        tags.genre = take(genre)
        let type = take(imageType)
        if let image {
            if type == "image/jpeg" || type == "image/png" {
                tags.artwork = Array(UnsafeBufferPointer(start: image, count: Int(imageSize)))
                tags.artworkType = type
            }
            g_free(image)
        }
        let nanoseconds = cairplay_duration(pipeline)
        tags.duration = nanoseconds > 0 ? Double(nanoseconds) / 1e9 : nil
        return tags
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        if ownedDescriptor >= 0 { Glibc.close(ownedDescriptor) }
        gst_object_unref(UnsafeMutableRawPointer(sink))
        gst_object_unref(UnsafeMutableRawPointer(pipeline))
    }

    /// The next `frames` stereo frames; fewer at the end of the file, empty after it.
    public func read(frames: Int) -> [Int32] {
        while pending.count < frames * 2 && !finished {
            var chunk = [Int16](repeating: 0, count: 131_072)
            let count = chunk.withUnsafeMutableBytes { raw in
                cairplay_pull_bytes(sink, raw.baseAddress, gsize(raw.count), 5_000_000_000)
            }
            if count <= 0 {
                finished = true
            } else {
                pending.append(contentsOf: chunk.prefix(Int(count) / 2).map(Int32.init))
            }
        }
        return pending.take(frames * 2)
    }
}
