import AirPlayMedia
internal import CFLAC
import Foundation

/// A FLAC file (mono or stereo, 16 or 24 bits, 44.1 or 48 kHz) decoded with libFLAC straight
/// into the PCM receivers take: no GStreamer pipeline, no conversion, no thread. What most music
/// collections hold costs `airplay stream` a fraction of what a decodebin pipeline does (pyatv
/// decodes with miniaudio the same way). RAOP and realtime streams are CD audio only, so a
/// hi-res file is opened with `allowHiRes` only for AirPlay 2's buffered mode; any other file
/// goes through GStreamer.
///
/// `@unchecked Sendable`: `read` is called from one thread at a time (the streamer's); the
/// decoder and the pending samples are touched only there and in `init`/`deinit`.
public final class FLACFileSource: PCMSource, @unchecked Sendable {
    /// The track's tags (Vorbis comments, the front cover) and duration.
    public private(set) var tags = TrackTags()

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    /// The file's format, as stereo (20-bit files are carried in 24 bits).
    public private(set) var format = PCMFormat.cd
    /// Decoded interleaved stereo samples not read yet.
    private var pending = PendingSamples()
    private var streamInfo: (rate: UInt32, channels: UInt32, bits: UInt32, total: UInt64)?
    /// Set by the write callback when a frame is not what the stream info promised.
    private var failure: String?

    /// True when the file starts with FLAC's `fLaC` marker.
    public static func isFLAC(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 4)) == Data("fLaC".utf8)
    }

    /// Opens a FLAC file, `start` seconds in. Throws when it is not FLAC, not mono or stereo at
    /// 44.1 kHz 16-bit (or, with `allowHiRes`, at 44.1 or 48 kHz and 16, 20 or 24 bits: GStreamer
    /// converts the others), or cannot seek there.
    public init(path: String, start: Double = 0, allowHiRes: Bool = false) throws(MediaError) {
        guard let decoder = FLAC__stream_decoder_new() else { throw Self.error("cannot create a FLAC decoder") }
        self.decoder = decoder
        FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_VORBIS_COMMENT)
        FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_PICTURE)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = FLAC__stream_decoder_init_file(decoder, path, { _, frame, buffer, context in
            guard let frame, let buffer, let context else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
            return Unmanaged<FLACFileSource>.fromOpaque(context).takeUnretainedValue().take(frame.pointee, buffer)
        }, { _, metadata, context in
            guard let metadata, let context else { return }
            Unmanaged<FLACFileSource>.fromOpaque(context).takeUnretainedValue().note(metadata.pointee)
        }, { _, _, _ in }, context)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else { throw Self.error("\(path) cannot be opened as FLAC") }
        guard FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0, let info = streamInfo else {
            throw Self.error("\(path) has no FLAC stream info")
        }
        let played = allowHiRes ? [44100, 48000].contains(info.rate) && [16, 20, 24].contains(info.bits)
                                : info.rate == 44100 && info.bits == 16
        guard played, (1...2).contains(info.channels) else {
            throw Self.error("\(path) is \(info.rate) Hz, \(info.bits)-bit, \(info.channels) channels: not played as it is")
        }
        format = PCMFormat(sampleRate: Int(info.rate), channels: 2, bitsPerSample: info.bits == 16 ? 16 : 24)
        if info.total > 0 { tags.duration = Double(info.total) / Double(info.rate) }
        if start > 0 {
            guard FLAC__stream_decoder_seek_absolute(decoder, UInt64(start * Double(info.rate))) != 0 else {
                throw Self.error("\(path) cannot seek to \(start) s")
            }
        }
    }

    deinit {
        FLAC__stream_decoder_finish(decoder)
        FLAC__stream_decoder_delete(decoder)
    }

    /// Up to `frames` stereo frames; fewer only at the end of the file, empty after it.
    public func read(frames: Int) -> [Int32] {
        let wanted = frames * 2
        while pending.count < wanted, failure == nil {
            let state = FLAC__stream_decoder_get_state(decoder)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM || state.rawValue >= FLAC__STREAM_DECODER_OGG_ERROR.rawValue { break }
            if FLAC__stream_decoder_process_single(decoder) == 0 { break }
        }
        return pending.take(wanted)
    }

    // MARK: libFLAC's callbacks

    /// A decoded frame: its samples appended, interleaved, as stereo.
    private func take(_ frame: FLAC__Frame, _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>) -> FLAC__StreamDecoderWriteStatus {
        let header = frame.header
        guard header.bits_per_sample == streamInfo?.bits, header.channels >= 1, header.channels <= 2,
              let left = buffer[0], let right = header.channels == 2 ? buffer[1] : buffer[0] else {
            failure = "a FLAC frame changed format mid-stream"
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
        // 20-bit samples are carried in 24 bits, as ALAC decoders write them.
        let widen = Int32(header.bits_per_sample == 20 ? 4 : 0)
        let count = Int(header.blocksize)
        pending.append(count: 2 * count) { out in
            for index in 0..<count {
                out[2 * index] = left[index] << widen
                out[2 * index + 1] = right[index] << widen
            }
        }
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    /// Stream info, Vorbis comments (TITLE, ARTIST, ALBUM, GENRE) and the front cover.
    private func note(_ metadata: FLAC__StreamMetadata) {
        switch metadata.type {
        case FLAC__METADATA_TYPE_STREAMINFO:
            let info = metadata.data.stream_info
            streamInfo = (info.sample_rate, info.channels, info.bits_per_sample, info.total_samples)
        case FLAC__METADATA_TYPE_VORBIS_COMMENT:
            let comments = metadata.data.vorbis_comment
            for index in 0..<Int(comments.num_comments) {
                let entry = comments.comments[index]
                guard let bytes = entry.entry else { continue }
                let text = String(decoding: UnsafeBufferPointer(start: bytes, count: Int(entry.length)), as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { continue }
                let value = String(text[text.index(after: equals)...])
                switch text[..<equals].uppercased() {
                case "TITLE": tags.title = tags.title ?? value
                case "ARTIST": tags.artist = tags.artist ?? value
                case "ALBUM": tags.album = tags.album ?? value
                case "GENRE": tags.genre = tags.genre ?? value
                default: break
                }
            }
        case FLAC__METADATA_TYPE_PICTURE:
            let picture = metadata.data.picture
            // The front cover (type 3) wins over any other picture.
            guard tags.artwork == nil || picture.type == FLAC__STREAM_METADATA_PICTURE_TYPE_FRONT_COVER,
                  let data = picture.data, let mime = picture.mime_type else { return }
            tags.artwork = Array(UnsafeBufferPointer(start: data, count: Int(picture.data_length)))
            tags.artworkType = String(cString: mime)
        default:
            break
        }
    }

    private static func error(_ message: String) -> MediaError { MediaError(code: -1, domain: "airplay.flac", message: message) }
}
