import Foundation

/// Media made at test time with ffmpeg and served over loopback by a small HTTP server.
///
/// Encoded as DESIGN.md prescribes: H.264 yuv420p with a keyframe every 2 s (so HLS segments are
/// really 2 s), AAC audio.
public final class TestMedia: @unchecked Sendable {
    /// The folder served.
    public let directory: String
    /// The port of the HTTP server on 127.0.0.1.
    public let port: Int
    private let server: ManagedProcess

    /// The file every request path is logged to.
    public var requestLog: String { directory + "/requests.log" }

    /// The paths requested so far.
    public var requests: [String] {
        ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Makes `seconds`-long media (`hls/index.m3u8`, `clip.mp4`, `tone.m4a`, `notmedia.txt`) and serves it;
    /// with `variants`, also `variants/master.m3u8` (320x180 `v0` and 640x360 `v1` H.264 variants),
    /// `groups/master.m3u8` (one video, English and French audio renditions) and `groups/shared.m3u8`
    /// (two variants sharing that video, with different audio groups).
    public init(seconds: Int = 8, variants: Bool = false) throws {
        try TestHost.require(["ffmpeg", "python3"])
        directory = Products.scratchDirectory("media")
        let ffmpeg = TestHost.which("ffmpeg")!
        let video = ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
                     "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                     "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k"]
        try FileManager.default.createDirectory(atPath: directory + "/hls", withIntermediateDirectories: true)
        var jobs: [[String]] = [
            ["-loglevel", "error", "-y"] + video + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", directory + "/hls/index.m3u8"],
            ["-loglevel", "error", "-y"] + video + ["-movflags", "+faststart", directory + "/clip.mp4"],
            ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", String(seconds),
             "-c:a", "aac", "-b:a", "64k", directory + "/tone.m4a"],
        ]
        if variants {
            try FileManager.default.createDirectory(atPath: directory + "/variants", withIntermediateDirectories: true)
            jobs.append(["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=640x360:rate=25", "-f", "lavfi",
                         "-i", "sine=frequency=440:sample_rate=44100", "-t", String(seconds),
                         "-filter_complex", "[0:v]split=2[big][s];[s]scale=320:180[small]",
                         "-map", "[small]", "-map", "[big]", "-map", "1:a", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast",
                         "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-b:v:0", "200k", "-b:v:1", "700k",
                         "-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                         "-master_pl_name", "master.m3u8", "-var_stream_map", "v:0,a:0 v:1,a:1",
                         directory + "/variants/v%v/index.m3u8"])
            // Separate audio renditions in English and French beside one video variant.
            try FileManager.default.createDirectory(atPath: directory + "/groups", withIntermediateDirectories: true)
            jobs.append(["-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-f", "lavfi",
                         "-i", "sine=frequency=440:sample_rate=44100", "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100",
                         "-t", String(seconds), "-map", "0:v", "-map", "1:a", "-map", "2:a", "-c:v", "libx264", "-preset", "ultrafast",
                         "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-c:a", "aac", "-b:a", "64k",
                         "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-master_pl_name", "master.m3u8",
                         "-var_stream_map", "a:0,agroup:aud,language:en,name:English,default:yes a:1,agroup:aud,language:fr,name:French v:0,agroup:aud",
                         directory + "/groups/s%v/index.m3u8"])
        }
        for job in jobs {
            let result = try runCommand(ffmpeg, job, timeout: 120)
            guard result.status == 0 else { throw TestHostError("ffmpeg failed: \(result.stderr)") }
        }
        try "this is not media\n".write(toFile: directory + "/notmedia.txt", atomically: true, encoding: .utf8)
        if variants {
            // Two variants sharing one video playlist, each with its own audio group: the
            // auxiliary-audio case, where the video must not be downloaded twice.
            try """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="stereo",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="sEnglish/index.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="hq",NAME="French HQ",LANGUAGE="fr",DEFAULT=YES,URI="sFrench/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=70400,RESOLUTION=320x180,CODECS="avc1.f4000c,mp4a.40.2",AUDIO="stereo"
                s2/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=270400,RESOLUTION=320x180,CODECS="avc1.f4000c,mp4a.40.2",AUDIO="hq"
                s2/index.m3u8

                """.write(toFile: directory + "/groups/shared.m3u8", atomically: true, encoding: .utf8)
        }
        // A live variant of the same stream: no ENDLIST, no playlist type, a sliding window.
        let vod = try String(contentsOfFile: directory + "/hls/index.m3u8", encoding: .utf8)
        let live = vod.split(separator: "\n").filter { !$0.hasPrefix("#EXT-X-ENDLIST") && !$0.hasPrefix("#EXT-X-PLAYLIST-TYPE") }
            .joined(separator: "\n") + "\n"
        try live.write(toFile: directory + "/hls/live.m3u8", atomically: true, encoding: .utf8)
        // Byte ranges, as real media servers have: seeking in a progressive MP4 needs them.
        let script = Products.repositoryRoot + "/tools/lib/range_server.py"
        let httpServer = try ManagedProcess(TestHost.which("python3")!, [script, directory],
                                            environment: ["RANGE_SERVER_LOG": directory + "/requests.log"],
                                            directory: directory, label: "media-http")
        var found: Int?
        poll(timeout: 10) {
            found = Int(httpServer.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            return found != nil
        }
        guard let found else { throw TestHostError("media HTTP server did not start: \(httpServer.stderr)") }
        server = httpServer
        port = found
    }

    /// The URL of a file under the served folder.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    deinit {
        server.stop(grace: 1)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// airplayd started on the root namespace's loopback without mDNS (no bus), on a free port.
public final class LocalDaemon: @unchecked Sendable {
    /// The process.
    public let process: ManagedProcess
    /// Its control port.
    public let port: Int

    /// Starts airplayd with headless sinks, extra flags and extra environment; waits for the port.
    /// Its system bus is none (so nothing is published through a real avahi-daemon) unless
    /// `environment` names one (a private bus of the test's).
    public init(extra: [String] = [], environment: [String: String] = [:]) throws {
        let directory = Products.scratchDirectory("daemon")
        process = try ManagedProcess(try Products.executable("airplayd"), [
            "--port", "0", "--state-dir", directory + "/state", "--log-level", "debug",
            "--video-sink", "fakesink sync=true", "--audio-output", "fakesink sync=true", "--name", "Video Box",
            // No PTP in the root namespace: joining its multicast group would reach the real network.
            "--ptp", "off",
        ] + extra, environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"].merging(environment) { $1 },
            directory: directory, label: "airplayd")
        guard process.waitForOutput("airplayd: ready", timeout: 20),
              let line = process.stderr.split(separator: "\n").first(where: { $0.contains("control port listening") }),
              let text = line.split(separator: "port=").last, let port = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw TestHostError("airplayd did not start: \(process.stderr)")
        }
        self.port = port
    }

    deinit { process.stop(grace: 2) }
}
